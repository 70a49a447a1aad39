"""The real listener on real queries in the shared session: started, progress with state
operators, idle, terminated (cleanly and with an exception); a blocking/raising sink does not
hold Spark's listener thread; streamwatch.record round-trips to equal model objects."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from streamwatch.events.bus import EventBus
from streamwatch.model.events import QueryIdle, QueryProgress, QueryStarted, QueryTerminated

pytestmark = pytest.mark.spark


def _wait(got: Collected, predicate, timeout_s: float, what: str) -> None:
    """Block until ``predicate()`` holds, re-checked each time ``got`` receives an event."""
    with got.arrived:
        assert got.arrived.wait_for(predicate, timeout_s), f"timed out after {timeout_s} s waiting for {what}"


def _drain_listener_bus(spark, timeout_s: float = 120) -> None:
    """Return once Spark's listener bus has handed every posted event to its listeners (our
    Python listener included): ``LiveListenerBus.waitUntilEmpty``; raises (Py4J
    ``TimeoutException``) when a listener holds the bus thread longer than ``timeout_s``."""
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(int(timeout_s * 1000))


def _land(folder: Path, n: int, rows: int = 20, start: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        tmp = folder / f".f{i}.tmp"
        tmp.write_text("\n".join(json.dumps({"k": j % 3, "v": j}) for j in range(rows)))
        tmp.rename(folder / f"f{i}.json")


class Collected:
    def __init__(self) -> None:
        self.events: list = []
        self.lock = threading.RLock()
        self.arrived = threading.Condition(self.lock)

    def __call__(self, e) -> None:
        with self.arrived:
            self.events.append(e)
            self.arrived.notify_all()

    def of(self, query_id: str, kind=None) -> list:
        with self.lock:
            return [e for e in self.events if e.id == query_id and (kind is None or isinstance(e, kind))]


@pytest.fixture
def listening(spark):
    from streamwatch.spark.listener import PublishingListener

    bus = EventBus()
    got = Collected()
    bus.add_sink(got)
    listener = PublishingListener(bus.publish)
    spark.streams.addListener(listener)
    yield got, listener
    spark.streams.removeListener(listener)
    bus.close(2)


def test_started_progress_with_state_idle_and_clean_termination(spark, tmp_path, listening):
    got, listener = listening
    _land(tmp_path / "in", 1)
    old = spark.conf.get("spark.sql.streaming.noDataProgressEventInterval")
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "200ms")
    try:
        q = (spark.readStream.schema("k INT, v INT").json(str(tmp_path / "in")).groupBy("k").count()
             .writeStream.outputMode("update").format("noop").queryName("sw_listener_state")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(processingTime="300 milliseconds").start())
    finally:
        spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", old)
    try:
        _wait(got, lambda: any(p.num_input_rows for p in got.of(q.id, QueryProgress)), 120, "a progress with input")
        _wait(got, lambda: got.of(q.id, QueryIdle), 60, "an idle event (no new data)")
    finally:
        q.stop()
    _wait(got, lambda: got.of(q.id, QueryTerminated), 30, "the terminated event")
    started = got.of(q.id, QueryStarted)
    assert started[0].name == "sw_listener_state" and started[0].run_id == str(q.runId)
    p = next(p for p in got.of(q.id, QueryProgress) if p.num_input_rows)
    assert (p.num_input_rows, p.sources[0].end_offset) == (20, '{"logOffset":0}')
    op = p.state_operators[0]
    assert op.operator_name == "stateStoreSave" and op.num_rows_total == 3 and op.num_shuffle_partitions == 2
    assert "stateOnCurrentVersionSizeBytes" in op.custom_metrics
    assert p.sink is not None and p.sink.num_output_rows == 3
    assert p.duration_ms["triggerExecution"] >= p.duration_ms.get("addBatch", 0) > 0
    term = got.of(q.id, QueryTerminated)[-1]
    assert not term.failed and term.error_class is None
    assert listener.conversion_errors == 0
    assert listener.fallbacks == 0  # every event took the one-call event-log JSON route


def test_termination_with_an_exception(spark, tmp_path, listening):
    got, _ = listening
    q = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
         .selectExpr("raise_error(concat('boom on purpose ', value)) AS x")
         .writeStream.format("noop").queryName("sw_listener_fails")
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        _wait(got, lambda: got.of(q.id, QueryTerminated), 120, "the failing query to terminate")
    finally:
        q.stop()
    term = got.of(q.id, QueryTerminated)[-1]
    assert term.failed and "boom on purpose" in term.exception
    assert term.error_class == "USER_RAISED_EXCEPTION"


def test_blocking_and_raising_sinks_neither_hold_spark_nor_stop_the_query(spark, tmp_path):
    from streamwatch.spark.listener import PublishingListener

    release = threading.Event()
    blocked = threading.Event()
    bus = EventBus(capacity=2)

    def blocking_sink(e) -> None:
        blocked.set()
        release.wait(600)

    bus.add_sink(blocking_sink)  # a sink that blocks until the end of the test
    bus.add_sink(lambda e: 1 / 0)  # a sink that raises
    listener = PublishingListener(bus.publish)
    _land(tmp_path / "in", 6)
    spark.streams.addListener(listener)
    try:
        q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
             .writeStream.format("noop").queryName("sw_listener_blocked")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
        assert q.awaitTermination(180), "the query must finish while the sink blocks"
        assert q.exception() is None
        assert q.lastProgress["batchId"] == 5  # all 6 files, one per batch
        # Spark's listener thread was not held: it delivered every event (started, 6 progress,
        # terminated) to our listener while the first sink is still blocked in its first event
        _drain_listener_bus(spark)
        assert listener.stats(bus).published == 8
        assert blocked.wait(120), "the bus's dispatcher never reached the blocking sink"
    finally:
        spark.streams.removeListener(listener)
        release.set()
    bus.close(5)
    stats = listener.stats(bus)
    assert stats.dropped >= 3  # 8 events, one held by the blocked sink, 2 queued
    assert stats.sink_errors >= 1


def test_record_round_trips_to_equal_model_objects(spark, tmp_path):
    import streamwatch
    from streamwatch.events.reader import ReadReport, read_recording
    from streamwatch.model.events import ListenerStats

    _land(tmp_path / "in", 3)
    path = tmp_path / "rec" / "events.jsonl"
    live = Collected()
    rec = streamwatch.record(spark, path, sinks=(live,))
    try:
        q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
             .groupBy("k").count().writeStream.outputMode("update").format("noop").queryName("sw_record")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
        q.awaitTermination(180)
    finally:
        final = rec.stop()
    report = ReadReport()
    got = [e for e in read_recording(path, report) if getattr(e, "id", None) in (q.id, None)]
    assert [e for e in got if not isinstance(e, ListenerStats)] == live.of(q.id)  # what the listener saw
    assert [p.batch_id for p in got if isinstance(p, QueryProgress)] == [p.batchId for p in q.recentProgress]
    rates = [p.processed_rows_per_second for p in got if isinstance(p, QueryProgress)]
    # the JVM's doubles, not the 0.1 rows/s rounding of Spark 4.2's progress JSON
    assert rates == [jp.processedRowsPerSecond() for jp in q._jsq.recentProgress()]
    assert [type(e) for e in got] == [QueryStarted] + [QueryProgress] * 3 + [QueryTerminated, ListenerStats]
    assert got[-1] == final and final.dropped == 0 and final.sink_errors == 0
    assert report.header is not None and report.header.app["appId"] == spark.sparkContext.applicationId
    assert report.bad_lines == 0


def test_without_the_one_call_route_events_are_converted_the_pyspark_way(spark, tmp_path):
    """Where JsonProtocol.sparkEventToJsonString cannot be called (another Spark build), each
    event falls back to PySpark's own conversion: same model objects, counted as fallbacks."""
    from streamwatch.spark.listener import PublishingListener

    _land(tmp_path / "in", 2)
    bus = EventBus()
    got = Collected()
    bus.add_sink(got)
    listener = PublishingListener(bus.publish)
    spark.streams.addListener(listener)
    listener._to_json = None  # as when the JVM lookup failed
    try:
        q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
             .groupBy("k").count().writeStream.outputMode("update").format("noop").queryName("sw_fallback")
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
        assert q.awaitTermination(180)
        _wait(got, lambda: got.of(q.id, QueryTerminated), 30, "the terminated event")
    finally:
        spark.streams.removeListener(listener)
        bus.close(2)
    kinds = [type(e) for e in got.of(q.id)]
    assert kinds == [QueryStarted, QueryProgress, QueryProgress, QueryTerminated]
    assert listener.fallbacks == 4 and listener.conversion_errors == 0
    p = got.of(q.id, QueryProgress)[-1]
    assert p.batch_id == 1 and p.num_input_rows == 20 and p.state_operators[0].num_rows_total == 3
