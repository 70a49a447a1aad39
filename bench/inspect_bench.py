"""Benchmark: ``streamwatch inspect`` against the JVM route on synthetic checkpoints.

Two shapes (``--shape``, default both):

* ``production`` — the layout Spark leaves with its defaults on a long-running query: 10,000
  batches of which the last 100 are retained in offsets/ and commits/ (minBatchesToRetain),
  a file-source log compacted every 10 batches with 10 files per batch (the last two compact
  files and the batches between them retained), and 2 stateful operators × 200 partitions
  keeping 100 HDFS versions each with a snapshot every 10 (~44,000 state files).
* ``small`` — the first bench's shape: all 10,000 batches retained, 10 versions a partition.

For each shape, ``--rounds`` (≥ 5) alternated rounds time, each as a fresh process:
``streamwatch inspect --json`` (summary), ``streamwatch inspect --json --batches`` and the
JVM route — a Python process that starts a SparkSession, reads ``state-metadata`` and reads
offsets and commits with ``spark.read.text`` (what a user without streamwatch runs).
Prints median and min of each and the ratio JVM route / inspect (median over median, min
over min). Targets (issue 18): production summary ≤ 0.3 s and ≥ 50× the JVM route,
``--batches`` ≤ 1 s.

``--s3`` also uploads the production checkpoint to a loopback moto S3 server that counts
the requests it serves, and times ``inspect s3://…`` (target: < 1,000 requests).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.installed import installed_env, warm  # noqa: E402

CONF = {
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "spark.sql.streaming.aggregation.stateFormatVersion": "2",
}


@dataclass(frozen=True)
class Shape:
    """``batches`` planned in all, the last ``retained`` kept in offsets/ and commits/,
    ``files_per_batch`` source files, file-source log compacted every ``compact`` batches,
    ``operators`` × ``partitions`` state stores with ``versions`` HDFS deltas each and a
    snapshot every ``snapshot_every`` versions, ``delta_bytes`` per delta file."""

    name: str
    batches: int
    retained: int
    files_per_batch: int
    compact: int
    operators: int
    partitions: int
    versions: int
    snapshot_every: int
    delta_bytes: int


SHAPES = {
    "production": Shape("production", 10_000, 100, 10, 10, 2, 200, 100, 10, 2048),
    "small": Shape("small", 10_000, 10_000, 10, 10, 2, 200, 10, 10, 64),
}


def synthesize(root: Path, s: Shape) -> int:
    """Write the checkpoint; returns the number of files written."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": "0b5e1d0c-0000-4000-8000-000000000001"}))
    conf = json.dumps({**CONF, "spark.sql.shuffle.partitions": str(s.partitions)})
    n = 1
    for b in range(s.batches - s.retained, s.batches):
        wm = b * 1000
        (root / "offsets" / str(b)).write_text(
            f'v1\n{{"batchWatermarkMs":{wm},"batchTimestampMs":{1_700_000_000_000 + b * 1000},"conf":{conf}}}\n{{"logOffset":{b}}}'
        )
        (root / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{wm}}}')
        n += 2
    src = root / "sources" / "0"
    src.mkdir(parents=True)

    def entries(first: int, upto: int) -> str:
        return "\n".join(
            f'{{"path":"file:///data/landing/part-{b:05d}-{i}.json","timestamp":{1_700_000_000_000 + b},"batchId":{b}}}'
            for b in range(first, upto + 1)
            for i in range(s.files_per_batch)
        )

    last = s.batches - 1
    prev = last - s.compact
    (src / f"{prev}.compact").write_text("v1\n" + entries(0, prev))
    for b in range(prev + 1, last):
        (src / str(b)).write_text("v1\n" + entries(b, b))
    (src / f"{last}.compact").write_text("v1\n" + entries(0, last))
    n += s.compact + 1
    delta, snap = b"\0" * s.delta_bytes, b"\0" * (s.delta_bytes * 4)
    for op in range(s.operators):
        base = root / "state" / str(op)
        (base / "_metadata").mkdir(parents=True)
        info = {"operatorInfo": {"operatorId": op, "operatorName": "stateStoreSave"},
                "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": s.partitions}]}
        (base / "_metadata" / "metadata").write_text("v1\n" + json.dumps(info))
        n += 1
        for p in range(s.partitions):
            d = base / str(p)
            d.mkdir()
            for v in range(s.batches - s.versions + 1, s.batches + 1):
                (d / f"{v}.delta").write_bytes(delta)
                n += 1
                if v % s.snapshot_every == 0:
                    (d / f"{v}.snapshot").write_bytes(snap)
                    n += 1
    return n


JVM_SCRIPT = r"""
import sys, time
t0 = time.perf_counter()
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
cp = sys.argv[1]
try:
    n_ops = len(spark.read.format("state-metadata").load(cp).collect())
except Exception as e:  # still a real attempt: report it
    n_ops = f"failed: {type(e).__name__}"
offsets = spark.read.text(cp + "/offsets").collect()
commits = spark.read.text(cp + "/commits").collect()
print(f"{time.perf_counter() - t0:.3f} {n_ops} {len(offsets)} {len(commits)}")
spark.stop()
"""


