"""Listener overhead and event-log parsing throughput.

1. The same availableNow workload (many small micro-batches, so many listener events) run
   without a listener, with ``streamwatch.record``, and — the named alternative — with the
   same recording fed the PySpark way (``StreamingQueryListener`` as PySpark wraps it, which
   converts each Java event field by field over Py4J), alternated in one run; prints each
   wall-time ratio against no listener. Target: ``streamwatch.record`` overhead <= 2 %.
   A fourth variant records with an extra sink that blocks for the whole run (a 16-event
   queue): the query must not slow down, and the events that do not fit are dropped, counted.
2. Event-log parsing (``read_event_log``) in MB/s against a plain ``json.loads`` loop over the
   same file, in the same run. Target: >= 3x.

``BENCH_FILES`` (micro-batches, default 100: about 20 s a run on 2 cores) and ``BENCH_ROWS``
(rows per file, default 20000) size the workload; ``BENCH_ROUNDS`` (default 3) rounds of the
three variants, in a rotating order.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamwatch.spark.listener import PublishingListener

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


VARIANTS = ("none", "record", "pyspark", "blocked")


def _land(src: Path, files: int, rows: int) -> None:
    """``files`` JSON-lines files of ``rows`` rows ``{"k": 0..999, "v": j}`` (seeded)."""
    src.mkdir()
    rnd = random.Random(7)
    for i in range(files):
        (src / f"f{i:04d}.json").write_text(
            "\n".join(json.dumps({"k": rnd.randrange(1000), "v": j}) for j in range(rows)))


@dataclass
class _Workload:
    """The availableNow workload over ``src`` on one session, run once per :meth:`run` call on a
    fresh checkpoint; keeps each variant's driver CPU seconds and the blocked runs' drops."""

    spark: Any  # pyspark.sql.SparkSession
    tmp: Path
    src: Path
    files: int
    listener: type[PublishingListener]
    pyspark_route: type[PublishingListener]  # the same listener through PySpark's wrapper
    runs: int = 0
    cpus: dict[str, list[float]] = field(default_factory=lambda: {v: [] for v in VARIANTS})
    drops: list[int] = field(default_factory=list)

    def run(self, variant: str) -> float:
        """Wall seconds of one run with ``variant``'s listener; checks what it recorded."""
        import streamwatch
        import streamwatch.spark.record as record_mod

        self.runs += 1
        rec = None
        release = threading.Event()
        if variant != "none":
            record_mod.PublishingListener = self.pyspark_route if variant == "pyspark" else self.listener
            blocked = variant == "blocked"
            rec = streamwatch.record(self.spark, self.tmp / f"rec{self.runs}.jsonl", capacity=16 if blocked else 10_000,
                                     sinks=(lambda e: release.wait(),) if blocked else ())
        t0, cpu0 = time.perf_counter(), time.process_time()
        q = (self.spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(self.src))
             .groupBy("k").count().writeStream.outputMode("update").format("noop")
             .option("checkpointLocation", str(self.tmp / f"cp{self.runs}")).trigger(availableNow=True).start())
        q.awaitTermination()
        wall = time.perf_counter() - t0
        self.cpus[variant].append(time.process_time() - cpu0)
        release.set()
        if rec is not None:
            self._check(variant, rec)
        return wall

    def _check(self, variant: str, rec: Any) -> None:
        stats = rec.stop()
        if variant == "blocked":
            assert stats.dropped >= self.files - 20 and stats.conversion_errors == 0, stats  # 16 queued
            self.drops.append(stats.dropped)
            return
        assert stats.dropped == 0 and stats.conversion_errors == 0, stats
        assert rec.listener.fallbacks == 0 or variant == "pyspark", "the one-call route failed"
        progress = sum('"batchId"' in line for line in rec.path.read_text().splitlines())
        assert progress >= self.files, f"{variant}: {progress} progress events recorded, expected {self.files}"


def _print_workload(w: _Workload, walls: dict[str, list[float]], rows: int, rounds: int) -> None:
    base = statistics.mean(walls["none"])
    print(f"availableNow workload ({w.files} micro-batches of {rows:,} rows), {rounds} rounds, order rotated:")
    for v, label in (("none", "no listener"), ("record", "streamwatch.record"),
                     ("pyspark", "same recording via PySpark's listener wrapper"),
                     ("blocked", "streamwatch.record + a sink blocked all run")):
        m = statistics.mean(walls[v])
        each = " ".join(f"{x:.2f}" for x in walls[v])
        cpu = statistics.mean(w.cpus[v][-rounds:])
        print(f"  {label:48s} {m:6.2f} s  ratio {m / base:.3f} ({100 * (m / base - 1):+.1f} %)   "
              f"driver Python CPU {cpu:5.2f} s   runs: {each}")
    print(f"  streamwatch.record overhead {100 * (statistics.mean(walls['record']) / base - 1):+.1f} % "
          "(target <= +2 %)")
    print(f"  with a blocked sink: {100 * (statistics.mean(walls['blocked']) / base - 1):+.1f} % wall time, "
          f"{statistics.mean(w.drops):.0f} events dropped (counted) per run, the query never waited")


