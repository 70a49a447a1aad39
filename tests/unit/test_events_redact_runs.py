"""Two small pieces of the event layer with no test of their own: the redaction of Spark conf
secrets (``spark.redaction.regex``'s default, on maps and on Spark's ``[[key, value], …]``
property lists) and :class:`RunTracker`, which ``streamwatch log`` and the dashboard's stop
wait on (every started run's terminated event delivered through the real :class:`EventBus`)."""

from __future__ import annotations

import threading

import pytest

from streamwatch.events.bus import EventBus
from streamwatch.events.redact import REDACTED, is_secret_key, redact_conf, redact_pairs
from streamwatch.events.runs import RunTracker
from streamwatch.model.events import QueryIdle, QueryStarted, QueryTerminated


@pytest.mark.parametrize("key, secret", [
    ("spark.hadoop.fs.s3a.access.key", True), ("fs.s3a.accesskey", True), ("AWS_ACCESS_KEY_ID", False),
    ("spark.hadoop.fs.s3a.ACCESS.KEY", True), ("spark.ssl.keyPassword", True), ("spark.authenticate.secret", True),
    ("spark.sw.test.secret.token", True), ("GITHUB_TOKEN", True), ("spark.access-key", False),
    ("spark.executor.memory", False), ("spark.sql.shuffle.partitions", False), ("key", False), ("", False),
])
def test_secret_keys_follow_sparks_default_redaction_regex(key, secret):
    assert is_secret_key(key) is secret


def test_redact_conf_replaces_only_secret_values_and_copies():
    conf = {"spark.master": "local[2]", "spark.hadoop.fs.s3a.secret.key": "s3cr3t", 3: "three",
            "spark.app.name": "password-rotation"}  # a value naming a secret is not a secret key
    out = redact_conf(conf)
    assert out == {"spark.master": "local[2]", "spark.hadoop.fs.s3a.secret.key": REDACTED, 3: "three",
                   "spark.app.name": "password-rotation"}
    assert conf["spark.hadoop.fs.s3a.secret.key"] == "s3cr3t" and out is not conf  # the input is untouched
    assert REDACTED == "*********"


def test_redact_pairs_handles_sparks_property_lists_and_leaves_other_shapes():
    pairs = [["spark.master", "local[2]"], ("spark.ssl.keyPassword", "hunter2"), ["spark.token"],
             ["spark.token", "a", "b"], "spark.token=x", ["spark.authenticate.secret", None]]
    out = redact_pairs(pairs)
    assert out == [["spark.master", "local[2]"], ["spark.ssl.keyPassword", REDACTED], ["spark.token"],
                   ["spark.token", "a", "b"], "spark.token=x", ["spark.authenticate.secret", REDACTED]]
    assert out is not pairs and pairs[1] == ("spark.ssl.keyPassword", "hunter2")
    assert out[0] is pairs[0]  # not a secret: the very item, unchanged
    assert redact_pairs({"spark.password": "p", "a": 1}) == {"spark.password": REDACTED, "a": 1}
    for other in (None, "spark.password=p", 42, ("spark.password", "p")):
        assert redact_pairs(other) is other


def _started(run: str) -> QueryStarted:
    return QueryStarted(id="q1", run_id=run, timestamp=None, name="q")


def _terminated(run: str) -> QueryTerminated:
    return QueryTerminated(id="q1", run_id=run, timestamp=None)


def test_run_tracker_follows_runs_by_run_id():
    t = RunTracker()
    assert t.started == 0 and t.all_terminated()  # nothing seen: nothing to wait for
    t(_started("r1"))
    t(_started("r2"))
    t(QueryIdle(id="q1", run_id="r3", timestamp=None))  # not a lifecycle edge: ignored
    t("not an event")
    assert t.started == 2 and not t.all_terminated()
    t(_terminated("r1"))
    assert t.started == 2 and not t.all_terminated()
    t(_terminated("r2"))
    assert t.started == 2 and t.all_terminated()
    t(_terminated("r4"))  # a run seen only by its end counts as seen and ended
    assert t.started == 3 and t.all_terminated()


def test_wait_all_terminated_returns_once_the_bus_delivered_the_end():
    bus = EventBus()
    tracker, delivered = RunTracker(), []
    bus.add_sink(tracker)
    bus.add_sink(delivered.append)
    try:
        bus.publish(_started("r1"))
        assert bus.flush(10)
        assert not tracker.wait_all_terminated(bus, 0.3)  # never ends: False after the timeout
        end = threading.Thread(target=bus.publish, args=(_terminated("r1"),))
        end.start()
        assert tracker.wait_all_terminated(bus, 30)
        end.join()
        # True means every sink has seen the terminated event, not only the tracker
        assert [type(e) for e in delivered] == [QueryStarted, QueryTerminated]
    finally:
        bus.close()


def test_a_full_bus_drops_the_oldest_and_counts_each_drop_once():
    """Capacity 2 while the one sink is held inside its first event: of five more events the
    three oldest are dropped; ``flush`` times out meanwhile, then delivers the two newest."""
    entered, release = threading.Event(), threading.Event()
    got: list[int] = []

    def slow_sink(e: int) -> None:
        if e == 0:
            entered.set()
            release.wait(30)
        got.append(e)

    bus = EventBus(capacity=2)
    bus.add_sink(slow_sink)
    try:
        bus.publish(0)
        assert entered.wait(30)  # the dispatcher holds event 0: the queue is empty again
        for e in range(1, 6):
            bus.publish(e)
        st = bus.stats()
        assert (st.published, st.dropped, st.delivered) == (6, 3, 0)
        assert not bus.flush(0.2)  # a sink still busy: not flushed in time
        release.set()
        assert bus.flush(30)
        assert got == [0, 4, 5]
        st = bus.stats()
        assert (st.published, st.delivered, st.dropped, st.sink_errors) == (6, 3, 3, 0)
    finally:
        release.set()
        bus.close()
    bus.publish(6)  # after close: dropped, never delivered
    assert bus.stats().dropped == 4 and got == [0, 4, 5]
