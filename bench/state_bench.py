"""Benchmark: ``streamwatch.state.read_state`` (no JVM) against Spark's state data source
(``spark.read.format("statestore")``) on the same checkpoints, in one run.

Writes (in a temp folder, with a local[2] SparkSession) a windowed aggregation over
``KEYS`` distinct keys — count, sum, max(ts) per (10-minute window, key) — twice: on the
HDFS-backed store and on RocksDB with changelog checkpointing. Then, alternating the two
readers for ``ROUNDS`` rounds per checkpoint, times decoding every row of the last batch:

* streamwatch: ``read_state(cp, limit=None)`` — every key and value decoded to Python values;
* Spark, JVM only: ``spark.read.format("statestore").load(cp)`` written to the ``noop`` sink
  (rows decoded in the JVM, nothing sent to Python);
* Spark, to Python: the same ``.collect()`` (what a Python user gets);
* streamwatch ``--json``: the rows streamed as ``streamwatch state CP --json --limit 0``
  writes them (decoded and serialized, to a sink that drops them).

Prints rows/s (median and min of the rounds: the slowest round, and the best) and the ratios
streamwatch / Spark, then whether issue 36's targets hold: ≥ ``TARGET_ROWS_S`` rows/s median and
≥ ``TARGET_RATIO``× Spark's reader into ``noop``. The SparkSession's start (~6 s) is not counted
against Spark.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KEYS = 100_000
ROUNDS = 5
TARGET_ROWS_S = 500_000
TARGET_RATIO = 5.0
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def write_checkpoint(spark, base: Path, provider: str, changelog: bool) -> Path:
    from pyspark.sql import functions as F

    src = base / "in"
    if not src.exists():
        (spark.range(KEYS).selectExpr("concat('key-', id) AS key", "id AS v", "timestamp_seconds(id % 3600) AS ts")
         .repartition(2).write.parquet(str(src)))
    cp = base / f"cp-{provider.rsplit('.', 1)[-1]}"
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", str(changelog).lower())
    df = (spark.readStream.schema("key STRING, v BIGINT, ts TIMESTAMP").parquet(str(src))
          .groupBy(F.window("ts", "10 minutes"), "key").agg(F.count("*").alias("n"), F.sum("v").alias("total"), F.max("ts").alias("last")))
    q = (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return cp


def jvm_cpu_seconds(spark) -> float | None:
    """CPU seconds the Spark driver JVM has used (Linux ``/proc``), None when unknown."""
    try:
        pid = spark.sparkContext._gateway.proc.pid
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (AttributeError, OSError, ValueError, IndexError):
        return None


def timed(fn, spark) -> tuple[float, float | None, int]:
    """(wall seconds, CPU seconds of this process and the JVM, rows) of one read."""
    j0, c0, t0 = jvm_cpu_seconds(spark), time.process_time(), time.perf_counter()
    n = fn()
    wall, cpu, j1 = time.perf_counter() - t0, time.process_time() - c0, jvm_cpu_seconds(spark)
    return wall, (cpu + j1 - j0) if j0 is not None and j1 is not None else None, n


def report(name: str, times: dict[str, list[float]], what: str) -> None:
    """rows/s (median, min = slowest round, best) per reader and the ratios to streamwatch."""
    med = {k: statistics.median(v) for k, v in times.items()}
    low = {k: min(v) for k, v in times.items()}
    high = {k: max(v) for k, v in times.items()}
    print(f"\n{name}: {KEYS:,} rows, {ROUNDS} alternated rounds, {what}")
    for k in times:
        print(f"  {k:24s} median {KEYS / med[k]:>10,.0f} rows/s ({med[k]:.2f} s)   "
              f"min {KEYS / high[k]:>10,.0f} rows/s ({high[k]:.2f} s)   best {KEYS / low[k]:>10,.0f} rows/s ({low[k]:.2f} s)")
    for k in (k for k in times if k.startswith("statestore")):
        print(f"  ratio streamwatch / {k}: {med[k] / med['streamwatch']:.2f}× (median), "
              f"{high[k] / high['streamwatch']:.2f}× (min), {low[k] / low['streamwatch']:.2f}× (best)")
    rate = KEYS / med["streamwatch"]
    ratio = med["statestore (JVM, noop)"] / med["streamwatch"]
    print(f"  issue 36 targets ({what}): {rate:,.0f} rows/s median (≥ {TARGET_ROWS_S:,}: "
          f"{'met' if rate >= TARGET_ROWS_S else 'NOT met'}), {ratio:.2f}× Spark's reader into noop "
          f"(≥ {TARGET_RATIO:g}×: {'met' if ratio >= TARGET_RATIO else 'NOT met'})")


def main() -> None:
    from streamwatch.cli.state_cmd import _write_json_stream as write_json
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision
    from streamwatch.state import read_state
    from streamwatch.state.reader import stream_state

    with tempfile.TemporaryDirectory(prefix="state-bench-") as tmp:
        base = Path(tmp)
        print(f"starting Spark and writing two checkpoints of {KEYS:,} state rows …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False, shuffle_partitions=4,
                                                table_format=TableFormatDecision("parquet", "bench")))
        try:
            cps = {"hdfs": write_checkpoint(spark, base, HDFS, False),
                   "rocksdb+changelog": write_checkpoint(spark, base, ROCKSDB, True)}

            def ours(cp: Path) -> int:
                return sum(len(t.rows) for t in read_state(str(cp), limit=None))

            def jvm(cp: Path) -> int:
                df = spark.read.format("statestore").load(str(cp))
                df.write.format("noop").mode("overwrite").save()
                return KEYS

            def collect(cp: Path) -> int:
                return len(spark.read.format("statestore").load(str(cp)).collect())

            def as_json(cp: Path) -> int:
                with open(os.devnull, "wb") as sink:
                    tables = stream_state(str(cp), limit=None)
                    write_json(sink, str(cp), tables)
                return sum(t.stats.total for t in tables)

            labels = ("streamwatch", "statestore (JVM, noop)", "statestore .collect()", "streamwatch --json")
            for name, cp in cps.items():
                times: dict[str, list[float]] = {k: [] for k in labels}
                cpu: dict[str, list[float]] = {k: [] for k in labels}
                for r in range(ROUNDS):
                    for label, fn in zip(labels, (ours, jvm, collect, as_json), strict=True):
                        secs, used, n = timed(partial(fn, cp), spark)
                        if label != "statestore (JVM, noop)":
                            assert n == KEYS, f"{label} read {n} rows, expected {KEYS}"
                        times[label].append(secs)
                        if used is not None:
                            cpu[label].append(used)
                    print(f"  {name} round {r + 1}/{ROUNDS} done", flush=True)
                report(name, times, "wall clock")
                if all(len(v) == ROUNDS for v in cpu.values()):
                    # on a shared machine wall clock counts other processes' time; CPU seconds
                    # (this process + the driver JVM, all threads) count only the work done
                    report(name, cpu, "CPU seconds")
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