def _spark_workload(tmp: Path) -> None:
    from pyspark.sql.streaming import StreamingQueryListener

    from streamwatch.spark.listener import PublishingListener
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    class PySparkRoute(PublishingListener):
        """The same listener, registered through PySpark's own wrapper (field-by-field)."""
        _jlistener = StreamingQueryListener._jlistener

    files, rows, rounds = (int(os.environ.get(k, d)) for k, d in
                           (("BENCH_FILES", 100), ("BENCH_ROWS", 20000), ("BENCH_ROUNDS", 3)))
    spark, _ = create_session(SessionConfig(workspace=tmp, master="local[2]", ui=False, shuffle_partitions=2,
                                            table_format=TableFormatDecision("parquet", "bench")))
    _land(tmp / "in", files, rows)
    w = _Workload(spark, tmp, tmp / "in", files, PublishingListener, PySparkRoute)
    w.run("none")  # warm-up (JIT, caches)
    walls: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        k = r % len(VARIANTS)
        for v in VARIANTS[k:] + VARIANTS[:k]:
            walls[v].append(w.run(v))
    spark.stop()
    _print_workload(w, walls, rows, rounds)


def _synthetic_event_log(path: Path, target_mb: int = 60) -> None:
    """Mostly non-streaming lines (as real logs are: task/stage/SQL events), some progress."""
    task = {"Event": "SparkListenerTaskEnd", "Stage ID": 3, "Task Info": {"Task ID": 1, "Host": "localhost",
            "Accumulables": [{"ID": i, "Name": f"internal.metrics.m{i}", "Update": i, "Value": i * 7} for i in range(25)]},
            "Task Metrics": {"Executor Run Time": 12, "JVM GC Time": 0, "Result Size": 2300}}
    progress = {"Event": "org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent", "progress": {
        "id": "q", "runId": "r", "name": "bench", "timestamp": "2026-11-20T22:06:11.206Z", "batchId": 0,
        "batchDuration": 100, "durationMs": {"triggerExecution": 100, "addBatch": 80}, "eventTime": {},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 3, "customMetrics": {"a": 1}}],
        "sources": [{"description": "FileStreamSource[file:/in]", "startOffset": "{\"logOffset\":0}",
                     "endOffset": "{\"logOffset\":1}", "numInputRows": 10, "inputRowsPerSecond": 1.5,
                     "processedRowsPerSecond": 2.5, "metrics": {}}],
        "sink": {"description": "NoopTable", "numOutputRows": 3, "metrics": {}}, "observedMetrics": {}}}
    t, pr = json.dumps(task, separators=(",", ":")) + "\n", json.dumps(progress, separators=(",", ":")) + "\n"
    with open(path, "w") as fh:
        n = 0
        while fh.tell() < target_mb * 1_000_000:
            fh.write(pr if n % 40 == 0 else t)
            n += 1


def _parse_throughput(tmp: Path) -> None:
    from streamwatch.events.eventlog import read_event_log

    path = tmp / "app-1"
    _synthetic_event_log(path)
    mb = path.stat().st_size / 1e6

    def json_loop() -> int:
        n = 0
        with open(path, "rb") as fh:
            for line in fh:
                d = json.loads(line)
                n += d.get("Event", "").endswith("QueryProgressEvent")
        return n

    def ours() -> int:
        return sum(1 for _ in read_event_log(path))

    best = {}
    for name, fn in (("json.loads loop", json_loop), ("streamwatch read_event_log", ours)) * 2:
        t0 = time.perf_counter()
        count = fn()
        best[name] = min(best.get(name, 1e9), time.perf_counter() - t0)
        best[name + " events"] = count
    base, mine = mb / best["json.loads loop"], mb / best["streamwatch read_event_log"]
    assert best["json.loads loop events"] == best["streamwatch read_event_log events"]
    print(f"event-log parsing ({mb:.0f} MB, {best['json.loads loop events']:,} progress events):")
    print(f"  json.loads loop {base:7.1f} MB/s   read_event_log {mine:7.1f} MB/s   ratio {mine / base:.1f}x (target >= 3x)")


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="streamwatch-bench-"))
    try:
        _parse_throughput(tmp)
        if "--parse-only" not in sys.argv:
            _spark_workload(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
