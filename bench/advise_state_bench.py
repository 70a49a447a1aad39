"""Benchmark: is ``advise-state-store``'s advice worth taking? One stateful job made for the rule
(a CSV file source, ``KEYS_PER_BATCH`` new distinct keys a file, one file a micro-batch,
``groupBy(key).count()`` → ``noop``, ``BATCHES`` batches: ``KEYS_PER_BATCH × BATCHES`` keys in
state at the end), run on one local[2] Spark in the same run with each state store
configuration, the arms alternated (``bench.rounds``) for ``ADVISE_BENCH_ROUNDS`` rounds
(default 5); per arm the median and the min over rounds. Each run starts on a new checkpoint
with ``spark.sql.streaming.stateStore.providerClass`` (and RocksDB's
``changelogCheckpointing.enabled``) set in the session before ``start()``: Spark reads both
when the query starts and writes them into ``offsets/N``; the session's values are restored
after the run.

Arms: ``hdfs`` (the default provider), ``rocksdb`` (changelog checkpointing off, Spark's
default) and ``rocksdb+changelog`` (the advice for ``rocksdb``; also what moving off ``hdfs``
would be advised, measured to see whether it helps — it did not, so the rule keeps HDFS).
streamwatch's rule (:func:`streamwatch.analysis.advice_state.state_store`) runs first on the
checkpoint and progress of an ``hdfs`` run (its verdict printed) and of a ``rocksdb`` run (it
must advise changelog checkpointing). Per run, Spark's own numbers from ``recentProgress``:
``stateOperators[].memoryUsedBytes`` of the last batch (the heap, or RocksDB's native memory,
the state holds), the median ``commitTimeMs`` and ``durationMs.triggerExecution``/``addBatch``
over the batches after batch 0 (the JVM's warm-up), plus the JVM's garbage collection time
over the run (``GarbageCollectorMXBean.getCollectionTime``) and its CPU seconds
(``/proc/<pid>/stat``: background snapshot uploads included). Not run in CI.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.advise_trigger_bench import jvm_cpu_s, spark_pid  # noqa: E402
from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
KEYS_PER_BATCH = int(os.environ.get("ADVISE_BENCH_KEYS", "48000"))
BATCHES = int(os.environ.get("ADVISE_BENCH_BATCHES", "6"))
PARTITIONS = 2
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
HDFS_CLASS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_CLASS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
ARMS: dict[str, dict[str, str]] = {
    "hdfs": {PROVIDER: HDFS_CLASS, CHANGELOG: "false"},
    "rocksdb": {PROVIDER: ROCKSDB_CLASS, CHANGELOG: "false"},
    "rocksdb+changelog": {PROVIDER: ROCKSDB_CLASS, CHANGELOG: "true"},
}


def write_input(folder: Path) -> None:
    """``BATCHES`` CSV files of ``KEYS_PER_BATCH`` distinct keys each, no key in two files."""
    folder.mkdir(parents=True)
    for b in range(BATCHES):
        lo = b * KEYS_PER_BATCH
        (folder / f"part-{b:03d}.csv").write_text("".join(f"key-{k:09d},{k % 97}\n" for k in range(lo, lo + KEYS_PER_BATCH)))


@contextmanager
def session_conf(spark: Any, conf: dict[str, str]) -> Iterator[None]:
    """Sets ``conf`` in the session for the block; restores (or unsets) each key after."""
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def gc_ms(spark: Any) -> int:
    """The JVM's garbage collection time so far (ms, every collector)."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - pyspark's own handle
    beans = jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    return sum(max(0, int(b.getCollectionTime())) for b in beans)


@dataclass
class Run:
    """One run: Spark's numbers (bytes, ms) and the JVM's (GC ms, CPU s); ``progress`` raw."""

    memory_bytes: int
    rows_total: int
    commit_ms: float
    trigger_ms: float
    add_batch_ms: float
    gc_ms: int
    cpu_s: float
    progress: list[dict[str, Any]]
    checkpoint: Path


