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

The arms alternate (reversed every other round; round 0 runs ``bad`` first, which gives the
target) for ``ADVISE_BENCH_ROUNDS`` rounds (default 5). Per run: the median of its
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

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
        ms, rate = Spread.of(r.median_ms for r in rs), Spread.of(r.per_20s for r in rs)
        print(f"  {arm:24s} partitions {rs[0].shuffle_partitions:>4}  batch ms median {ms.median:>8,.0f}"
              f"  min {ms.min:>8,.0f}   batches/20 s median {rate.median:>6.1f}  min {rate.min:>6.1f}")
    for slow, fast in (("bad (hdfs)", "advised (hdfs)"), ("rocksdb 200", "rocksdb repartitioned")):
        print_ratio(f"{slow} / {fast} batch time", (r.median_ms for r in runs[slow]),
                    (r.median_ms for r in runs[fast]))


@dataclass
class Arms:
    """The arms on one session, each a round's job on fresh checkpoints → its runs by name.
    ``target`` (the advised partition count) is set by the first ``bad`` run."""

    spark: Any  # pyspark.sql.SparkSession
    base: Path
    src: Path
    cores: int
    target: int | None = None

    def _target(self) -> int:
        assert self.target is not None, "round 0 runs bad first: it gives the target"
        return self.target

    def bad(self, r: int) -> dict[str, Run]:
        cp = self.base / f"bad-{r}"
        run = run_job(self.spark, self.src, cp, BAD_PARTITIONS, HDFS)
        if self.target is None:
            self.target = advised_target(cp, self.cores)
        return {"bad (hdfs)": run}

    def advised(self, r: int) -> dict[str, Run]:
        return {"advised (hdfs)": run_job(self.spark, self.src, self.base / f"advised-{r}", self._target(), HDFS)}

    def rocksdb(self, r: int) -> dict[str, Run]:
        """200 partitions on RocksDB, repartitioned offline to the target, run on again."""
        target = self._target()
        rsrc, rcp = self.base / f"in-rocksdb-{r}", self.base / f"rocksdb-{r}"
        write_files(rsrc, 0, FILES)
        before = run_job(self.spark, rsrc, rcp, BAD_PARTITIONS, ROCKSDB)
        self.spark._streamingCheckpointManager.repartition(str(rcp), target)  # noqa: SLF001 - Spark 4.2's API
        write_files(rsrc, FILES, FILES)
        after = run_job(self.spark, rsrc, rcp, BAD_PARTITIONS, ROCKSDB)  # the session asks 200: the checkpoint wins
        assert after.shuffle_partitions == target, (after.shuffle_partitions, target)
        return {"rocksdb 200": before, "rocksdb repartitioned": after}


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
        arms = Arms(spark, base, src, info.local_cores or 2)
        try:
            by_arm = alternate((arms.bad, arms.advised, arms.rocksdb), ROUNDS, lambda arm, r: arm(r))
            runs: dict[str, list[Run]] = {}
            for per_round in by_arm.values():
                for named in per_round:
                    for name, run in named.items():
                        runs.setdefault(name, []).append(run)
            report(runs)
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
