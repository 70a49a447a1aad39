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
from streamwatch.analysis.diagnosis import Diagnosis
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


class Observer:
    """The dashboard's model fed Spark's events through streamwatch's listener (on Spark's
    listener thread, hence the lock), and the progress events it saw."""

    def __init__(self, cp: Path) -> None:
        plan = RunPlan("truth", "", (QueryPlan(NAME, "", str(cp), ""),), (), "processingTime=1 second")
        self.cp = cp
        self.model = DashboardModel(plan, clock=lambda: int(time.time() * 1000))
        self.lock = threading.Lock()
        self.progress: list[QueryProgress] = []

    def publish(self, e: Event) -> None:
        with self.lock:
            self.model.board.apply(e)
            if isinstance(e, QueryProgress):
                self.progress.append(e)

    def judge(self) -> Diagnosis:
        """The model's diagnosis, with the checkpoint's head as its folders say."""
        with self.lock:
            self.model.heads[NAME] = _head(self.cp)
            return self.model.diagnose_all()[NAME]

    def row_status(self) -> str:
        with self.lock:
            return self.model.board.rows[NAME].status


def _start(spark, landing: Path, cp: Path, **trigger):
    return (spark.readStream.format("json").schema("k string, v int").option("maxFilesPerTrigger", 1)
            .load(str(landing)).groupBy("k").count()
            .writeStream.queryName(NAME).outputMode("update").format("noop")
            .option("checkpointLocation", str(cp)).trigger(**trigger).start())


def _judged_waiting_while_spark_waits(q, obs: Observer) -> None:
    """Five looks at the model while Spark's status says no data and no trigger and its
    QueryIdleEvent has reached the model: *waiting for data* each time; never stuck, slow or
    failed at any look before."""
    waited = 0
    deadline = time.monotonic() + 180
    while waited < 5:
        assert time.monotonic() < deadline, f"Spark never waited for data: {q.status}"
        status = q.status
        d = obs.judge()
        assert d.code not in ("stuck", "slow", "failed"), (d, status)
        spark_waits = not status["isDataAvailable"] and not status["isTriggerActive"]
        if spark_waits and len(_ids(obs.cp / "commits")) >= 3 and obs.row_status() == "idle":
            assert d.code == "waiting" and d.text == "waiting for data", d
            waited += 1
        q.awaitTermination(0.3)


def _watch_once_sees_nothing_stuck(cp: Path) -> None:
    out = subprocess.run([STREAMWATCH, "watch", str(cp), "--log", "--once"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    status_rec = [json.loads(line) for line in out.stdout.splitlines()
                  if json.loads(line).get("kind") == "checkpoint-status"]
    assert status_rec and not status_rec[-1]["stuck"] and status_rec[-1]["inFlightBatchId"] is None


def _reached_stopped(obs: Observer) -> bool:
    """Whether the model shows the query stopped within 60 s (the listener posts the
    terminated event asynchronously)."""
    deadline = time.monotonic() + 60
    while obs.row_status() != "stopped":
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _state_growing_is_sparks_rows(cp: Path, progress: list[QueryProgress]) -> None:
    """``inspect --check`` exits 1 with ``state-growing`` giving Spark's first and last
    ``numRowsTotal`` of the batches that read rows."""
    rows = [p.state_operators[0].num_rows_total for p in progress if p.state_operators and p.num_input_rows]
    assert rows == sorted(rows) and rows[0] < rows[-1], rows  # Spark: the state grows batch after batch
    check = subprocess.run([STREAMWATCH, "inspect", str(cp), "--check", "--json"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 1, check.stdout + check.stderr
    findings = {f["code"]: f for f in json.loads(check.stdout)["findings"]}
    assert "in-flight-batch" not in findings
    assert f"({rows[0]} → {rows[-1]} rows" in findings["state-growing"]["message"], (rows, findings["state-growing"])


def test_waiting_finished_and_stopped_are_what_spark_says(spark, tmp_path):
    from streamwatch.spark.listener import PublishingListener

    landing, cp = tmp_path / "in", tmp_path / "cp"
    landing.mkdir()
    _land(landing, 3, 0)
    obs = Observer(cp)
    listener = PublishingListener(obs.publish)
    spark.streams.addListener(listener)

    q = _start(spark, landing, cp, processingTime="1 second")
    try:
        _judged_waiting_while_spark_waits(q, obs)
        _watch_once_sees_nothing_stuck(cp)
    finally:
        q.stop()
    q.awaitTermination(60)
    assert _ids(cp / "offsets")[-1] == _ids(cp / "commits")[-1], "a stop while waiting leaves nothing planned"

    _land(landing, 1, 3)
    q = _start(spark, landing, cp, availableNow=True)
    assert q.awaitTermination(180), "availableNow ended by itself"
    assert q.exception() is None
    done = _reached_stopped(obs)
    spark.streams.removeListener(listener)
    assert done, "QueryTerminatedEvent reached the model"
    d = obs.judge()
    assert d.code == "stopped" and d.text == "stopped", d
    read = sum(json.loads(p.json)["numInputRows"] for p in q.recentProgress)
    assert read == 5, "the one new file (5 rows) was read"
    assert _ids(cp / "offsets")[-1] == _ids(cp / "commits")[-1]
    _state_growing_is_sparks_rows(cp, obs.progress)
