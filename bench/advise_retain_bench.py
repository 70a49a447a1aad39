"""Benchmark: is ``advise-min-batches-to-retain``'s advice worth taking? A stateful query (a JSON
file source, ``maxFilesPerTrigger`` 1, → ``groupBy(key).count()`` → ``noop``, update mode,
HDFS-backed state, 2 shuffle partitions) run for ``ADVISE_RETAIN_BENCH_BATCHES`` micro-batches
(default 120, one file each, ``availableNow``) on a fresh checkpoint, one local[2] Spark in the
same run.

Arms: ``100`` (``spark.sql.streaming.minBatchesToRetain`` left at Spark's default) and ``10``
(streamwatch's advice). State maintenance runs every second here
(``spark.sql.streaming.stateStore.maintenanceInterval`` 1s, both arms), standing in for a query
that has run long enough for the default 60 s timer to have fired many times.

Rounds (``ADVISE_BENCH_ROUNDS``, default 5, arms alternated by ``bench.rounds``): per run, the
checkpoint's files and bytes once the query has stopped (a walk of the folder: every file,
Hadoop's ``.crc`` files included) and the median of Spark's ``durationMs.triggerExecution``
over the run's last 100 progress events (``recentProgress``). streamwatch's rule
(:func:`streamwatch.analysis.advice_retain.min_batches_to_retain`) then runs on the last
round's checkpoints: it must say ``change`` for ``100`` and ``keep`` for ``10``. The machine's
load average is printed before and after. Not run in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
BATCHES = int(os.environ.get("ADVISE_RETAIN_BENCH_BATCHES", "120"))
ROWS = 200  # rows a file; keys k0..k(ROWS-1), a new key range each file so the state grows
ARMS = (100, 10)


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def write_files(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        rows = "".join(json.dumps({"key": f"k{i * ROWS + j}", "n": j}) + "\n" for j in range(ROWS))
        (folder / f"f{i:06d}.json").write_text(rows)


def walk(cp: Path) -> tuple[int, int]:
    """(files, bytes) under ``cp``."""
    files = size = 0
    for dirpath, _, names in os.walk(cp):
        for n in names:
            files += 1
            size += os.path.getsize(os.path.join(dirpath, n))
    return files, size


@dataclass
class Run:
    """One run: the checkpoint's files and bytes after it, the median batch time (ms)."""

    files: int
    bytes: int
    batch_ms: float
    batches: int


def run(spark: Any, src: Path, cp: Path, retain: int) -> Run:
    shutil.rmtree(cp, ignore_errors=True)
    spark.conf.set("spark.sql.streaming.minBatchesToRetain", str(retain))
    df = spark.readStream.schema("key STRING, n LONG").option("maxFilesPerTrigger", 1).json(str(src))
    q = (df.groupBy("key").count().writeStream.format("noop").outputMode("update")
         .option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination(1800)
    assert q.exception() is None, q.exception()
    progress = q.recentProgress
    batches = len(list((cp / "commits").glob("[0-9]*"))) and max(int(p.name) for p in (cp / "commits").glob("[0-9]*")) + 1
    assert batches == BATCHES, (retain, batches)
    files, size = walk(cp)
    return Run(files, size, statistics.median(p["durationMs"]["triggerExecution"] for p in progress), batches)


def judge(cp: Path) -> Any:
    from streamwatch.analysis.advice_retain import min_batches_to_retain, retained_files
    from streamwatch.checkpoint import read_checkpoint

    c = read_checkpoint(str(cp))
    return min_batches_to_retain(c, retained_files(str(cp), c))


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-retain-bench-") as tmp:
        base = Path(tmp)
        print(f"load average {loadavg()} on {os.cpu_count()} cores; starting Spark (local[2]) …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False, shuffle_partitions=2,
                                                table_format=TableFormatDecision("parquet", "bench")))
        try:
            spark.conf.set("spark.sql.streaming.stateStore.maintenanceInterval", "1s")
            src = base / "in"
            write_files(src, BATCHES)
            t0 = time.monotonic()
            runs = alternate(ARMS, ROUNDS, lambda arm, r: run(spark, src, base / f"cp-{arm}", arm))
            took = time.monotonic() - t0
        finally:
            spark.stop()
        print(f"\nstateful query, {BATCHES} micro-batches of one {ROWS}-row file a run (availableNow), {ROUNDS} "
              f"alternated rounds in {took:,.0f} s; checkpoint walked after each run")
        for arm, rs in runs.items():
            fl, by, bt = (Spread.of(x.files for x in rs), Spread.of(x.bytes for x in rs),
                          Spread.of(x.batch_ms for x in rs))
            print(f"  minBatchesToRetain={arm:<4d} files median {fl.median:6,.0f} min {fl.min:6,.0f}   bytes median "
                  f"{by.median:10,.0f} min {by.min:10,.0f}   batch ms median {bt.median:6,.0f} min {bt.min:6,.0f}")
        print_ratio("100 / 10 checkpoint files", [x.files for x in runs[100]], [x.files for x in runs[10]])
        print_ratio("100 / 10 checkpoint bytes", [x.bytes for x in runs[100]], [x.bytes for x in runs[10]])
        print_ratio("100 / 10 batch time", [x.batch_ms for x in runs[100]], [x.batch_ms for x in runs[10]], 2)
        print(f"  load average after: {loadavg()}", flush=True)
        from streamwatch.analysis.advice import Verdict

        verdicts = {arm: judge(base / f"cp-{arm}") for arm in ARMS}
        for arm, a in verdicts.items():
            print(f"  streamwatch on {arm}: {a.verdict.value} ({a.confidence.value}): {a.summary}", flush=True)
        assert verdicts[100].verdict is Verdict.CHANGE, verdicts[100]
        assert verdicts[10].verdict is Verdict.KEEP, verdicts[10]


if __name__ == "__main__":
    main()
