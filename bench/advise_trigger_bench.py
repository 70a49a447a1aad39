"""Benchmark: is ``advise-trigger-interval``'s advice worth taking? Two jobs made for the rule,
each run as a user configures it badly and as streamwatch advises, on one local[2] Spark in
the same run, the arms alternated (``bench.rounds``) for ``ADVISE_BENCH_ROUNDS`` rounds
(default 5); per arm the median and the min over rounds.

(b) ``idle``: a JSON file source → ``noop``, the source idle after its first file. Arms: no
query at all (the JVM's floor), the default trigger (Spark polls every
``spark.sql.streaming.pollingDelay``, 10 ms, while idle), ``processingTime=100ms`` (the bad
configuration) and the interval streamwatch advises. streamwatch's rule
(:func:`streamwatch.analysis.advice_trigger.trigger_interval`) runs first on the checkpoint of a 100 ms
run that idled ``IDLE_WINDOW_S`` between two files; it must say ``change``, its ``target`` is
the advised interval. Per run: the Spark JVM's CPU seconds (``utime + stime`` of
``/proc/<pid>/stat``, the JVM pyspark launched) over ``IDLE_WINDOW_S`` of wall time with the
source idle, then the latency of one more file: Spark's commit of the batch that read it
(progress ``timestamp`` + ``durationMs.triggerExecution``) − the wall clock when it landed.

(a) ``behind``: a JSON file source → ``groupBy(window(ts, 10 s), key).count()`` → ``noop``,
``BEHIND_PARTITIONS`` shuffle partitions, a file landing every ``LAND_EVERY_S`` for
``LAND_FOR_S``; ``processingTime=500ms`` (batches take longer: back to back) against the
interval the rule advises from the bad run's progress. Per run: the share of batches started
on the interval (progress ``timestamp`` within ``ON_TIME_SLACK`` of the interval of a multiple
of it: Spark's ``ProcessingTimeExecutor`` starts a trigger there unless the previous batch
overran), each file's latency (the batch that read it, from the cumulative ``numInputRows``
in landing order: a file source reads the oldest files first), the batches run and the JVM's
CPU seconds until every row is processed. Not run in CI.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
PART = os.environ.get("ADVISE_BENCH_PART", "both")  # idle | behind | both
IDLE_WINDOW_S = float(os.environ.get("ADVISE_BENCH_IDLE_S", "15"))
BAD_IDLE, BAD_BEHIND = "100ms", "500ms"
ROWS_PER_FILE = 200
BEHIND_PARTITIONS = 4
LAND_EVERY_S, LAND_FOR_S = 0.5, 20.0
ON_TIME_SLACK = 0.05
TICK = os.sysconf("SC_CLK_TCK")


def jvm_cpu_s(pid: int) -> float:
    """utime + stime of process ``pid`` (s), from ``/proc/<pid>/stat`` (fields 14 and 15)."""
    rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICK


def land(folder: Path, i: int) -> float:
    """Writes ``part-<i>.json`` atomically (a rename); returns the wall clock (s) at the rename."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = (json.dumps({"ts": f"2026-01-01T00:{(i * 7 + r) % 60:02d}:00Z", "key": f"k{r % 20}"})
            for r in range(ROWS_PER_FILE))
    tmp = folder / f".part-{i:05d}.tmp"
    tmp.write_text("\n".join(rows) + "\n")
    tmp.rename(folder / f"part-{i:05d}.json")
    return time.time()


def commit_s(p: dict[str, Any]) -> float:
    """A progress event's batch end (s): its ``timestamp`` (the trigger's start) + triggerExecution."""
    from streamwatch.model.sparkjson import iso_to_epoch_ms

    start = iso_to_epoch_ms(p["timestamp"])
    assert start is not None, p["timestamp"]
    return float(start + int(p["durationMs"]["triggerExecution"])) / 1000


def wait_for(cond: Callable[[], bool], deadline_s: float, what: str) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        time.sleep(0.05)


def start(spark: Any, src: Path, cp: Path, trigger: str, stateful: bool) -> Any:
    from pyspark.sql import functions as F

    from streamwatch.analysis.triggers import parse_trigger

    df = spark.readStream.schema("ts TIMESTAMP, key STRING").json(str(src))
    if stateful:
        df = df.groupBy(F.window("ts", "10 seconds"), "key").count()
    w = (df.writeStream.format("noop").outputMode("update" if stateful else "append")
         .option("checkpointLocation", str(cp)))
    kwargs = parse_trigger(trigger).kwargs()
    return (w.trigger(**kwargs) if kwargs else w).start()  # pyspark refuses trigger() without arguments


def data_batches(q: Any) -> list[dict[str, Any]]:
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


@dataclass
class IdleRun:
    """One idle run: the JVM's CPU seconds over the idle window, one file's latency (s)."""

    cpu_s: float
    latency_s: float | None


