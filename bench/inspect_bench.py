"""Benchmark: ``streamwatch inspect`` against the JVM route on a large synthetic checkpoint.

Synthesizes (in a temp folder) a checkpoint with 10,000 batches in offsets/ and commits/, a
file-source log of 100,000 files compacted every 10 batches, and 2 stateful operators × 200
partitions (HDFS store files). Then, in the same run, times:

* ``streamwatch inspect --json`` (summary) as a fresh process, and the same read in-process;
* the per-batch timeline of all 10,000 batches (``--batches --json``), in-process and as a process;
* the JVM route: a fresh Python process that starts a SparkSession, reads ``state-metadata``
  and reads offsets and commits with ``spark.read.text``.

Prints each time and the ratio JVM route / inspect. Targets: summary ≤ 0.3 s, ≥ 20× faster
than the JVM route, timeline ≤ 1 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATCHES = 10_000
FILES_PER_BATCH = 10
OPERATORS = 2
PARTITIONS = 200
CONF = {
    "spark.sql.shuffle.partitions": str(PARTITIONS),
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "spark.sql.streaming.aggregation.stateFormatVersion": "2",
}


def synthesize(root: Path) -> None:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": "0b5e1d0c-0000-4000-8000-000000000001"}))
    conf = json.dumps(CONF)
    for b in range(BATCHES):
        wm = b * 1000
        (root / "offsets" / str(b)).write_text(
            f'v1\n{{"batchWatermarkMs":{wm},"batchTimestampMs":{1_700_000_000_000 + b * 1000},"conf":{conf}}}\n{{"logOffset":{b}}}'
        )
        (root / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{wm}}}')
    src = root / "sources" / "0"
    src.mkdir(parents=True)

    def entries(upto: int) -> str:
        return "\n".join(
            f'{{"path":"file:///data/landing/part-{b:05d}-{i}.json","timestamp":{1_700_000_000_000 + b},"batchId":{b}}}'
            for b in range(upto + 1)
            for i in range(FILES_PER_BATCH)
        )

    for c in (BATCHES - 11, BATCHES - 1):  # the last two compactions (older ones were cleaned up)
        (src / f"{c}.compact").write_text("v1\n" + entries(c))
    for op in range(OPERATORS):
        base = root / "state" / str(op)
        (base / "_metadata").mkdir(parents=True)
        info = {"operatorInfo": {"operatorId": op, "operatorName": "stateStoreSave"}, "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": PARTITIONS}]}
        (base / "_metadata" / "metadata").write_text("v1\n" + json.dumps(info))
        for p in range(PARTITIONS):
            d = base / str(p)
            d.mkdir()
            for v in range(BATCHES - 9, BATCHES + 1):
                (d / f"{v}.delta").write_bytes(b"\0" * 64)
            (d / f"{BATCHES - 9}.snapshot").write_bytes(b"\0" * 256)


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


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> int:
    from streamwatch.checkpoint import batch_timeline, read_checkpoint
    from streamwatch.checkpoint.jsonout import summary_doc

    exe = str(Path(sys.executable).with_name("streamwatch"))
    with tempfile.TemporaryDirectory(prefix="sw-inspect-bench-") as tmp:
        cp = Path(tmp) / "cp"
        t = time.perf_counter()
        synthesize(cp)
        print(f"synthesized {BATCHES} batches, {BATCHES * FILES_PER_BATCH} source files, {OPERATORS}×{PARTITIONS} state partitions in {time.perf_counter() - t:.1f} s")

        def cli(*args: str) -> None:
            r = subprocess.run([exe, "inspect", str(cp), *args], capture_output=True)
            assert r.returncode == 0, r.stderr.decode()

        startup = timed(lambda: subprocess.run([exe, "--version"], capture_output=True, check=True), repeat=5)
        summary_in = timed(lambda: summary_doc(read_checkpoint(cp, full=False)))
        summary_cli = timed(lambda: cli("--json"), repeat=5)
        timeline_in = timed(lambda: batch_timeline(read_checkpoint(cp)), repeat=2)
        timeline_cli = timed(lambda: cli("--json", "--batches"), repeat=2)
        rows = batch_timeline(read_checkpoint(cp))
        assert len(rows) == BATCHES and rows[-1].state_version and rows[-1].files_read == FILES_PER_BATCH

        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", JVM_SCRIPT, str(cp)], capture_output=True, text=True, timeout=600)
        jvm = time.perf_counter() - t
        detail = r.stdout.strip().splitlines()[-1] if r.returncode == 0 and r.stdout.strip() else f"failed: {r.stderr.strip()[-300:]}"

    print(f"streamwatch inspect --json (process)      {summary_cli:7.3f} s   target ≤ 0.300 s  {'OK' if summary_cli <= 0.3 else 'MISSED'}")
    print(f"  of which interpreter + CLI start-up (`streamwatch --version`) {startup:7.3f} s")
    print(f"summary read + JSON doc (in-process)      {summary_in:7.3f} s   target ≤ 0.300 s  {'OK' if summary_in <= 0.3 else 'MISSED'}")
    print(f"timeline of {BATCHES} batches (in-process)  {timeline_in:7.3f} s   target ≤ 1.000 s  {'OK' if timeline_in <= 1.0 else 'MISSED'}")
    print(f"inspect --json --batches (process)        {timeline_cli:7.3f} s")
    print(f"JVM route (SparkSession + state-metadata + spark.read.text offsets/commits) {jvm:7.3f} s  [{detail}]")
    ratio = jvm / summary_cli
    print(f"ratio JVM route / inspect --json: {ratio:.1f}×   target ≥ 20×  {'OK' if ratio >= 20 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
