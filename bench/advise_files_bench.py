"""Benchmark: is ``advise-max-files-per-trigger``'s advice worth taking? A file source with a
backlog, read as a new user configures it (no ``maxFilesPerTrigger``: the first micro-batch
reads every file) and as streamwatch advises, on the same machine in the same run.

The job: a file source over ``BACKLOG`` small JSON files (``ROWS_PER_FILE`` rows each) →
``groupBy(window(ts, 10 s), key).count()`` → the ``noop`` sink, 4 shuffle partitions.

1. ``derive``: the job without a limit (processing-time trigger) reads the backlog in its first
   batch, then ``LATER`` batches of ``ARRIVING`` files landed one batch at a time. streamwatch's
   rule (:func:`streamwatch.analysis.advice_files.max_files_per_trigger`) on that checkpoint must say
   ``change``; its ``target`` is the advised limit.
2. ``no limit`` and ``advised`` (``maxFilesPerTrigger`` = target) alternate for
   ``ADVISE_BENCH_ROUNDS`` rounds (default 5), each on a fresh checkpoint over the same
   backlog, ``availableNow`` (run to the end of the backlog, then stop).

Per run: time to the first committed batch (the first progress event's ``timestamp`` +
``durationMs.triggerExecution`` − the wall clock at ``start()``), the longest batch
(``triggerExecution``) and the time to drain the backlog (``start()`` to the query's end).
Prints per arm the median and the min over rounds, and the ratios.

Verdict (b), a limit that keeps a backlog from draining (``ADVISE_BENCH_PART=backlog``; both
parts by default): the job with ``maxFilesPerTrigger`` = ``FLOW_LIMIT`` and a 2 s trigger over
a folder where ``FLOW_RATE`` files land a second; ``streamwatch advise`` (the CLI: it lists
the source folder for the backlog) on that checkpoint must say ``change``; then the low limit
and the advised one alternate, each run landing the same files on a fresh checkpoint. Per
run: the backlog when the landing stops (files landed − files Spark read, from the progress
``numInputRows``). Not run in CI.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
BACKLOG = int(os.environ.get("ADVISE_BENCH_BACKLOG", "200"))
ROWS_PER_FILE = 50
ARRIVING = 10
LATER = 3
#: Verdict (b)'s job: files at start, files landed a second, seconds of landing, the too-low limit.
FLOW_START, FLOW_RATE, FLOW_SECONDS, FLOW_LIMIT = 20, 2, 45, 2
PART = os.environ.get("ADVISE_BENCH_PART", "both")  # first | backlog | both


@dataclass
class Run:
    """One query run: ms to the first committed batch, its batch times and ms to drain."""

    first_ms: int
    batch_ms: list[int]
    drain_ms: int
    files_per_batch: list[int]


def write_files(folder: Path, start: int, count: int) -> None:
    """``count`` JSON files, each written under a hidden name then renamed (Spark lists no
    half-written file)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        rows = (json.dumps({"ts": f"2026-01-01T00:{(i * 7 + r) % 60:02d}:{r % 60:02d}Z", "key": f"k{r % 20}"})
                for r in range(ROWS_PER_FILE))
        tmp = folder / f".part-{i:05d}.json.tmp"
        tmp.write_text("\n".join(rows) + "\n")
        tmp.rename(folder / f"part-{i:05d}.json")


def query(spark, src: Path, cp: Path, limit: int | None, available_now: bool):
    from pyspark.sql import functions as F

    reader = spark.readStream.schema("ts TIMESTAMP, key STRING")
    if limit is not None:
        reader = reader.option("maxFilesPerTrigger", limit)
    df = reader.json(str(src)).groupBy(F.window("ts", "10 seconds"), "key").count()
    w = df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
    w = w.trigger(availableNow=True) if available_now else w.trigger(processingTime="500 milliseconds")
    return w.start()


def _end_ms(p: dict) -> int:
    ts = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
    return int(ts * 1000) + int(p["durationMs"]["triggerExecution"])


