"""Benchmark: reading a large Spark event log in constant memory.

Writes a plain event log of ``--mb`` MB (default 500): task-end events (what dominates real
event logs) with a streaming query's progress event every 50 lines. Then, in ``--rounds``
(≥ 5) alternated rounds, each a fresh process:

* ``streamwatch.events.eventlog.read_event_log`` over the whole file (progress events become
  model objects; other lines are skipped by a byte check), counting events;
* the named alternative, the stdlib route: ``json.loads`` of every line, counting progress
  events (a reader that parses everything, still streaming).

Prints median/min wall time and peak RSS of each and the ratio alternative / streamwatch.
Target (issue 18): 500 MB in ~2.5 s with ~20 MB RSS here, flat in the file size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

P = "org.apache.spark.sql.streaming.StreamingQueryListener$"
PROGRESS = {
    "id": "20ec6e44-e858-4646-b366-6f8cf24e9d42", "runId": "143a4659-fb71-40db-b5a0-7a8cfeedc7ec", "name": "bench",
    "timestamp": "2026-11-20T22:06:28.438Z", "batchId": 1, "batchDuration": 1905,
    "durationMs": {"triggerExecution": 1904, "addBatch": 1164}, "eventTime": {}, "stateOperators": [],
    "sources": [{"description": "FileStreamSource[file:/tmp/in]", "startOffset": "{\"logOffset\":0}",
                 "endOffset": "{\"logOffset\":1}", "latestOffset": None, "numInputRows": 10,
                 "inputRowsPerSecond": 0.58, "processedRowsPerSecond": 5.2, "metrics": {}}],
    "sink": {"description": "NoopTable", "numOutputRows": 3, "metrics": {}}, "observedMetrics": {},
}
TASK_END = {"Event": "SparkListenerTaskEnd", "Stage ID": 3, "Stage Attempt ID": 0, "Task Type": "ResultTask",
            "Task End Reason": {"Reason": "Success"},
            "Task Info": {"Task ID": 1, "Index": 0, "Attempt": 0, "Launch Time": 1795212355882, "Executor ID": "driver",
                          "Host": "localhost", "Locality": "PROCESS_LOCAL", "Speculative": False, "Finish Time": 1795212356882,
                          "Accumulables": [{"ID": i, "Name": f"internal.metrics.m{i}", "Update": i, "Value": i * 7} for i in range(12)]},
            "Task Metrics": {"Executor Run Time": 120, "Executor CPU Time": 100000, "Result Size": 2000}}

READER = r"""
import resource, sys, time
from streamwatch.events.eventlog import read_event_log
t = time.perf_counter()
n = sum(1 for _ in read_event_log(sys.argv[1]))
print(f"{time.perf_counter() - t:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} {n}")
"""
STDLIB = r"""
import json, resource, sys, time
t = time.perf_counter()
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        if json.loads(line).get("Event", "").endswith("QueryProgressEvent"):
            n += 1
print(f"{time.perf_counter() - t:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} {n}")
"""


def write_log(path: Path, mb: int) -> int:
    task = (json.dumps(TASK_END) + "\n").encode()
    prog = (json.dumps({"Event": P + "QueryProgressEvent", "progress": PROGRESS}) + "\n").encode()
    head = [{"Event": "SparkListenerLogStart", "Spark Version": "4.2.0"},
            {"Event": "SparkListenerApplicationStart", "App Name": "bench", "App ID": "local-1", "Timestamp": 1795212355882},
            {"Event": P + "QueryStartedEvent", "id": PROGRESS["id"], "runId": PROGRESS["runId"], "name": "bench",
             "timestamp": "2026-11-20T22:06:10.516Z", "jobTags": []}]
    block = task * 49 + prog
    n = 0
    with open(path, "wb") as f:
        f.write("".join(json.dumps(h) + "\n" for h in head).encode())
        while f.tell() < mb * 1_000_000:
            f.write(block)
            n += 1
    return n


def _run(script: str, path: Path) -> tuple[float, float, int]:
    r = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=True, timeout=900)
    took, rss, n = r.stdout.split()
    return float(took), float(rss), int(n)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sw-eventlog-bench-") as tmp:
        path = Path(tmp) / "eventlog"
        t = time.perf_counter()
        progress = write_log(path, args.mb)
        print(f"wrote {path.stat().st_size / 1e6:.0f} MB ({progress:,} progress events) in {time.perf_counter() - t:.1f} s")
        ours, theirs = [], []
        for i in range(args.rounds):
            ours.append(_run(READER, path))
            theirs.append(_run(STDLIB, path))
            assert ours[-1][2] == theirs[-1][2] + 1 == progress + 1, (ours[-1], theirs[-1], progress)  # + QueryStarted
            print(f"round {i + 1}/{args.rounds}: streamwatch {ours[-1][0]:.2f} s {ours[-1][1]:.0f} MB RSS, "
                  f"stdlib json {theirs[-1][0]:.2f} s {theirs[-1][1]:.0f} MB RSS", flush=True)
    o, s = [x[0] for x in ours], [x[0] for x in theirs]
    print(f"read_event_log      median {statistics.median(o):6.2f} s  min {min(o):6.2f} s  peak RSS {max(x[1] for x in ours):.0f} MB")
    print(f"stdlib json.loads   median {statistics.median(s):6.2f} s  min {min(s):6.2f} s  peak RSS {max(x[1] for x in theirs):.0f} MB")
    print(f"ratio stdlib / streamwatch: {statistics.median(s) / statistics.median(o):.1f}× (median)  {min(s) / min(o):.1f}× (min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