def run(spark: Any, pid: int, base: Path, src: Path, arm: str, r: int) -> Run:
    from pyspark.sql import functions as F

    cp = base / f"cp-{arm}-{r}"
    g0, c0 = gc_ms(spark), jvm_cpu_s(pid)
    with session_conf(spark, ARMS[arm]):
        q = (spark.readStream.schema("key STRING, v INT").option("maxFilesPerTrigger", 1).csv(str(src))
             .groupBy("key").agg(F.count("*").alias("n"))
             .writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
             .trigger(availableNow=True).start())
    try:
        q.awaitTermination(600)
    finally:
        q.stop()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert len(progress) == BATCHES, [p["batchId"] for p in progress]
    later = progress[1:]
    last = progress[-1]["stateOperators"]
    return Run(sum(o["memoryUsedBytes"] for o in last), sum(o["numRowsTotal"] for o in last),
               statistics.median(sum(o["commitTimeMs"] for o in p["stateOperators"]) for p in later),
               statistics.median(p["durationMs"]["triggerExecution"] for p in later),
               statistics.median(p["durationMs"]["addBatch"] for p in later),
               gc_ms(spark) - g0, jvm_cpu_s(pid) - c0, progress, cp)


def advise(r: Run) -> Any:
    """streamwatch's rule on a run's checkpoint and progress (an :class:`Advice`)."""
    from streamwatch.analysis.advice_state import state_store
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.model.events import QueryProgress

    return state_store(read_checkpoint(str(r.checkpoint)), [QueryProgress.from_dict(p) for p in r.progress])


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-state-bench-") as tmp:
        base = Path(tmp)
        print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
              "starting Spark (local[2]) …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False,
                                                shuffle_partitions=PARTITIONS,
                                                table_format=TableFormatDecision("parquet", "bench")))
        pid = spark_pid(spark)
        try:
            src = base / "in"
            write_input(src)
            for arm in ("hdfs", "rocksdb"):
                a = advise(run(spark, pid, base / "derive", src, arm, 0))
                print(f"  {arm}: streamwatch says {a.verdict.value} {a.setting}: {a.summary}", flush=True)
                # the advice measured is changelog checkpointing on RocksDB; HDFS is never advised away
                assert arm == "hdfs" or (a.action is not None and f"{CHANGELOG}=true" in a.action), a
            t0 = time.monotonic()
            runs = alternate(tuple(ARMS), ROUNDS, lambda arm, r: run(spark, pid, base, src, arm, r))
            report(runs, time.monotonic() - t0)
        finally:
            spark.stop()


def report(runs: dict[str, list[Run]], wall_s: float) -> None:
    print(f"\nadvise-state-store: {ROUNDS} alternated rounds in {wall_s:.0f} s, {BATCHES} batches × "
          f"{KEYS_PER_BATCH:,} new keys (groupBy count, {PARTITIONS} shuffle partitions); load average "
          f"{os.getloadavg()[0]:.2f}; per arm median (min)")
    for arm, rs in runs.items():
        def s(xs: list[float], fmt: str) -> str:
            sp = Spread.of(xs)
            return f"{sp.median:{fmt}} ({sp.min:{fmt}})"
        print(f"  {arm:18s} state rows {rs[0].rows_total:,}"
              f"  memoryUsedBytes MB {s([x.memory_bytes / 1e6 for x in rs], '7.1f')}"
              f"  commitTimeMs {s([x.commit_ms for x in rs], '6.0f')}"
              f"  batch ms {s([x.trigger_ms for x in rs], '6.0f')}"
              f"  addBatch ms {s([x.add_batch_ms for x in rs], '6.0f')}"
              f"  GC ms {s([float(x.gc_ms) for x in rs], '6.0f')}"
              f"  JVM CPU s {s([x.cpu_s for x in rs], '5.1f')}")
    measures: tuple[tuple[str, Callable[[Run], float]], ...] = (
        ("commitTimeMs", lambda x: x.commit_ms), ("batch ms", lambda x: x.trigger_ms), ("JVM CPU s", lambda x: x.cpu_s))
    for bad, good in (("hdfs", "rocksdb"), ("hdfs", "rocksdb+changelog"), ("rocksdb", "rocksdb+changelog")):
        for label, f in measures:
            print_ratio(f"{bad} / {good} {label}", [f(x) for x in runs[bad]], [f(x) for x in runs[good]], 2)
    h, g = runs["hdfs"], runs["rocksdb+changelog"]
    print(f"  state memoryUsedBytes hdfs / rocksdb+changelog: {Spread.of(x.memory_bytes for x in h).median / 1e6:,.1f} MB"
          f" → {Spread.of(x.memory_bytes for x in g).median / 1e6:,.1f} MB (median)")


if __name__ == "__main__":
    main()