def run_job(spark, src: Path, cp: Path, limit: int | None) -> Run:
    t0 = time.time()
    q = query(spark, src, cp, limit, available_now=True)
    q.awaitTermination()
    drain = int((time.time() - t0) * 1000)
    assert q.exception() is None, q.exception()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert sum(p["numInputRows"] for p in progress) == BACKLOG * ROWS_PER_FILE, "the backlog was not all read"
    return Run(_end_ms(progress[0]) - int(t0 * 1000), [int(p["durationMs"]["triggerExecution"]) for p in progress],
               drain, [p["numInputRows"] // ROWS_PER_FILE for p in progress])


def _wait_batches(q, n: int, deadline_s: float = 600) -> None:
    end = time.time() + deadline_s
    while sum(1 for p in q.recentProgress if p["numInputRows"] > 0) < n:
        assert time.time() < end and q.exception() is None, "the query stalled"
        time.sleep(0.2)


def derive_target(spark, base: Path) -> int:
    """The bad job as it runs in production: the backlog, then a few small arrivals; then
    streamwatch's rule on its checkpoint → the advised limit."""
    from streamwatch.analysis.advice import Verdict, progress_durations
    from streamwatch.analysis.advice_files import max_files_per_trigger
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.model.events import QueryProgress

    src, cp = base / "derive-in", base / "derive-cp"
    write_files(src, 0, BACKLOG)
    q = query(spark, src, cp, None, available_now=False)
    try:
        _wait_batches(q, 1)
        for k in range(LATER):
            write_files(src, BACKLOG + k * ARRIVING, ARRIVING)
            _wait_batches(q, k + 2)
        progress = [QueryProgress.from_dict(p) for p in q.recentProgress]
    finally:
        q.stop()
    (a,) = max_files_per_trigger(read_checkpoint(str(cp)), progress_durations(progress))
    print(f"  streamwatch advises: {a.summary}; target {a.target}", flush=True)
    for e in a.evidence:
        print(f"    evidence: {e.text}", flush=True)
    assert a.verdict is Verdict.CHANGE and a.target is not None, a
    return a.target


def report(runs: dict[str, list[Run]]) -> None:
    print(f"\n{ROUNDS} alternated rounds; backlog {BACKLOG} files of {ROWS_PER_FILE} rows; availableNow; "
          "times from Spark's progress (first batch end) and the wall clock (drain)")
    for arm, rs in runs.items():
        first, drain = Spread.of(r.first_ms for r in rs), Spread.of(r.drain_ms for r in rs)
        print(f"  {arm:10s} files/batch {rs[0].files_per_batch[0]:>4} × {len(rs[0].batch_ms):>3}"
              f"  first batch committed ms median {first.median:>8,.0f} min {first.min:>8,.0f}"
              f"  longest batch ms median {statistics.median(max(r.batch_ms) for r in rs):>8,.0f}"
              f"  drain ms median {drain.median:>8,.0f} min {drain.min:>8,.0f}")
    measures: tuple[tuple[str, Callable[[Run], int]], ...] = (
        ("time to first committed batch", lambda r: r.first_ms),
        ("longest batch", lambda r: max(r.batch_ms)),
        ("time to drain", lambda r: r.drain_ms))
    bad, good = runs["no limit"], runs["advised"]
    for what, measure in measures:
        print_ratio(f"no limit / advised {what}", map(measure, bad), map(measure, good), digits=2)


@dataclass
class Flow:
    """One run of the steady-arrival job: files landed and read, and the backlog at the end."""

    landed: int
    read: int
    batches: int

    @property
    def backlog(self) -> int:
        return self.landed - self.read


def flow_job(spark, base: Path, name: str, limit: int) -> tuple[Flow, Path]:
    """The job with ``maxFilesPerTrigger`` = ``limit``, a 2 s processing-time trigger, over a
    folder holding ``FLOW_START`` files where ``FLOW_RATE`` files land a second for
    ``FLOW_SECONDS`` s. Stops when the landing does; returns the run and its checkpoint."""
    from pyspark.sql import functions as F

    src, cp = base / f"{name}-in", base / f"{name}-cp"
    write_files(src, 0, FLOW_START)
    df = (spark.readStream.schema("ts TIMESTAMP, key STRING").option("maxFilesPerTrigger", limit).json(str(src))
          .groupBy(F.window("ts", "10 seconds"), "key").count())
    q = (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
         .trigger(processingTime="2 seconds").start())
    n = FLOW_START
    try:
        for _ in range(FLOW_SECONDS):
            tick = time.time()
            write_files(src, n, FLOW_RATE)
            n += FLOW_RATE
            time.sleep(max(0.0, 1 - (time.time() - tick)))  # a bench paces its arrivals; not a test
    finally:
        q.stop()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    return Flow(n, sum(p["numInputRows"] for p in progress) // ROWS_PER_FILE, len(progress)), cp


def backlog_part(spark, base: Path) -> None:
    """Verdict (b): a limit below the arrival rate; streamwatch's advice (the CLI, which lists
    the source folder for the backlog) on that checkpoint must say raise it; then both alternate."""
    from click.testing import CliRunner

    from streamwatch.cli import main as cli

    bad, cp = flow_job(spark, base, "flow-derive", FLOW_LIMIT)
    r = CliRunner().invoke(cli, ["advise", str(cp), "--json"])
    (a,) = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-max-files-per-trigger"]
    print(f"  streamwatch advises: {a['summary']}; target {a['target']}", flush=True)
    for e in a["evidence"]:
        print(f"    evidence: {e['what']}: {e['value']} {e['unit']} ({e['source']})", flush=True)
    assert a["verdict"] == "change" and a["target"] is not None, a
    limits: dict[str, int] = {f"limit {FLOW_LIMIT}": FLOW_LIMIT, f"advised {a['target']}": a["target"]}
    runs = alternate(list(limits), ROUNDS,
                     lambda arm, r: flow_job(spark, base, f"flow-{limits[arm]}-{r}", limits[arm])[0])
    print(f"\n{ROUNDS} alternated rounds; {FLOW_START} files, then {FLOW_RATE} files/s for {FLOW_SECONDS} s; "
          "backlog at the end = files landed − files Spark read (progress numInputRows)")
    for arm, fs in runs.items():
        backlog = Spread.of(f.backlog for f in fs)
        print(f"  {arm:12s} backlog at end median {backlog.median:>6,.0f}"
              f" min {backlog.min:>6,.0f}  files read median {statistics.median(f.read for f in fs):>6,.0f}"
              f" of {fs[0].landed}  batches median {statistics.median(f.batches for f in fs):>4,.0f}")
    bad_b, good_b = (statistics.median(f.backlog for f in fs) for fs in runs.values())
    print(f"  backlog at end: {bad_b:,.0f} → {good_b:,.0f} files")


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-files-bench-") as tmp:
        base = Path(tmp)
        print("starting Spark (local[2]) …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False,
                                                shuffle_partitions=4,
                                                table_format=TableFormatDecision("parquet", "bench")))
        try:
            if PART in ("backlog", "both"):
                backlog_part(spark, base)
            if PART == "backlog":
                return
            target = derive_target(spark, base)
            src = base / "in"
            write_files(src, 0, BACKLOG)
            limits: dict[str, int | None] = {"no limit": None, "advised": target}
            report(alternate(list(limits), ROUNDS,
                             lambda arm, r: run_job(spark, src, base / f"{arm.replace(' ', '-')}-{r}", limits[arm])))
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
