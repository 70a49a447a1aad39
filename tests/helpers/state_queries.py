"""Real stateful queries written with the shared SparkSession, one micro-batch per landed
file (``maxFilesPerTrigger=1``, ``availableNow``), for the state-reader tests and bench.

Each ``write_*`` function lands its input, runs the query to the end and returns the
checkpoint folder. Store provider, changelog checkpointing and checkpoint format are session
confs Spark records in the offsets log at the first batch; :func:`confs` sets them for one
query and restores them after."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from collections.abc import Iterator
from pathlib import Path

HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
EVENT_SCHEMA = "key STRING, ts TIMESTAMP, v BIGINT, d DOUBLE"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@contextlib.contextmanager
def confs(spark, provider: str = HDFS, *, changelog: bool = False, format_version: int = 1,
          extra: dict[str, str] | None = None) -> Iterator[None]:
    """Session confs for one query's first run, restored afterwards."""
    want = {
        "spark.sql.streaming.stateStore.providerClass": provider,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true" if changelog else "false",
        "spark.sql.streaming.stateStore.checkpointFormatVersion": str(format_version),
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "3",
        **(extra or {}),
    }
    old = {k: spark.conf.get(k, None) for k in want}
    for k, v in want.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def land_events(folder: Path, batches: list[list[tuple[str, int, int, float]]]) -> Path:
    """JSON-lines files ``part-000NN.json`` of (key, seconds after T0, v, d) events."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, rows in enumerate(batches):
        lines = [json.dumps({"key": k, "ts": (T0 + dt.timedelta(seconds=s)).isoformat(), "v": v, "d": d})
                 for k, s, v, d in rows]
        path = folder / f"part-{i:05d}.json"
        path.write_text("\n".join(lines) + "\n")
        # the file source orders files by modification time: make it the landing order, so
        # two runs over the same input plan the same batches
        os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
    return folder


def stream(spark, folder: Path):
    return (spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1)
            .json(str(folder)))


def run(df, checkpoint: Path, mode: str = "update") -> Path:
    q = (df.writeStream.format("noop").outputMode(mode).option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    # Unload the query's state stores (Spark keeps them loaded after the query stopped) so the
    # checkpoint is final before a test guards it as read-only. The test session runs no
    # background maintenance (tests/conftest.py), so stop() has no maintenance to wait for.
    df.sparkSession._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    return checkpoint


def default_batches(n: int = 6, keys: int = 5) -> list[list[tuple[str, int, int, float]]]:
    """``n`` batches; batch i has events for ``keys`` keys at seconds 10·i … 10·i+4 (so a
    10-second window closes every batch), with a late event in batch 3."""
    out = []
    for i in range(n):
        rows = [(f"k{j}", 10 * i + j % 5, i * 100 + j, j / 4) for j in range(keys)]
        if i == 3:
            rows.append(("late", 1, -1, -0.5))
        out.append(rows)
    return out


def write_aggregation(spark, root: Path, provider: str = HDFS, **kw) -> Path:
    """A windowed aggregation (10 s windows, 5 s watermark) by key: count, sum, avg, max."""
    from pyspark.sql import functions as F

    src = land_events(root / "in", default_batches())
    with confs(spark, provider, **kw):
        df = (stream(spark, src).withWatermark("ts", "5 seconds")
              .groupBy(F.window("ts", "10 seconds"), "key")
              .agg(F.count("*").alias("n"), F.sum("v").alias("total"), F.avg("d").alias("mean"),
                   F.max("ts").alias("last_ts")))
        return run(df, root / "cp")


def write_dedup(spark, root: Path, provider: str = HDFS, within_watermark: bool = False, **kw) -> Path:
    """``dropDuplicates(["key", "v"])`` (with a watermark on ts) or
    ``dropDuplicatesWithinWatermark(["key"])``."""
    batches = [[(f"k{j % 3}", 10 * i + j, j % 2, 0.0) for j in range(4)] for i in range(4)]
    src = land_events(root / "in", batches)
    with confs(spark, provider, **kw):
        df = stream(spark, src).withWatermark("ts", "10 seconds")
        df = df.dropDuplicatesWithinWatermark(["key"]) if within_watermark else df.dropDuplicates(["key", "v", "ts"])
        return run(df, root / "cp", "append")


def write_join(spark, root: Path, provider: str = HDFS, **kw) -> Path:
    """An inner stream-stream join on key with watermarks and a 5-second time bound."""
    from pyspark.sql import functions as F

    left = land_events(root / "left", [[(f"k{j}", 10 * i + j, j, 1.0) for j in range(3)] for i in range(3)])
    right = land_events(root / "right", [[(f"k{j}", 10 * i + j + 1, j, 2.0) for j in range(1, 4)] for i in range(3)])
    with confs(spark, provider, **kw):
        lf = stream(spark, left).withWatermark("ts", "5 seconds").select(
            F.col("key").alias("lkey"), F.col("ts").alias("lts"), F.col("v").alias("lv"))
        rf = stream(spark, right).withWatermark("ts", "5 seconds").select(
            F.col("key").alias("rkey"), F.col("ts").alias("rts"), F.col("d").alias("rd"))
        cond = (F.col("lkey") == F.col("rkey")) & (F.col("rts") >= F.col("lts")) & \
               (F.col("rts") <= F.col("lts") + F.expr("interval 5 seconds"))
        return run(lf.join(rf, cond, "leftOuter"), root / "cp", "append")


def write_session_window(spark, root: Path, provider: str = HDFS, **kw) -> Path:
    """Session windows (3 s gap) by key, counted, 10-second watermark."""
    from pyspark.sql import functions as F

    batches = [[(f"k{j % 2}", 10 * i + j, j, 0.0) for j in range(4)] for i in range(4)]
    src = land_events(root / "in", batches)
    with confs(spark, provider, **kw):
        df = (stream(spark, src).withWatermark("ts", "10 seconds")
              .groupBy(F.session_window("ts", "3 seconds"), "key").agg(F.count("*").alias("n")))
        return run(df, root / "cp", "append")


def write_pandas_state(spark, root: Path, provider: str = HDFS, **kw) -> Path:
    """``applyInPandasWithState``: a running count and sum per key, an event-time timeout
    60 s after the watermark (a processing-time timeout would run no-data batches until it
    fires)."""
    import pandas as pd
    from pyspark.sql.streaming.state import GroupStateTimeout

    def count(key, pdfs, state):
        n, total = state.get if state.exists else (0, 0)
        for pdf in pdfs:
            n += len(pdf)
            total += int(pdf["v"].sum())
        state.update((n, total))
        state.setTimeoutTimestamp(state.getCurrentWatermarkMs() + 60_000)
        yield pd.DataFrame({"key": [key[0]], "n": [n]})

    src = land_events(root / "in", default_batches(4, 4))
    with confs(spark, provider, **kw):
        df = stream(spark, src).withWatermark("ts", "5 seconds").groupBy("key").applyInPandasWithState(
            count, "key STRING, n LONG", "n LONG, total LONG", "update", GroupStateTimeout.EventTimeTimeout)
        return run(df, root / "cp")


def write_growing(spark, root: Path, batches: int = 6, **kw) -> Path:
    """``groupBy(key).count()`` on a key that is new in every event, no watermark: state
    grows by every input row."""
    src = land_events(root / "in", [[(f"u{i}-{j}", 10 * i + j, j, 0.0) for j in range(20)] for i in range(batches)])
    with confs(spark, HDFS, **kw):
        return run(stream(spark, src).groupBy("key").count(), root / "cp")


def write_bounded(spark, root: Path, batches: int = 6, **kw) -> Path:
    """A 10-second windowed count with a 5-second watermark over ever-new keys: windows
    close and are evicted, so the state levels off."""
    from pyspark.sql import functions as F

    src = land_events(root / "in", [[(f"u{i}-{j}", 10 * i + j % 5, j, 0.0) for j in range(20)] for i in range(batches)])
    with confs(spark, HDFS, **kw):
        df = stream(spark, src).withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds"), "key").count()
        return run(df, root / "cp", "append")


def write_types(spark, root: Path, provider: str = HDFS, **kw) -> Path:
    """An aggregation whose state holds many Spark types: short/byte/float/boolean/date,
    decimals (compact and 38-digit), binary, a map, a struct and collect_list's buffer."""
    from pyspark.sql import functions as F

    src = land_events(root / "in", default_batches(3, 4))
    with confs(spark, provider, **kw):
        df = stream(spark, src).groupBy("key").agg(
            F.collect_list("v").alias("vs"),
            F.sum(F.col("d").cast("decimal(10,2)")).alias("dsum"),
            F.max(F.col("v").cast("decimal(38,6)")).alias("big"),
            F.max(F.col("ts").cast("date")).alias("day"),
            F.max(F.col("d").cast("float")).alias("f"),
            F.max(F.col("v") > 150).alias("flag"),
            F.max(F.col("v").cast("short")).alias("s"),
            F.min((F.col("v") % 100).cast("byte")).alias("b"),
            F.max(F.col("key").cast("binary")).alias("bin"),
            F.first(F.create_map(F.col("key"), F.col("v"))).alias("m"),
            F.max(F.struct("ts", "v")).alias("latest"),
            F.max(F.array("v", "v")).alias("arr"),
        )
        return run(df, root / "cp")
