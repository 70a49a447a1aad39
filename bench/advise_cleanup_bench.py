"""Benchmark: is ``advise-file-source-cleanup``'s advice worth taking? A JSON file source →
``noop`` whose folder already holds ``ADVISE_CLEANUP_BENCH_FILES`` files it has read (default
10,000 tiny files), then a trickle of new files, one local[2] Spark in the same run.

Arms: ``off`` (no ``cleanSource``: the read files stay in the folder, as a user leaves it) and
``delete`` (``cleanSource=delete``, streamwatch's advice: Spark deletes each batch's files at
its commit, so the folder holds only what is unread). Each arm's checkpoint is made once: a
first micro-batch reads the N files, a second one more file (Spark commits a batch to the
source, and cleans its files, when it plans the next; the bench waits for the ``delete`` arm's
folder to hold only that file). streamwatch's rule
(:func:`streamwatch.analysis.advice_cleanup.file_source_cleanup`) then runs on each arm's
checkpoint and folder: it must say ``change`` for ``off`` and ``keep`` for ``delete``.

Rounds (``ADVISE_BENCH_ROUNDS``, default 5, arms alternated by ``bench.rounds``): the query is
restarted on the arm's checkpoint (``processingTime`` ``TRIGGER``), ``TRICKLE`` files land one
at a time, each waited for its micro-batch; the first is left out (the restart's warm-up).
Per run: the median over the trickle batches of Spark's own ``durationMs.latestOffset`` (the
file source lists its folder there: ``FileStreamSource.fetchMaxOffset``) and of
``durationMs.triggerExecution`` (the batch time). Per arm: the median and the min over rounds.
The machine's load average is printed before and after. Not run in CI.
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
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
FILES = int(os.environ.get("ADVISE_CLEANUP_BENCH_FILES", "10000"))
TRICKLE = 7
TRIGGER = "1 second"
ARMS = ("off", "delete")


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def write_files(folder: Path, start: int, n: int) -> None:
    """``n`` one-row JSON files, each written then renamed in (a file source never sees half a file)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        tmp = folder / f".f{i}.tmp"
        tmp.write_text(json.dumps({"key": f"k{i % 50}", "n": i}) + "\n")
        tmp.rename(folder / f"f{i:06d}.json")


def wait_for(cond: Callable[[], bool], deadline_s: float, what: str) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        time.sleep(0.05)


def start(spark: Any, src: Path, cp: Path, arm: str, **trigger: Any) -> Any:
    r = spark.readStream.schema("key STRING, n LONG")
    if arm != "off":
        r = r.option("cleanSource", arm)
    return (r.json(str(src)).writeStream.format("noop").option("checkpointLocation", str(cp))
            .trigger(**trigger).start())


def run_available(spark: Any, src: Path, cp: Path, arm: str) -> int:
    """One ``availableNow`` run; the rows (= files) Spark's progress says it read."""
    q = start(spark, src, cp, arm, availableNow=True)
    q.awaitTermination(1800)
    assert q.exception() is None, q.exception()
    return int(sum(p["numInputRows"] for p in q.recentProgress))


def setup(spark: Any, base: Path, arm: str) -> tuple[Path, Path]:
    """The arm's folder of ``FILES`` files and a checkpoint whose first batch read them all,
    then a second run reading one more file: Spark commits a batch to the source (and
    cleans its files) when it plans the next one."""
    src, cp = base / f"in-{arm}", base / f"cp-{arm}"
    write_files(src, 0, FILES)
    t0 = time.monotonic()
    read = run_available(spark, src, cp, arm)
    assert read == FILES, (arm, read)
    write_files(src, FILES, 1)
    assert run_available(spark, src, cp, arm) == 1
    if arm != "off":  # Spark's cleaner works on its own thread
        wait_for(lambda: sum(1 for _ in src.glob("f*.json")) == 1, 600, f"{arm}: the read files cleaned")
    print(f"  {arm}: first batch read {read:,} files, then 1, in {time.monotonic() - t0:,.0f} s; the folder holds "
          f"{sum(1 for _ in src.glob('f*.json')):,} files", flush=True)
    return src, cp


def judge(src: Path, cp: Path) -> Any:
    from streamwatch.analysis.advice_cleanup import file_source_cleanup, read_files_present
    from streamwatch.checkpoint import read_checkpoint

    c = read_checkpoint(str(cp))
    (a,) = file_source_cleanup(c, read_files_present(str(cp), c))
    return a


@dataclass
class Run:
    """One run's medians over its trickle batches (ms): Spark's latestOffset and triggerExecution."""

    latest_offset_ms: float
    batch_ms: float


def trickle_run(spark: Any, arms: dict[str, tuple[Path, Path]], arm: str, r: int) -> Run:
    src, cp = arms[arm]
    q = start(spark, src, cp, arm, processingTime=TRIGGER)
    try:
        for k in range(TRICKLE):
            write_files(src, FILES + 1_000 * (r + 1) + k, 1)
            want = k + 1
            wait_for(lambda: sum(1 for p in q.recentProgress if p["numInputRows"] > 0) >= want, 300,  # noqa: B023
                     f"{arm} round {r} file {k}")
        batches = [p for p in q.recentProgress if p["numInputRows"] > 0][1:]
    finally:
        q.stop()
    return Run(statistics.median(p["durationMs"]["latestOffset"] for p in batches),
               statistics.median(p["durationMs"]["triggerExecution"] for p in batches))


def main() -> None:
    from streamwatch.analysis.advice import Verdict
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-cleanup-bench-") as tmp:
        base = Path(tmp)
        print(f"load average {loadavg()} on {os.cpu_count()} cores; starting Spark (local[2]) …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False, shuffle_partitions=2,
                                                table_format=TableFormatDecision("parquet", "bench")))
        try:
            arms = {arm: setup(spark, base, arm) for arm in ARMS}
            verdicts = {arm: judge(*arms[arm]) for arm in ARMS}
            for arm, a in verdicts.items():
                print(f"  streamwatch on {arm}: {a.verdict.value} ({a.confidence.value}): {a.summary}", flush=True)
            assert verdicts["off"].verdict is Verdict.CHANGE, verdicts["off"]
            assert verdicts["delete"].verdict is Verdict.KEEP, verdicts["delete"]
            runs = alternate(ARMS, ROUNDS, lambda arm, r: trickle_run(spark, arms, arm, r))
        finally:
            spark.stop()
    print(f"\nfile source over a folder of {FILES:,} read files + a trickle ({TRICKLE - 1} batches judged a run, "
          f"trigger {TRIGGER}), {ROUNDS} alternated rounds; Spark's durationMs per batch, median of a run")
    for arm, rs in runs.items():
        lo, bt = Spread.of(x.latest_offset_ms for x in rs), Spread.of(x.batch_ms for x in rs)
        print(f"  cleanSource={arm:6s} latestOffset ms median {lo.median:7,.0f} min {lo.min:7,.0f}"
              f"   batch ms median {bt.median:7,.0f} min {bt.min:7,.0f}")
    print_ratio("off / delete latestOffset", [x.latest_offset_ms for x in runs["off"]],
                [x.latest_offset_ms for x in runs["delete"]])
    print_ratio("off / delete batch time", [x.batch_ms for x in runs["off"]], [x.batch_ms for x in runs["delete"]])
    print(f"  load average after: {loadavg()}")


if __name__ == "__main__":
    main()
