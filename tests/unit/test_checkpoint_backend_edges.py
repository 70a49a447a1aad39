"""The ``streamwatch watch`` dashboard's backend (:class:`CheckpointBackend`) on checkpoints
written in Spark's on-disk format (no JVM, no Textual): what it emits for

* a batch planned long ago and never committed (the ``stuck`` notice, with the batch id, its
  age and the usual cadence), then its commit (a progress update, no more notice);
* ``--recording``: a batch the recording has a progress update for is shown with the
  listener's numbers (rows, durations), the others with the derived ones;
* a checkpoint gone between discovery and the first read: one error notice, no thread left;
* ``stop()`` before ``start()`` (the dashboard quit before the backend started).

Events are collected from the backend's own thread through a queue; waits are on the event
looked for (the deadline only turns a hang into a failure)."""

from __future__ import annotations

import queue
import shutil
import time
from collections.abc import Callable

from streamwatch.backends.checkpoints import RUN_ID, CheckpointBackend
from streamwatch.model.events import QueryProgress, QueryStarted
from streamwatch.model.runtime import RuntimeNotice
from tests.helpers.fake_checkpoint import QUERY_ID, FakeCheckpoint
from tests.helpers.recording import write_recording

DEADLINE_S = 30.0


class Collected:
    """What a backend emitted, in order; ``until(pred)`` waits for the first match."""

    def __init__(self) -> None:
        self.q: queue.Queue[object] = queue.Queue()
        self.events: list[object] = []

    def emit(self, event: object) -> None:
        self.q.put(event)

    def until(self, pred: Callable[[object], bool], what: str) -> object:
        for e in self.events:
            if pred(e):
                return e
        deadline = time.monotonic() + DEADLINE_S
        while True:
            left = deadline - time.monotonic()
            assert left > 0, f"never emitted: {what}; got {self.events!r}"
            try:
                e = self.q.get(timeout=left)
            except queue.Empty:
                continue
            self.events.append(e)
            if pred(e):
                return e


def _progress(batch_id: int):
    return lambda e: isinstance(e, QueryProgress) and e.batch_id == batch_id


def test_a_stuck_batch_is_an_error_notice_and_its_commit_a_progress(tmp_path):
    now = int(time.time() * 1000)
    cp = FakeCheckpoint(tmp_path / "checkpoints" / "p" / "q")
    for b in range(3):  # one batch a second, a minute ago
        cp.plan(b, now - 60_000 + b * 1000, [f"file:///in/{b}.json"])
        cp.commit(b, now - 60_000 + b * 1000 + 200)
    cp.plan(3, now - 50_000, ["file:///in/3.json"])  # planned 50 s ago, never committed
    backend = CheckpointBackend([str(tmp_path)], poll_s=0.1)
    got = Collected()
    backend.start(got.emit)
    try:
        stuck = got.until(lambda e: isinstance(e, RuntimeNotice) and "stuck" in e.message, "the stuck notice")
        assert stuck.level == "error"
        head, age = stuck.message.split(" planned ", 1)
        assert head == "p_q stuck: batch 3", stuck.message
        assert age.endswith(" s ago, no commit (cadence 1000 ms)") and 49 <= int(age.split(" ")[0]) <= 80, age
        assert [e.batch_id for e in got.events if isinstance(e, QueryProgress)] == [0, 1, 2]
        cp.commit(3, int(time.time() * 1000))
        p3 = got.until(_progress(3), "batch 3's progress after its commit")
        assert p3.name == "p_q" and p3.run_id == RUN_ID
    finally:
        backend.stop()
    assert sum(1 for e in got.events if isinstance(e, RuntimeNotice) and "stuck" in e.message) == 1
    assert sum(1 for e in got.events if isinstance(e, QueryStarted)) == 1


