"""Waiting for data, finished and stopped, each held against Spark's own account.

A file-source aggregation (no watermark) reads the files landed, then has nothing new: Spark's
``status`` says no data is available and no trigger is active, and its listener posts
``QueryIdleEvent``s. The
dashboard's model, fed those events through streamwatch's listener, must then say *waiting*,
never *stuck* or *slow*; the checkpoint's ``watch --log --once`` must exit 0 (nothing stuck).
The query is stopped (the planned batch question: the folders say none is left) and an
``availableNow`` run on the same checkpoint reads one more file and ends by itself: *stopped*,
with nothing planned. Its state grows without a watermark (every file brings new keys): the
inspector's ``state-growing`` finding — and ``--check``'s exit 1 — must give the same row
counts as Spark's own ``numRowsTotal``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.model.events import Event, QueryProgress
from streamwatch.model.runtime import QueryPlan, RunPlan
from tests.helpers.checkpoint_files import batch_ids as _ids
from tests.helpers.checkpoint_files import head_of as _head

pytestmark = pytest.mark.spark
STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")
NAME = "idle_truth"


def _land(folder: Path, n: int, start: int) -> None:
    for i in range(start, start + n):
        tmp = folder / f".f{i}.json.tmp"
        tmp.write_text("".join(json.dumps({"k": f"key{i}-{j}", "v": j}) + "\n" for j in range(5)))
        os.replace(tmp, folder / f"f{i}.json")


def test_waiting_finished_and_stopped_are_what_spark_says(spark, tmp_path):
    from streamwatch.spark.listener import PublishingListener

    landing, cp = tmp_path / "in", tmp_path / "cp"
    landing.mkdir()
    _land(landing, 3, 0)
    plan = RunPlan("truth", "", (QueryPlan(NAME, "", str(cp), ""),), (), "processingTime=1 second")
    model = DashboardModel(plan, clock=lambda: int(time.time() * 1000))
    lock = threading.Lock()

    progress: list[QueryProgress] = []

    def publish(e: Event) -> None:
        with lock:
            model.board.apply(e)
            if isinstance(e, QueryProgress):
                progress.append(e)

    listener = PublishingListener(publish)
    spark.streams.addListener(listener)

    def start(**trigger):
        return (spark.readStream.format("json").schema("k string, v int").option("maxFilesPerTrigger", 1)
                .load(str(landing)).groupBy("k").count()
                .writeStream.queryName(NAME).outputMode("update").format("noop")
                .option("checkpointLocation", str(cp)).trigger(**trigger).start())

    def judge():
        with lock:
            model.heads[NAME] = _head(cp)
            return model.diagnose_all()[NAME]

    q = start(processingTime="1 second")
    try:
        waited = []
        deadline = time.monotonic() + 180
        while len(waited) < 5:  # five looks while Spark says it waits for data
            assert time.monotonic() < deadline, f"Spark never waited for data: {q.status}"
            status = q.status
            d = judge()
            assert d.code not in ("stuck", "slow", "failed"), (d, status)
            if not status["isDataAvailable"] and not status["isTriggerActive"] and len(_ids(cp / "commits")) >= 3:
                with lock:
                    idle = model.board.rows[NAME].status == "idle"
                if idle:  # Spark's QueryIdleEvent reached the model
                    assert d.code == "waiting" and d.text == "waiting for data", d
                    waited.append(d)
            q.awaitTermination(0.3)
        out = subprocess.run([STREAMWATCH, "watch", str(cp), "--log", "--once"],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        status_rec = [json.loads(line) for line in out.stdout.splitlines()
                      if json.loads(line).get("kind") == "checkpoint-status"]
        assert status_rec and not status_rec[-1]["stuck"] and status_rec[-1]["inFlightBatchId"] is None
    finally:
        q.stop()
    q.awaitTermination(60)
    assert _ids(cp / "offsets")[-1] == _ids(cp / "commits")[-1], "a stop while waiting leaves nothing planned"

    _land(landing, 1, 3)
    q = start(availableNow=True)
    assert q.awaitTermination(180), "availableNow ended by itself"
    assert q.exception() is None
    deadline = time.monotonic() + 60
    while True:  # the listener posts the terminated event asynchronously
        with lock:
            done = model.board.rows[NAME].status == "stopped"
        if done or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    spark.streams.removeListener(listener)
    assert done, "QueryTerminatedEvent reached the model"
    d = judge()
    assert d.code == "stopped" and d.text == "stopped", d
    read = sum(json.loads(p.json)["numInputRows"] for p in q.recentProgress)
    assert read == 5, "the one new file (5 rows) was read"
    assert _ids(cp / "offsets")[-1] == _ids(cp / "commits")[-1]
    rows = [p.state_operators[0].num_rows_total for p in progress if p.state_operators and p.num_input_rows]
    assert rows == sorted(rows) and rows[0] < rows[-1], rows  # Spark: the state grows batch after batch
    check = subprocess.run([STREAMWATCH, "inspect", str(cp), "--check", "--json"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 1, check.stdout + check.stderr
    findings = {f["code"]: f for f in json.loads(check.stdout)["findings"]}
    assert "in-flight-batch" not in findings
    assert f"({rows[0]} → {rows[-1]} rows" in findings["state-growing"]["message"], (rows, findings["state-growing"])