def idle_run(spark: Any, pid: int, base: Path, arm: str, r: int) -> IdleRun:
    if arm == "no query":
        c0 = jvm_cpu_s(pid)
        time.sleep(IDLE_WINDOW_S)  # the measure is CPU over a fixed wall time
        return IdleRun(jvm_cpu_s(pid) - c0, None)
    src, cp = base / f"idle-in-{arm}-{r}", base / f"idle-cp-{arm}-{r}"
    land(src, 0)
    q = start(spark, src, cp, arm, stateful=False)
    try:
        wait_for(lambda: len(data_batches(q)) >= 1, 120, "batch 0")
        c0 = jvm_cpu_s(pid)
        time.sleep(IDLE_WINDOW_S)  # the measure is CPU over a fixed wall time
        cpu = jvm_cpu_s(pid) - c0
        landed = land(src, 1)
        wait_for(lambda: len(data_batches(q)) >= 2, 300, "batch 1")
        return IdleRun(cpu, commit_s(data_batches(q)[1]) - landed)
    finally:
        q.stop()


def idle_target(spark: Any, base: Path) -> str:
    """A 100 ms run that idles between two files; streamwatch's rule on its checkpoint → the advised spec."""
    from streamwatch.analysis.advice import Verdict, checkpoint_durations
    from streamwatch.analysis.advice_trigger import interval_text, trigger_interval
    from streamwatch.analysis.triggers import parse_trigger
    from streamwatch.checkpoint import read_checkpoint

    idle_run(spark, spark_pid(spark), base / "derive", BAD_IDLE, 0)
    cp = base / "derive" / f"idle-cp-{BAD_IDLE}-0"
    c = read_checkpoint(str(cp))
    mtimes = {b: (cp / "commits" / str(b)).stat().st_mtime_ns // 1_000_000 for b in c.commit_batch_ids}
    a = trigger_interval(parse_trigger(BAD_IDLE), c, checkpoint_durations(c, mtimes))
    assert a.verdict is Verdict.CHANGE and a.target is not None, a
    print(f"  streamwatch advises: {a.summary}; target {interval_text(a.target)}", flush=True)
    return interval_text(a.target)


def idle_part(spark: Any, pid: int, base: Path) -> None:
    advised = idle_target(spark, base)
    arms = ("no query", "default", BAD_IDLE, advised)
    runs = alternate(arms, ROUNDS, lambda arm, r: idle_run(spark, pid, base, arm, r))
    print(f"\n(b) idle file source, {ROUNDS} alternated rounds; JVM CPU over {IDLE_WINDOW_S:.0f} s idle "
          "(/proc/<pid>/stat), then one file's latency (landing → Spark's commit)")
    for arm, rs in runs.items():
        cpu = Spread.of(x.cpu_s for x in rs)
        lat = [x.latency_s for x in rs if x.latency_s is not None]
        line = f"  {arm:10s} JVM CPU s median {cpu.median:6.2f} min {cpu.min:6.2f}"
        if lat:
            ls = Spread.of(lat)
            line += f"   file latency s median {ls.median:6.2f} min {ls.min:6.2f}"
        print(line)
    floor = [x.cpu_s for x in runs["no query"]]
    for arm in ("default", BAD_IDLE, advised):
        extra = [x.cpu_s - f for x, f in zip(runs[arm], floor, strict=True)]
        print(f"  {arm:10s} CPU above the floor s median {statistics.median(extra):6.2f}"
              f"  ({statistics.median(extra) / IDLE_WINDOW_S:.1%} of a core)")
    print_ratio(f"{BAD_IDLE} / {advised} JVM CPU", [x.cpu_s for x in runs[BAD_IDLE]], [x.cpu_s for x in runs[advised]], 2)
    print_ratio(f"default / {advised} JVM CPU", [x.cpu_s for x in runs["default"]], [x.cpu_s for x in runs[advised]], 2)


@dataclass
class BehindRun:
    """One behind run: batches, their share started on the interval, file latencies (s), CPU s."""

    batches: int
    on_time: float
    latency_s: float
    cpu_s: float
    batch_ms: float
    progress: list[dict[str, Any]]


def behind_run(spark: Any, pid: int, base: Path, arm: str, r: int) -> BehindRun:
    from streamwatch.analysis.triggers import parse_trigger
    from streamwatch.model.sparkjson import iso_to_epoch_ms

    src, cp = base / f"behind-in-{arm}-{r}", base / f"behind-cp-{arm}-{r}"
    src.mkdir(parents=True)
    n = int(LAND_FOR_S / LAND_EVERY_S)
    landed: list[float] = []

    def landing() -> None:
        t0 = time.monotonic()
        for i in range(n):
            time.sleep(max(0.0, t0 + i * LAND_EVERY_S - time.monotonic()))
            landed.append(land(src, i))

    c0 = jvm_cpu_s(pid)
    q = start(spark, src, cp, arm, stateful=True)
    lander = threading.Thread(target=landing)
    lander.start()
    try:
        lander.join()
        wait_for(lambda: sum(p["numInputRows"] for p in q.recentProgress) >= n * ROWS_PER_FILE, 300, "all rows")
        cpu = jvm_cpu_s(pid) - c0
        progress = data_batches(q)
    finally:
        q.stop()
    interval = parse_trigger(arm).interval_ms or 1
    starts = [iso_to_epoch_ms(p["timestamp"]) or 0 for p in progress]
    on_time = sum(1 for s in starts if min(s % interval, interval - s % interval) <= ON_TIME_SLACK * interval)
    return BehindRun(len(progress), on_time / len(progress), statistics.median(file_latencies(progress, landed)),
                     cpu, statistics.median(p["durationMs"]["triggerExecution"] for p in progress), progress)


def file_latencies(progress: Sequence[dict[str, Any]], landed: Sequence[float]) -> list[float]:
    """Per landed file: the end of the batch that read it − its landing (s). Batch k read the
    files from the cumulative ``numInputRows`` before it to its own (oldest first)."""
    out, seen = [], 0
    for p in progress:
        files = p["numInputRows"] // ROWS_PER_FILE
        out += [commit_s(p) - t for t in landed[seen:seen + files]]
        seen += files
    return out


def behind_part(spark: Any, pid: int, base: Path) -> None:
    from streamwatch.analysis.advice import Verdict, progress_durations
    from streamwatch.analysis.advice_trigger import interval_text, trigger_interval
    from streamwatch.analysis.triggers import parse_trigger
    from streamwatch.model.events import QueryProgress

    spark.conf.set("spark.sql.shuffle.partitions", str(BEHIND_PARTITIONS))
    derive = behind_run(spark, pid, base / "derive", BAD_BEHIND, 0)
    print(f"  derive run: {derive.batches} batches, median {derive.batch_ms:,.0f} ms", flush=True)
    progress = [QueryProgress.from_dict(p) for p in derive.progress]
    a = trigger_interval(parse_trigger(BAD_BEHIND), None, progress_durations(progress))
    assert a.verdict is Verdict.CHANGE and a.target is not None, a
    advised = interval_text(a.target)
    print(f"  streamwatch advises: {a.summary}; target {advised}", flush=True)
    runs = alternate((BAD_BEHIND, advised), ROUNDS, lambda arm, r: behind_run(spark, pid, base, arm, r))
    print(f"\n(a) batches longer than the interval, {ROUNDS} alternated rounds, a file every {LAND_EVERY_S} s "
          f"for {LAND_FOR_S:.0f} s, {BEHIND_PARTITIONS} shuffle partitions")
    for arm, rs in runs.items():
        print(f"  {arm:6s} batches median {statistics.median(x.batches for x in rs):5.1f}"
              f"  on the interval median {statistics.median(x.on_time for x in rs):5.0%}"
              f"  batch ms median {statistics.median(x.batch_ms for x in rs):7,.0f}"
              f"  file latency s median {Spread.of(x.latency_s for x in rs).median:6.2f} min {Spread.of(x.latency_s for x in rs).min:6.2f}"
              f"  JVM CPU s median {Spread.of(x.cpu_s for x in rs).median:6.1f} min {Spread.of(x.cpu_s for x in rs).min:6.1f}")
    print_ratio(f"{BAD_BEHIND} / {advised} JVM CPU", [x.cpu_s for x in runs[BAD_BEHIND]], [x.cpu_s for x in runs[advised]], 2)
    print_ratio(f"{BAD_BEHIND} / {advised} file latency", [x.latency_s for x in runs[BAD_BEHIND]],
                [x.latency_s for x in runs[advised]], 2)


def spark_pid(spark: Any) -> int:
    """The pid of the JVM pyspark launched (spark-submit ``exec``s into java)."""
    pid = int(spark.sparkContext._gateway.proc.pid)  # noqa: SLF001 - pyspark's own handle
    comm = Path(f"/proc/{pid}/comm").read_text().strip()
    assert comm == "java", f"pid {pid} is {comm!r}, not the JVM"
    return pid


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    with tempfile.TemporaryDirectory(prefix="advise-trigger-bench-") as tmp:
        base = Path(tmp)
        print("starting Spark (local[2]) …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False, shuffle_partitions=2,
                                                table_format=TableFormatDecision("parquet", "bench"),
                                                conf={"spark.sql.streaming.stateStore.maintenanceInterval": "24h"}))
        pid = spark_pid(spark)
        try:
            if PART in ("idle", "both"):
                idle_part(spark, pid, base)
            if PART in ("behind", "both"):
                behind_part(spark, pid, base)
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
