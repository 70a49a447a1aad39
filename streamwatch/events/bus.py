"""A bounded, non-blocking hand-off from a producer thread to sinks.

Spark calls a ``StreamingQueryListener`` on its own listener thread; whatever the listener
does there delays every other listener of the application. :class:`EventBus` lets the
listener hand an event over in O(1) without ever blocking or raising: events go into a
bounded deque (the oldest is dropped and counted when it is full) and one daemon dispatcher
thread delivers them, in order, to each sink. A sink that raises is counted and skipped; a
sink that blocks only delays the dispatcher, never the producer.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Sink = Callable[[Any], None]


@dataclass(frozen=True, slots=True)
class EventBusStats:
    """Counters since the bus was created: events ``published``, ``delivered`` (to all sinks),
    ``dropped`` (oldest-first, when the queue was full), ``sink_errors`` (exceptions raised by
    sinks, swallowed), and the current ``queued`` length."""

    published: int
    delivered: int
    dropped: int
    sink_errors: int
    queued: int


class EventBus:
    """Bounded drop-oldest queue with one dispatcher thread.

    ``capacity`` is the number of events held before the oldest is dropped (default 10,000).
    ``publish`` never blocks and never raises. ``close`` delivers what is queued (waiting at
    most ``timeout`` s) and stops the dispatcher.
    """

    def __init__(self, capacity: int = 10_000, name: str = "streamwatch-events") -> None:
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        self._queue: collections.deque[Any] = collections.deque()
        self._capacity = capacity
        self._cond = threading.Condition()
        self._sinks: list[Sink] = []
        self._published = 0
        self._delivered = 0
        self._dropped = 0
        self._sink_errors = 0
        self._closed = False
        self._idle = True  # the dispatcher holds no event
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def add_sink(self, sink: Sink) -> None:
        """Register ``sink`` (called with each event on the dispatcher thread)."""
        with self._cond:
            self._sinks = [*self._sinks, sink]

    def remove_sink(self, sink: Sink) -> None:
        with self._cond:
            self._sinks = [s for s in self._sinks if s is not sink]

    def publish(self, event: Any) -> None:
        """Queue ``event`` for delivery. O(1); never blocks on sinks; never raises."""
        try:
            with self._cond:
                if self._closed:
                    self._dropped += 1
                    return
                if len(self._queue) >= self._capacity:
                    self._queue.popleft()
                    self._dropped += 1
                self._queue.append(event)
                self._published += 1
                self._cond.notify()
        except Exception:  # pragma: no cover - never raise into the producer
            pass

    def stats(self) -> EventBusStats:
        with self._cond:
            return EventBusStats(
                self._published, self._delivered, self._dropped, self._sink_errors, len(self._queue)
            )

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued event has been delivered; True when it was in time."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and self._idle, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Deliver what is queued (up to ``timeout`` s), then stop the dispatcher thread."""
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._idle = True
                    self._cond.notify_all()
                    self._cond.wait()
                if not self._queue and self._closed:
                    self._idle = True
                    self._cond.notify_all()
                    return
                event = self._queue.popleft()
                self._idle = False
                sinks = self._sinks
            for sink in sinks:
                try:
                    sink(event)
                except Exception:
                    with self._cond:
                        self._sink_errors += 1
            with self._cond:
                self._delivered += 1