def _run(cmd: list[str], env: dict | None = None, cpu: list[float] | None = None) -> float:
    """Wall time (s) of ``cmd``; appends its CPU time (user + sys, s) to ``cpu`` when given:
    on a loaded machine the wall time includes waiting for a core, the CPU time does not."""
    import resource

    t = time.perf_counter()
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=900)
    took = time.perf_counter() - t
    if cpu is not None:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - c.ru_utime - c.ru_stime)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return took


def _cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _stats(xs: list[float]) -> str:
    return f"median {statistics.median(xs):7.3f} s  min {min(xs):7.3f} s"


def bench_shape(s: Shape, rounds: int, jvm: bool) -> dict[str, list[float]]:
    exe = str(Path(sys.executable).with_name("streamwatch"))
    from streamwatch.checkpoint import batch_timeline, read_checkpoint
    from streamwatch.checkpoint.jsonout import summary_doc

    with tempfile.TemporaryDirectory(prefix=f"sw-inspect-bench-{s.name}-") as tmp:
        cp = Path(tmp) / "cp"
        t = time.perf_counter()
        files = synthesize(cp, s)
        print(f"[{s.name}] synthesized {files:,} files ({s.retained} of {s.batches:,} batches retained, "
              f"{s.operators}×{s.partitions} state stores × {s.versions} versions) in {time.perf_counter() - t:.1f} s")
        rows = batch_timeline(read_checkpoint(cp))
        assert len(rows) == s.retained and rows[-1].state_version and rows[-1].files_read == s.files_per_batch, rows[-1]
        env = installed_env(Path(tmp) / "pycache")
        for warmup in ([exe, "--version"], [exe, "inspect", str(cp), "--json", "--batches"]):
            warm(warmup, env)
        times: dict[str, list[float]] = {"summary": [], "batches": [], "jvm": [], "startup": [], "cpu": [],
                                   "summary_cpu": [], "batches_cpu": []}
        for i in range(rounds):
            times["startup"].append(_run([exe, "--version"], env))
            c = _cpu()
            summary_doc(read_checkpoint(cp, full=False, sizes=False))
            times["cpu"].append(_cpu() - c)
            times["summary"].append(_run([exe, "inspect", str(cp), "--json"], env, cpu=times["summary_cpu"]))
            times["batches"].append(_run([exe, "inspect", str(cp), "--json", "--batches"], env, cpu=times["batches_cpu"]))
            if jvm:
                times["jvm"].append(_run([sys.executable, "-c", JVM_SCRIPT, str(cp)], env))
            print(f"[{s.name}] round {i + 1}/{rounds}: summary {times['summary'][-1]:.3f} s, --batches "
                  f"{times['batches'][-1]:.3f} s" + (f", JVM route {times['jvm'][-1]:.3f} s" if jvm else ""), flush=True)
    return times


def report(s: Shape, t: dict[str, list[float]]) -> None:
    summ, bat, jvm = t["summary"], t["batches"], t["jvm"]
    print(f"== {s.name}: {len(summ)} alternated rounds, each a fresh process")
    print(f"inspect --json            {_stats(summ)}   target ≤ 0.300 s  {'OK' if statistics.median(summ) <= 0.3 else 'MISSED'}")
    print(f"  CPU time of that process (user + sys; what it costs on an idle core) {_stats(t['summary_cpu'])}")
    print(f"  of which interpreter + CLI start-up (`streamwatch --version`) {_stats(t['startup'])}")
    print(f"  the summary read's CPU time in-process: median {statistics.median(t['cpu']):.3f} s")
    print(f"inspect --json --batches  {_stats(bat)}   target ≤ 1.000 s  {'OK' if statistics.median(bat) <= 1.0 else 'MISSED'}")
    print(f"  CPU time of that process (user + sys) {_stats(t['batches_cpu'])}")
    if jvm:
        print(f"JVM route                 {_stats(jvm)}   (SparkSession + state-metadata + spark.read.text offsets/commits)")
        r_med = statistics.median(jvm) / statistics.median(summ)
        r_min = min(jvm) / min(summ)
        print(f"ratio JVM route / inspect --json: {r_med:.1f}× (median)  {r_min:.1f}× (min)   target ≥ 50×  {'OK' if r_med >= 50 else 'MISSED'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=[*SHAPES, "all"], default="all")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-jvm", action="store_true", help="skip the JVM route (no ratio)")
    ap.add_argument("--s3", action="store_true", help="also time inspect s3://… on a loopback moto server")
    args = ap.parse_args()
    shapes = list(SHAPES.values()) if args.shape == "all" else [SHAPES[args.shape]]
    results = [(s, bench_shape(s, max(args.rounds, 1), not args.no_jvm)) for s in shapes]
    for s, t in results:
        report(s, t)
    if args.s3:
        from bench.inspect_s3 import bench_s3  # noqa: PLC0415 - only with --s3

        bench_s3(SHAPES["production"], synthesize, max(args.rounds, 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
