"""EventBus: bounded, drop-oldest, never blocks the producer, counts sink errors."""

from __future__ import annotations

import threading
import time

from streamwatch.events.bus import EventBus


def test_delivers_in_order_to_every_sink():
    bus = EventBus(capacity=100)
    a, b = [], []
    bus.add_sink(a.append)
    bus.add_sink(b.append)
    for i in range(50):
        bus.publish(i)
    assert bus.flush(5)
    assert a == b == list(range(50))
    assert bus.stats().delivered == 50
    bus.close()


def test_blocked_sink_never_blocks_publish_and_drops_oldest():
    release = threading.Event()
    got: list[int] = []

    def slow(x: int) -> None:
        release.wait(10)
        got.append(x)

    bus = EventBus(capacity=10)
    bus.add_sink(slow)
    t0 = time.monotonic()
    for i in range(1000):
        bus.publish(i)
    publish_s = time.monotonic() - t0
    assert publish_s < 2.0, "publish must not wait for a blocked sink"
    stats = bus.stats()
    assert stats.published == 1000 and stats.queued == 10
    assert stats.dropped >= 989
    release.set()
    assert bus.flush(5)
    assert got[-10:] == list(range(990, 1000)), "the newest events survive"
    bus.close()


def test_raising_sink_is_counted_and_others_still_served():
    bus = EventBus()
    got: list[int] = []

    def bad(_x: int) -> None:
        raise RuntimeError("sink broke")

    bus.add_sink(bad)
    bus.add_sink(got.append)
    for i in range(5):
        bus.publish(i)
    assert bus.flush(5)
    assert got == [0, 1, 2, 3, 4]
    assert bus.stats().sink_errors == 5
    bus.close()


def test_close_delivers_what_was_queued():
    bus = EventBus()
    got: list[int] = []
    bus.add_sink(lambda x: (time.sleep(0.001), got.append(x)))
    for i in range(200):
        bus.publish(i)
    bus.close(timeout=5)
    assert got == list(range(200))
    bus.publish(1)
    assert bus.stats().dropped == 1  # after close, counted as dropped, not raised
