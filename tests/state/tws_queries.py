"""Real queries for the transformWithState, Avro and progress-evidence tests, written with the
shared SparkSession: a ``transformWithStateInPandas`` processor with value, list (with a
TTL) and map state and processing-time timers, in either state encoding; and recorded
(``streamwatch.record``) runs of a bounded and a leaking query."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.helpers import state_queries as Q

NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"


def write_tws(spark, root: Path, encoding: str = "unsaferow") -> Path:
    """``groupBy(key).transformWithStateInPandas`` (processing time) keeping per key: a count
    (value state), every (v, ts) seen (list state, 1 h TTL), v → d as text (map state), and a
    timer an hour ahead per batch (never fires in the run). No-data batches are off, so
    ``availableNow`` ends with the input (processing-time mode would otherwise keep
    running them)."""
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    class Keeper(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.count = handle.getValueState("count", StructType([StructField("n", LongType())]))
            self.seen = handle.getListState(
                "seen", StructType([StructField("v", LongType()), StructField("ts", TimestampType())]),
                ttlDurationMs=3_600_000)
            self.text = handle.getMapState("text", StructType([StructField("v", LongType())]),
                                           StructType([StructField("d", StringType())]))

        def handleInputRows(self, key, rows, timerValues):
            n = self.count.get()[0] if self.count.exists() else 0
            for pdf in rows:
                n += len(pdf)
                for v, ts, d in zip(pdf["v"], pdf["ts"], pdf["d"], strict=True):
                    self.seen.appendValue((int(v), ts))
                    self.text.updateValue((int(v),), (f"{d:.2f}",))
            self.count.update((n,))
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + 3_600_000)
            yield pd.DataFrame({"key": [key[0]], "n": [n]})

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            yield pd.DataFrame({"key": [key[0]], "n": [-1]})

        def close(self):
            pass

    src = Q.land_events(root / "in", Q.default_batches(3, 4))
    extra = {"spark.sql.streaming.stateStore.encodingFormat": encoding, NO_DATA_BATCHES: "false"}
    with Q.confs(spark, Q.ROCKSDB, extra=extra):
        df = Q.stream(spark, src).groupBy("key").transformWithStateInPandas(
            Keeper(), "key STRING, n LONG", "update", "ProcessingTime")
        return Q.run(df, root / "cp")


def write_leak(spark, root: Path, batches: int = 6) -> Path:
    """``dropDuplicates(["key"])`` on ever-new keys under a 5-second watermark on ``ts``: the
    watermark advances every batch, but the dedup key lacks the event-time column, so
    nothing is ever evicted (a leak the progress reports show as numRowsRemoved = 0)."""
    src = Q.land_events(root / "in", [[(f"u{i}-{j}", 10 * i + j, j, 0.0) for j in range(20)] for i in range(batches)])
    with Q.confs(spark, Q.HDFS):
        df = Q.stream(spark, src).withWatermark("ts", "5 seconds").dropDuplicates(["key"])
        return Q.run(df, root / "cp", "append")


def recorded(spark, root: Path, write) -> tuple[Path, Path]:
    """Run ``write(spark, root)`` while ``streamwatch.record`` writes ``root/events.jsonl``;
    returns (checkpoint, recording) once the query's terminated event is recorded."""
    import streamwatch
    from streamwatch.model.events import QueryTerminated

    done = threading.Event()

    def sink(event) -> None:
        if isinstance(event, QueryTerminated):
            done.set()

    root.mkdir(parents=True, exist_ok=True)
    rec = streamwatch.record(spark, root / "events.jsonl", sinks=(sink,))
    try:
        cp = write(spark, root)
        assert done.wait(120), "the query's terminated event never reached the recording"
    finally:
        rec.stop()
    return cp, root / "events.jsonl"
