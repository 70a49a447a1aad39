"""``streamwatch.record(spark, path)`` on the pyspark a user's job already runs, not the one
this checkout pins: the built wheel installed with pyspark 3.5.x (the long-term-support line)
and with 4.3.0 into fresh venvs (pip's cache keeps them quick), a real local session in each
recording an availableNow aggregation — and the recording held against Spark's own account
of the run (the query's ids and every progress as the JVM serialised it).

The checkpoint that Spark version wrote is then watched for its file source's lag (``watch
--log --once``, no JVM) after two more files land with known modification times: the backlog
and the oldest unread file are the files themselves, the last committed batch Spark's last
progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from streamwatch.events.reader import read_recording
from streamwatch.events.source import ReadReport
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("record_job.py")
VERSIONS = ["3.5.7", "4.3.0"]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    dist = tmp_path_factory.mktemp("record-wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
                   check=True, timeout=600)
    (whl,) = dist.glob("streamwatch-*.whl")
    return whl


@pytest.mark.parametrize("version", VERSIONS)
def test_record_on_the_jobs_own_pyspark(version, wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    # pandas < 3: pyspark 3.5/4.3 import pandas where present and warn on 3.x
    pip = subprocess.run([py, "-m", "pip", "install", "--quiet", "--progress-bar", "off", f"pyspark=={version}",
                          f"{wheel}[spark]"], capture_output=True, text=True, timeout=1500)
    assert pip.returncode == 0, pip.stderr[-2000:]
    work = tmp_path / "work"
    run = subprocess.run([py, str(JOB), str(work)], capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    spark = json.loads((work / "spark.json").read_text())
    assert spark["version"] == version

    report = ReadReport()
    events = list(read_recording(work / "events.jsonl", report))
    assert report.header is not None and report.header.app["sparkVersion"] == version
    started = [e for e in events if isinstance(e, QueryStarted)]
    progress = [e for e in events if isinstance(e, QueryProgress)]
    ended = [e for e in events if isinstance(e, QueryTerminated)]
    assert [(e.id, e.run_id, e.name) for e in started] == [(spark["id"], spark["runId"], "beside_a_job")]
    assert [(e.id, e.run_id, e.exception) for e in ended] == [(spark["id"], spark["runId"], None)]
    # one progress per batch, as Spark reported it: two files at maxFilesPerTrigger 1
    theirs = [(p["batchId"], p["numInputRows"], tuple(o["numRowsTotal"] for o in p["stateOperators"]))
              for p in spark["progress"]]
    ours = [(p.batch_id, p.num_input_rows, tuple(o.num_rows_total for o in p.state_operators)) for p in progress]
    assert ours == theirs
    assert [n for _, n, _ in theirs] == [10, 20]

    # the file source's lag on the checkpoint this Spark wrote: two files land after the run
    now_ms = int(time.time() * 1000)
    for name, age_s in (("f2.json", 120), ("f3.json", 60)):
        f = work / "in" / name
        f.write_text('{"k": 1, "v": 1}')
        os.utime(f, ns=((now_ms - age_s * 1000) * 1_000_000,) * 2)
    watch = subprocess.run([str(Path(sys.executable).with_name("streamwatch")), "watch", str(work / "cp"), "--log",
                            "--once"], capture_output=True, text=True, timeout=300)
    assert watch.returncode == 0, watch.stderr
    records = [json.loads(line) for line in watch.stdout.splitlines()]
    (lag,) = [r for r in records if r["kind"] == "source-lag"]
    assert (lag["id"], lag["sourceKind"], lag["backlog"], lag["oldestUnreadMs"]) == (
        spark["id"], "file", 2, now_ms - 120_000), lag
    assert lag["lagSeconds"] == (lag["atMs"] - lag["oldestUnreadMs"]) / 1000 >= 120
    (status,) = [r for r in records if r["kind"] == "checkpoint-status"]
    assert status["lastCommittedBatchId"] == spark["progress"][-1]["batchId"] == 1
