"""What the header and the checkpoint tab say when no Spark runs (issue 32 item 8.3, 8.4):
``streamwatch watch`` says it watches N checkpoints without Spark — N counted from the
checkpoint folders on disk — never ``Spark: starting…``; a replay whose checkpoints are not on
this machine says so in one line, never a raw ``no such file or directory``; a replay of a
file without a header names the file once it is read, instead of ``Replay: reading…``
forever."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from streamwatch.analysis import fmt
from streamwatch.backends.checkpoints import CheckpointBackend
from streamwatch.backends.replay import ReplayBackend
from streamwatch.events.jsonl import JsonlRecorder
from streamwatch.model.events import QueryProgress, QueryStarted
from streamwatch.model.runtime import QueryPlan, RecordedSession, RunPlan
from streamwatch.tui.readers import read_checkpoints
from tests.helpers.fake_checkpoint import FakeCheckpoint

from conftest import wait_for

T0 = 1_790_000_000_000


def _checkpoints_on_disk(root: Path) -> int:
    """Folders under ``root`` holding an ``offsets`` log: the checkpoints, counted by hand."""
    return sum(1 for d, subdirs, _ in os.walk(root) if "offsets" in subdirs)


def test_watch_header_says_how_many_checkpoints_and_no_spark(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    for name in ("orders", "clicks", "gold"):
        cp = FakeCheckpoint(tmp_path / "checkpoints" / "p" / name)
        cp.plan(0, T0)
        cp.commit(0, T0 + 300)
    n = _checkpoints_on_disk(tmp_path)
    assert n == 3
    backend = CheckpointBackend([str(tmp_path)], poll_s=0.1)
    app = StreamwatchApp(backend, watch_landing=False, checkpoint_refresh_s=0)
    lines: list[str] = []

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_for(pilot, lambda: isinstance(app.model.session_info, RecordedSession), "the watch header")
            await wait_for(pilot, lambda: "Watching" in str(app.query_one("#session").render()), "the header drawn")
            lines.append(str(app.query_one("#session").render()))
            await pilot.press("q")

    asyncio.run(scenario())
    [line] = lines
    assert line.startswith(f"Watching {n} checkpoints, read every 0.1 s"), line
    assert "no Spark" in line and "starting" not in line and "Replay" not in line, line


def test_watch_header_with_a_recording_names_it():
    info = RecordedSession(source=fmt.CHECKPOINTS_SOURCE, app_name="1 checkpoint, read every 1 s (numbers from ev.jsonl)")
    assert fmt.session_line(info) == ("Watching 1 checkpoint, read every 1 s (numbers from ev.jsonl) · no Spark: "
                                      "batches read from the checkpoint files")
    # before the backend said anything, a screen that passes ``watching`` says the same
    assert fmt.session_line(None, watching=True).startswith("Watching checkpoints · no Spark")
    assert fmt.session_line(None) == "Spark: starting…" and fmt.session_line(None, replay=True) == "Replay: reading…"


def test_a_replays_checkpoints_missing_here_are_one_line_each(tmp_path):
    here = FakeCheckpoint(tmp_path / "cp" / "here")
    here.plan(0, T0)
    here.commit(0, T0 + 300)
    gone = tmp_path / "elsewhere" / "cp" / "gone"  # the recording's machine, not this one
    assert not gone.exists() and (here.root / "offsets").is_dir()
    plan = RunPlan(pipeline="replay x", description="replaying x", landing=(), trigger="replay",
                   queries=(QueryPlan("gone", "", str(gone), ""), QueryPlan("here", "", str(here.root), ""),
                            QueryPlan("unnamed", "", "", "")))
    read = read_checkpoints(plan)
    assert set(read.checkpoints) == {"here"}
    assert read.errors["gone"] == f"checkpoint not on this machine: {gone} (the recording was made elsewhere)"
    assert "\n" not in read.errors["unnamed"] and read.errors["unnamed"].startswith("checkpoint not known")
    assert not any("no such file" in e for e in read.errors.values())


def test_the_replay_checkpoint_tab_says_why_there_is_no_checkpoint(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    path = tmp_path / "events.jsonl"
    with JsonlRecorder(path) as rec:
        rec.write(QueryStarted("qa", "qa-run", None, name="bronze"))
        rec.write(QueryProgress.from_dict({"id": "qa", "runId": "qa-run", "name": "bronze", "batchId": 0,
                                           "timestamp": "2026-11-20T10:00:01.000Z", "numInputRows": 1}))
    app = StreamwatchApp(ReplayBackend(path, speed=0), watch_landing=False, checkpoint_refresh_s=0.1)
    heads: list[str] = []

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_for(pilot, lambda: "bronze" in app.model.board.rows, "the replayed query")
            await pilot.press("3")
            head = app.query_one("#cp-head")
            await wait_for(pilot, lambda: "checkpoint not known" in str(head.render()), "the checkpoint tab's line")
            heads.append(str(head.render()))
            await pilot.press("q")

    asyncio.run(scenario())
    assert "no such file" not in heads[0] and "\n" not in heads[0]


def test_a_finished_replay_without_header_names_its_file(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    path = tmp_path / "no-header.jsonl"
    with JsonlRecorder(path) as rec:
        rec.write(QueryStarted("qa", "qa-run", None, name="bronze"))
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "header"
    path.write_text("\n".join(lines[1:]) + "\n")  # the same events, no header line
    backend = ReplayBackend(path, speed=0)
    app = StreamwatchApp(backend, watch_landing=False, checkpoint_refresh_s=0)
    shown: list[str] = []

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await wait_for(pilot, backend.done.is_set, "the replay to finish")
            await wait_for(pilot, lambda: isinstance(app.model.session_info, RecordedSession), "the header")
            await wait_for(pilot, lambda: "no-header.jsonl" in str(app.query_one("#session").render()), "drawn")
            shown.append(str(app.query_one("#session").render()))
            await pilot.press("q")

    asyncio.run(scenario())
    assert shown == ["Replay of file: no-header.jsonl"]
