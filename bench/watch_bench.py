"""Benchmark: following a large checkpoint with ``streamwatch watch`` (incremental polls)
against the named alternative, re-reading it with the inspector at every poll.

Synthesizes (in a temp folder) a checkpoint with 10,000 batches in offsets/ and commits/, a
file-source log of 100,000 files compacted every 10 batches, and 2 stateful operators × 200
partitions (HDFS store files). A writer then appends one batch per second (offsets, source
log — a 100,000-line ``.compact`` every 10th batch —, 400 state files, commit) while a
:class:`~streamwatch.analysis.watch.CheckpointWatcher` polls once a second; only the polls'
CPU time is counted (the writer stands for Spark). The alternative is timed on the same
checkpoint: a full inspector read (``read_checkpoint``), and a summary read (``full=False``).

Prints CPU share of one core at one poll per second for each. Target: watch < 5 %.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

BATCHES = 10_000
FILES_PER_BATCH = 10
OPERATORS = 2
PARTITIONS = 200
T0 = 1_700_000_000_000
CONF = json.dumps({
    "spark.sql.shuffle.partitions": str(PARTITIONS),
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
})


def _entries(first: int, last: int) -> str:
    return "\n".join(f'{{"path":"file:///data/landing/part-{b:05d}-{i}.json","timestamp":{T0 + b},"batchId":{b}}}'
                     for b in range(first, last + 1) for i in range(FILES_PER_BATCH))


class Writer:
    """Writes batches in Spark's layout (offsets, sources/0 with compaction every 10, state
    version N+1 in every partition, then commits/N)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.next = 0

    def batch(self, b: int, *, state: bool = True) -> None:
        src = self.root / "sources" / "0"
        if (b + 1) % 10 == 0:
            (src / f"{b}.compact").write_text("v1\n" + _entries(0, b))
        else:
            (src / str(b)).write_text("v1\n" + _entries(b, b))
        (self.root / "offsets" / str(b)).write_text(
            f'v1\n{{"batchWatermarkMs":{b * 1000},"batchTimestampMs":{T0 + b * 1000},'
            f'"conf":{CONF}}}\n{{"logOffset":{b}}}')
        if state:
            for op in range(OPERATORS):
                for p in range(PARTITIONS):
                    (self.root / "state" / str(op) / str(p) / f"{b + 1}.delta").write_bytes(b"\0" * 64)
        (self.root / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{b * 1000}}}')
        self.next = b + 1


def synthesize(root: Path) -> Writer:
    for d in ("offsets", "commits", "sources/0"):
        (root / d).mkdir(parents=True)
    (root / "metadata").write_text(json.dumps({"id": "0b5e1d0c-0000-4000-8000-000000000002"}))
    for op in range(OPERATORS):
        base = root / "state" / str(op)
        (base / "_metadata").mkdir(parents=True)
        info = {"operatorInfo": {"operatorId": op, "operatorName": "stateStoreSave"},
                "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": PARTITIONS}]}
        (base / "_metadata" / "metadata").write_text("v1\n" + json.dumps(info))
        for p in range(PARTITIONS):
            (base / str(p)).mkdir()
    w = Writer(root)
    for b in range(BATCHES):  # offsets/commits of every batch; the source log as cleanup leaves it
        (root / "offsets" / str(b)).write_text(
            f'v1\n{{"batchWatermarkMs":{b * 1000},"batchTimestampMs":{T0 + b * 1000},"conf":{CONF}}}\n{{"logOffset":{b}}}')
        (root / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{b * 1000}}}')
    (root / "sources" / "0" / f"{BATCHES - 1}.compact").write_text("v1\n" + _entries(0, BATCHES - 1))
    for op in range(OPERATORS):
        for p in range(PARTITIONS):
            d = root / "state" / str(op) / str(p)
            for v in range(BATCHES - 9, BATCHES + 1):
                (d / f"{v}.delta").write_bytes(b"\0" * 64)
    w.next = BATCHES
    return w


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=int, default=20, help="polls (one per second, one new batch each)")
    args = ap.parse_args()
    from streamwatch.analysis.watch import CheckpointWatcher
    from streamwatch.checkpoint import read_checkpoint

    with tempfile.TemporaryDirectory(prefix="sw-watch-bench-") as tmp:
        cp = Path(tmp) / "cp"
        t = time.perf_counter()
        writer = synthesize(cp)
        print(f"synthesized {BATCHES} batches, {BATCHES * FILES_PER_BATCH} source files, "
              f"{OPERATORS}×{PARTITIONS} state partitions in {time.perf_counter() - t:.1f} s")

        watcher = CheckpointWatcher(str(cp), "bench", poll_s=1.0)
        c, t = time.process_time(), time.perf_counter()
        watcher.open()
        print(f"watch open (inspector summary read + last 100 batches): {time.perf_counter() - t:.2f} s wall, "
              f"{time.process_time() - c:.2f} s CPU")
        cpu = 0.0
        derived = 0
        start = time.monotonic()
        for i in range(args.seconds):
            writer.batch(writer.next)
            c = time.process_time()
            derived += sum(1 for r in watcher.poll() if getattr(r, "kind", "") == "checkpoint-batch")
            cpu += time.process_time() - c
            time.sleep(max(0.0, start + i + 1 - time.monotonic()))
        wall = time.monotonic() - start
        assert derived == args.seconds, f"derived {derived} batches of {args.seconds}"
        share = cpu / wall
        per_poll = cpu / args.seconds

        def cpu_of(fn, n: int = 3) -> float:
            best = float("inf")
            for _ in range(n):
                c = time.process_time()
                fn()
                best = min(best, time.process_time() - c)
            return best

        full = cpu_of(lambda: read_checkpoint(cp))
        summary = cpu_of(lambda: read_checkpoint(cp, full=False))

    print(f"watch: {args.seconds} polls, 1/s, a new batch each: {per_poll * 1000:7.1f} ms CPU per poll, "
          f"{share * 100:5.2f} % of a core   target < 5 %  {'OK' if share < 0.05 else 'MISSED'}")
    print(f"alternative, inspector full re-read each poll:     {full * 1000:7.1f} ms CPU per poll, "
          f"{full * 100:5.1f} % of a core ({full / per_poll:.0f}× the watch)")
    print(f"alternative, inspector summary re-read each poll:  {summary * 1000:7.1f} ms CPU per poll, "
          f"{summary * 100:5.1f} % of a core ({summary / per_poll:.0f}× the watch)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