def test_a_recording_gives_its_batches_the_listeners_numbers(tmp_path):
    t0 = 1_790_000_000_000
    cp = FakeCheckpoint(tmp_path / "checkpoints" / "p" / "q")
    for b in range(3):
        cp.plan(b, t0 + b * 1000, [f"file:///in/{b}.json"])
        cp.commit(b, t0 + b * 1000 + 200)
    progress = {"id": QUERY_ID, "runId": "a0a0a0a0-0000-4000-8000-000000000001", "name": "q",
                "timestamp": "2026-09-21T13:33:21.000Z", "batchId": 1, "batchDuration": 380, "numInputRows": 900,
                "inputRowsPerSecond": 450.0, "processedRowsPerSecond": 2100.0,
                "durationMs": {"addBatch": 300, "triggerExecution": 390}, "stateOperators": [], "sources": [],
                "sink": {"description": "FileSink[/out]", "numOutputRows": 900}}
    rec = write_recording(tmp_path / "events.jsonl", t0, (t0 + 1300, progress))
    backend = CheckpointBackend([str(cp.root)], poll_s=0.1, recording=str(rec))
    got = Collected()
    backend.start(got.emit)
    try:
        p1 = got.until(_progress(1), "batch 1")
        p2 = got.until(_progress(2), "batch 2")
    finally:
        backend.stop()
    [shown] = [q.query_name for q in backend.plan.queries]
    assert (p1.num_input_rows, p1.duration_ms["triggerExecution"], p1.name) == (900, 390, shown)
    assert (p2.num_input_rows, p2.duration_ms) == (0, {"triggerExecution": 200})  # derived: commit − plan
    backend.stop()  # idempotent


def test_a_checkpoint_gone_before_the_first_read_is_one_error_notice(tmp_path):
    cp = FakeCheckpoint(tmp_path / "checkpoints" / "p" / "q")
    cp.plan(0, 1_790_000_000_000)
    cp.commit(0, 1_790_000_000_200)
    backend = CheckpointBackend([str(cp.root)], poll_s=0.1)  # discovered here
    shutil.rmtree(cp.root)
    got = Collected()
    backend.start(got.emit)
    notice = got.until(lambda e: isinstance(e, RuntimeNotice), "a notice")
    backend.stop()
    assert notice.level == "error" and str(cp.root) in notice.message and "\n" not in notice.message, notice
    assert not any(isinstance(e, (QueryStarted, QueryProgress)) for e in got.events)
    assert got.q.empty(), "the backend kept emitting after it could not open the checkpoint"


def test_stop_before_start_returns_at_once(tmp_path):
    cp = FakeCheckpoint(tmp_path / "cp")
    backend = CheckpointBackend([str(cp.root)], poll_s=0.1)
    t = time.monotonic()
    backend.stop()
    backend.stop()
    assert time.monotonic() - t < 1.0
    assert [q.query_name for q in backend.plan.queries] == ["cp"]


def test_a_file_source_not_catching_up_is_a_warning_notice(tmp_path):
    """Files landed long after the last batch was planned, none planned since: the dashboard
    says the source is not catching up, with the files waiting and the oldest one's age."""
    import os

    landing = tmp_path / "landing"
    landing.mkdir()
    now = int(time.time() * 1000)
    cp = FakeCheckpoint(tmp_path / "checkpoints/p/q")
    for b in range(3):
        f = landing / f"f{b}.json"
        f.write_text("{}")
        cp.plan(b, now - 600_000 + b * 1000, [f"file://{f}"])
        cp.commit(b, now - 600_000 + b * 1000 + 200)
    for i, age_ms in ((3, 300_000), (4, 200_000)):
        f = landing / f"f{i}.json"
        f.write_text("{}")
        os.utime(f, ns=((now - age_ms) * 1_000_000,) * 2)
    backend = CheckpointBackend([str(cp.root)], poll_s=0.1)
    got = Collected()
    backend.start(got.emit)
    try:
        notice = got.until(lambda e: isinstance(e, RuntimeNotice) and "not catching up" in e.message, "lag notice")
        assert isinstance(notice, RuntimeNotice) and notice.level == "warning"
        assert notice.message.startswith("q: source 0 is not catching up: 2 file(s) waiting, the oldest landed ")
        age_s = int(notice.message.rsplit("landed ", 1)[1].split(" ")[0])
        assert 300 <= age_s <= 300 + DEADLINE_S
    finally:
        backend.stop()
