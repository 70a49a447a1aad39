"""Starting, running, stuck and stopped are told apart, each verdict held against Spark's own
account of the query: its progress (``recentProgress``), whether a batch is running
(``status.isTriggerActive``), and the checkpoint's ``offsets/N`` and ``commits/N`` files read
here directly — never against streamwatch's reader.

One query (rate → ``foreachBatch``, ``processingTime=1 second``) lives through: batches that
commit (never *stuck*, whatever the clock says while they do), a batch that blocks (*stuck*
only while Spark shows it running with no commit), a batch that fails (*failed*, the planned
batch left uncommitted), and a restart on the same checkpoint that re-runs that batch:
*starting*, not *stuck*, even on a clock 83 s past the old batch's planning time (the
previous run planned it, this run has not waited for it)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.diagnosis import Diagnosis
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.runtime import QueryPlan, RunPlan
from tests.helpers.checkpoint_files import batch_ids as _ids
from tests.helpers.checkpoint_files import head_of

pytestmark = pytest.mark.spark
NAME = "liveness"


class Gate:
    """What the foreachBatch sink does with the next batches: pass, block until opened, fail."""

    def __init__(self) -> None:
        self.mode = "pass"
        self.opened = threading.Event()
        self.delay_s = 0.0

    def __call__(self, df, batch_id) -> None:
        df.count()
        time.sleep(self.delay_s)
        if self.mode == "block":
            self.opened.wait(300)
        if self.mode == "fail":  # also a blocked batch, released to fail
            raise RuntimeError(f"batch {batch_id} failed on purpose")


class Watcher:
    """A DashboardModel fed with Spark's own events for one query, heads read from disk."""

    def __init__(self, cp: Path, clock) -> None:
        plan = RunPlan("truth", "", (QueryPlan(NAME, "", str(cp), ""),), (), "processingTime=1 second")
        self.cp = cp
        self.model = DashboardModel(plan, clock=clock)
        self.seen: set[str] = set()

    def start(self, q) -> None:
        self.model.board.apply(QueryStarted(str(q.id), str(q.runId), _now_iso(), name=NAME))

    def sync(self, q) -> None:
        for p in q.recentProgress:
            d = json.loads(p.json)
            key = f"{d['runId']}:{d['batchId']}"
            if key not in self.seen:
                self.seen.add(key)
                self.model.board.apply(QueryProgress.from_dict(d))

    def judge(self) -> Diagnosis:
        self.model.heads[NAME] = head_of(self.cp)
        return self.model.diagnose_all()[NAME]


def _now_iso() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


def _start(spark, cp: Path, gate: Gate):
    return (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
            .writeStream.queryName(NAME).option("checkpointLocation", str(cp))
            .trigger(processingTime="1 second").foreachBatch(gate).start())


def _committing_batches_are_never_stuck(q, watcher: Watcher, gate: Gate) -> None:
    """Batches that commit: never stuck, however long each one takes within its cadence;
    *back to back* exactly when Spark's progress shows the last batches over the interval."""
    gate.delay_s = 1.5  # each batch longer than the 1 s trigger
    deadline = time.monotonic() + 180
    while len(_ids(watcher.cp / "commits")) < 5:
        assert time.monotonic() < deadline, "5 batches did not commit in 180 s"
        watcher.sync(q)
        d = watcher.judge()
        assert d.code != "stuck", d
        q.awaitTermination(0.2)
    watcher.sync(q)
    d = watcher.judge()
    assert d.code == "ok", d  # nothing falls behind: no source reports outstanding work growing
    # Spark's progress as judged (the query runs on: recentProgress may have more by now)
    durations = [p.batch_duration for p in watcher.model.board.rows[NAME].recent][-3:]
    assert d.text.startswith("back to back") == all(ms > 1000 for ms in durations), (d, durations)


def _blocked_batch_is_stuck(q, watcher: Watcher, gate: Gate) -> int:
    """A batch that blocks: stuck only while Spark shows it running, uncommitted. Returns its id."""
    gate.delay_s = 0.0
    gate.mode = "block"
    deadline = time.monotonic() + 240
    while True:
        watcher.sync(q)
        d = watcher.judge()
        if d.code == "stuck":
            break
        assert time.monotonic() < deadline, f"never stuck: {d}"
        q.awaitTermination(0.2)
    head = head_of(watcher.cp)
    assert head.offsets_batch is not None and head.offsets_batch not in _ids(watcher.cp / "commits")
    assert q.status["isTriggerActive"], "Spark says a batch is running"
    assert f"batch {head.offsets_batch} running" in d.text
    return head.offsets_batch


def _failed_batch_is_failed(q, watcher: Watcher, gate: Gate, blocked: int) -> int:
    """The blocked batch fails: failed, and the planned batch stays uncommitted. Returns the
    time it was planned at (ms, its offsets file)."""
    from pyspark.errors import StreamingQueryException

    gate.mode = "fail"
    gate.opened.set()
    with pytest.raises(StreamingQueryException):
        q.awaitTermination(120)
    assert not q.isActive
    watcher.model.board.apply(QueryTerminated(str(q.id), str(q.runId), _now_iso(), exception="failed on purpose"))
    d = watcher.judge()
    assert d.code == "failed", d
    assert blocked in _ids(watcher.cp / "offsets") and blocked not in _ids(watcher.cp / "commits")
    planned_at = head_of(watcher.cp).offsets_timestamp_ms
    assert planned_at is not None
    return planned_at


def _restart_is_starting(spark, watcher: Watcher, gate: Gate, clock: dict[str, int], blocked: int,
                         planned_at: int) -> None:
    """Restart on the same checkpoint: Spark re-runs the planned batch; until this run
    finishes one, it is starting — also on a clock 83 s past the old batch's planning."""
    gate.mode = "pass"
    gate.delay_s = 3.0
    q = _start(spark, watcher.cp, gate)
    watcher.start(q)
    clock["skew"] = planned_at + 83_000 - int(time.time() * 1000)
    judged = []
    while q.lastProgress is None and q.isActive:
        d = watcher.judge()
        judged.append(d)
        assert d.code == "starting", d
        q.awaitTermination(0.2)
    assert judged, "the restarted batch was judged while it ran"
    clock["skew"] = 0
    deadline = time.monotonic() + 120
    while blocked not in _ids(watcher.cp / "commits"):
        assert time.monotonic() < deadline
        q.awaitTermination(0.2)
    watcher.sync(q)
    assert watcher.judge().code != "stuck"


def test_running_stuck_failed_and_restarted_are_told_apart(spark, tmp_path):
    cp = tmp_path / "cp"
    clock = {"skew": 0}
    watcher = Watcher(cp, lambda: int(time.time() * 1000) + clock["skew"])
    gate = Gate()
    q = _start(spark, cp, gate)
    watcher.start(q)
    try:
        _committing_batches_are_never_stuck(q, watcher, gate)
        blocked = _blocked_batch_is_stuck(q, watcher, gate)
        planned_at = _failed_batch_is_failed(q, watcher, gate, blocked)
        _restart_is_starting(spark, watcher, gate, clock, blocked, planned_at)
    finally:
        gate.opened.set()
        for s in spark.streams.active:
            if s.name == NAME:
                s.stop()
