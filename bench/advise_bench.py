"""Benchmark: is ``streamwatch advise``'s advice worth taking? The same stateful job run as a
new user configures it (Spark's default ``spark.sql.shuffle.partitions`` = 200 on a local[2]
session) and as streamwatch advises, on the same machine in the same run.

The job: a file source (``maxFilesPerTrigger`` 1, ``FILES`` small JSON files: one micro-batch
each) → ``groupBy(window(ts, 10 s), key).count()`` → the ``noop`` sink, ``availableNow``.

1. ``bad``: 200 shuffle partitions, a fresh checkpoint. streamwatch's rule
   (:func:`streamwatch.analysis.advice.shuffle_partitions`) is run on that checkpoint with the
   session's cores; it must say ``change`` and its ``target`` is the advised count.
2. ``advised``: the same job on a fresh checkpoint with the advised count.
3. ``repartitioned`` (the advice's other path, on the RocksDB state store, Spark 4.2+): a
   200-partition checkpoint runs ``FILES`` batches (``rocksdb 200``), is repartitioned offline
   to the advised count with ``spark._streamingCheckpointManager.repartition``, then runs
   ``FILES`` more batches on the same checkpoint (``rocksdb repartitioned``).

The arms alternate for ``ADVISE_BENCH_ROUNDS`` rounds (default 5). Per run: the median of its
batches' ``durationMs.triggerExecution`` (Spark's own batch time, from ``recentProgress``),
and batches per 20 s of busy time (20,000 ms × batches ÷ the sum of their batch times). Prints
per arm the median and the min over rounds, and the ratios bad ÷ advised. Not run in CI.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
FILES = int(os.environ.get("ADVISE_BENCH_FILES", "3"))
ROWS_PER_FILE = 200
BAD_PARTITIONS = 200
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


@dataclass
class Run:
    """One query run: its batch times (ms, triggerExecution) and what Spark reported."""

    batch_ms: list[int]
    shuffle_partitions: int

    @property
    def median_ms(self) -> float:
        return statistics.median(self.batch_ms)

    @property
    def per_20s(self) -> float:
        return 20_000 * len(self.batch_ms) / max(1, sum(self.batch_ms))


def write_files(folder: Path, start: int, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        rows = (json.dumps({"ts": f"2026-01-01T00:{(i * 7 + r) % 60:02d}:00Z", "key": f"k{r % 20}"})
                for r in range(ROWS_PER_FILE))
        (folder / f"part-{i:04d}.json").write_text("\n".join(rows) + "\n")


def run_job(spark, src: Path, cp: Path, partitions: int, provider: str) -> Run:
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))  # used on a fresh checkpoint only
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    df = (spark.readStream.schema("ts TIMESTAMP, key STRING").option("maxFilesPerTrigger", 1).json(str(src))
          .groupBy(F.window("ts", "10 seconds"), "key").count())
    q = (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert len(progress) == FILES, f"expected {FILES} batches with input, Spark reported {len(progress)}"
    reported = {o["numShufflePartitions"] for p in progress for o in p["stateOperators"]}
    assert len(reported) == 1, reported
    return Run([int(p["durationMs"]["triggerExecution"]) for p in progress], reported.pop())


def advised_target(cp: Path, cores: int) -> int:
    """streamwatch's advice on ``cp`` (it must say change) → the advised partition count."""
    from streamwatch.analysis.advice import Cores, Verdict, shuffle_partitions
    from streamwatch.checkpoint import read_checkpoint

    a = shuffle_partitions(read_checkpoint(str(cp)), (), Cores(cores, "local[2]"), ())
    assert a.verdict is Verdict.CHANGE and a.target is not None, a
    print(f"  streamwatch advises: {a.summary}; target {a.target}", flush=True)
    return a.target


def report(runs: dict[str, list[Run]]) -> None:
    print(f"\n{ROUNDS} alternated rounds, {FILES} batches a run, {ROWS_PER_FILE} rows a batch; "
          "batch time = Spark's durationMs.triggerExecution")
    for arm, rs in runs.items():
        meds = [r.median_ms for r in rs]
        rates = [r.per_20s for r in rs]
        print(f"  {arm:24s} partitions {rs[0].shuffle_partitions:>4}  batch ms median {statistics.median(meds):>8,.0f}"
              f"  min {min(meds):>8,.0f}   batches/20 s median {statistics.median(rates):>6.1f}  min {min(rates):>6.1f}")

    def ratio(slow: str, fast: str) -> None:
        m = statistics.median(r.median_ms for r in runs[slow]) / statistics.median(r.median_ms for r in runs[fast])
        lo = min(r.median_ms for r in runs[slow]) / min(r.median_ms for r in runs[fast])
        print(f"  ratio {slow} / {fast} batch time: {m:.1f}× (median), {lo:.1f}× (min)")

    ratio("bad (hdfs)", "advised (hdfs)")
    ratio("rocksdb 200", "rocksdb repartitioned")


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-bench-") as tmp:
        base = Path(tmp)
        src = base / "in"
        write_files(src, 0, FILES)
        print("starting Spark (local[2]) …", flush=True)
        spark, info = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False,
                                                   shuffle_partitions=BAD_PARTITIONS,
                                                   table_format=TableFormatDecision("parquet", "bench"),
                                                   conf={"spark.sql.streaming.stateStore.maintenanceInterval": "24h"}))
        cores = info.local_cores or 2
        runs: dict[str, list[Run]] = {k: [] for k in ("bad (hdfs)", "advised (hdfs)", "rocksdb 200",
                                                      "rocksdb repartitioned")}
        target = None
        try:
            for r in range(ROUNDS):
                bad_cp = base / f"bad-{r}"
                runs["bad (hdfs)"].append(run_job(spark, src, bad_cp, BAD_PARTITIONS, HDFS))
                target = target or advised_target(bad_cp, cores)
                runs["advised (hdfs)"].append(run_job(spark, src, base / f"advised-{r}", target, HDFS))
                rsrc, rcp = base / f"in-rocksdb-{r}", base / f"rocksdb-{r}"
                write_files(rsrc, 0, FILES)
                runs["rocksdb 200"].append(run_job(spark, rsrc, rcp, BAD_PARTITIONS, ROCKSDB))
                spark._streamingCheckpointManager.repartition(str(rcp), target)  # noqa: SLF001 - Spark 4.2's API
                write_files(rsrc, FILES, FILES)
                after = run_job(spark, rsrc, rcp, BAD_PARTITIONS, ROCKSDB)  # the session asks 200: the checkpoint wins
                assert after.shuffle_partitions == target, (after.shuffle_partitions, target)
                runs["rocksdb repartitioned"].append(after)
                print(f"  round {r + 1}/{ROUNDS} done", flush=True)
            report(runs)
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
