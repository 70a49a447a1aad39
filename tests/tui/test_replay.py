"""Replay: the real dashboard (Pilot) fed by ReplayBackend from a recording, a followed file,
and the backend's pacing (no Spark)."""

from __future__ import annotations

import asyncio
import threading
import time

from streamwatch.backends.replay import ReplayBackend
from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

from conftest import wait_for


def _ts(s: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:", time.gmtime(1795212000)) + f"{s:06.3f}Z"


def _progress(qid: str, name: str, batch: int, second: float) -> QueryProgress:
    return QueryProgress.from_dict({
        "id": qid, "runId": qid + "-run", "name": name, "timestamp": _ts(second), "batchId": batch,
        "batchDuration": 250, "numInputRows": 10, "inputRowsPerSecond": 40.0, "processedRowsPerSecond": 42.5,
        "durationMs": {"triggerExecution": 250}, "eventTime": {"watermark": "2013-01-01T15:59:00.000Z"},
        "sources": [{"description": "FileStreamSource[file:/in]", "numInputRows": 10}],
        "sink": {"description": "NoopTable", "numOutputRows": 3},
    })


def _recording(path, batches: int = 5, header: RecordingHeader | None = None) -> None:
    with JsonlRecorder(path, header=header) as rec:
        rec.write(QueryStarted("qa", "qa-run", _ts(0), name="bronze"))
        rec.write(QueryStarted("qb", "qb-run", _ts(0), name="gold"))
        for i in range(batches):
            rec.write(_progress("qa", "bronze", i, 1 + i))
        rec.write(_progress("qb", "gold", 0, 2))
        rec.write(QueryTerminated("qb", "qb-run", None, exception="org.apache.spark.SparkException: boom"))


async def _wait_for(pilot, predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await pilot.pause(0.1)


def test_replay_shows_the_recorded_queries_in_the_dashboard(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    path = tmp_path / "events.jsonl"
    _recording(path)
    backend = ReplayBackend(path, speed=0)
    assert [q.query_name for q in backend.plan.queries] == ["bronze", "gold"]
    app = StreamwatchApp(backend)

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await _wait_for(pilot, lambda: app.board.rows["bronze"].batch_id == 4, 20, "bronze batch 4")
            await _wait_for(pilot, lambda: app.board.rows["gold"].status == "failed", 20, "gold failed")
            assert app.board.rows["bronze"].total_input_rows == 50
            assert app.board.rows["bronze"].input_rps == 40.0
            await pilot.press("q")
            await _wait_for(pilot, lambda: not app.is_running, 20, "the app to exit")

    asyncio.run(scenario())
    assert backend.done.is_set() and backend.emitted == 9  # 2 started, 6 progress, 1 terminated


def test_the_header_names_the_recorded_application_not_a_live_session(tmp_path):
    from streamwatch.model.runtime import RecordedSession
    from streamwatch.tui.app import StreamwatchApp

    path = tmp_path / "events.jsonl"
    header = RecordingHeader(time_ms=1795212000000, source="listener", app={
        "sparkVersion": "4.2.0", "appId": "local-1795212000000", "appName": "streamwatch", "master": "local[2]",
        "pipeline": "flights"})
    _recording(path, header=header)
    app = StreamwatchApp(ReplayBackend(path, speed=0, follow=True))

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await _wait_for(pilot, lambda: isinstance(app.model.session_info, RecordedSession), 20, "the recorded session")
            line = str(app.query_one("#session").render())
            assert "Replay of recording: flights (local-1795212000000)" in line, line
            assert "Spark 4.2.0 on local[2]" in line and "started 2026-11-20 " in line, line
            assert "starting" not in line
            await pilot.press("q")

    asyncio.run(scenario())


def test_a_replay_without_header_says_it_is_reading_not_that_spark_starts(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    path = tmp_path / "events.jsonl"
    path.write_bytes(b"")
    app = StreamwatchApp(ReplayBackend(path, speed=0, follow=True))

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            # the event: the replay thread follows the still empty file and the app showed its notice
            await wait_for(pilot, lambda: any(n.message.startswith("following ") for n in app.model.notices),
                           "the replay to start following")
            assert str(app.query_one("#session").render()) == "Replay: reading…"
            await pilot.press("q")

    asyncio.run(scenario())


def test_follow_picks_up_events_appended_by_another_writer(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    path = tmp_path / "live.jsonl"
    rec = JsonlRecorder(path)
    rec.write(QueryStarted("qa", "qa-run", _ts(0), name="bronze"))
    rec.write(_progress("qa", "bronze", 0, 1))
    backend = ReplayBackend(path, speed=0, follow=True)
    app = StreamwatchApp(backend)

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await _wait_for(pilot, lambda: app.board.rows["bronze"].batch_id == 0, 20, "batch 0")
            rec.write(_progress("qa", "bronze", 1, 2))  # the job keeps recording
            await _wait_for(pilot, lambda: app.board.rows["bronze"].batch_id == 1, 20, "batch 1 appended later")
            await pilot.press("q")
            await _wait_for(pilot, lambda: not app.is_running, 20, "the app to exit")

    try:
        asyncio.run(scenario())
    finally:
        rec.close()
    assert not backend._thread.is_alive()


def test_speed_scales_the_recorded_gaps(tmp_path):
    path = tmp_path / "events.jsonl"
    _recording(path, batches=3)  # bronze batches 1 s apart, gold 1 s after bronze's first
    got: list = []
    done = threading.Event()
    backend = ReplayBackend(path, speed=10)
    t0 = time.monotonic()
    backend.start(lambda o: (got.append(o), backend.done.is_set() and done.set()))
    assert backend.done.wait(20)
    elapsed = time.monotonic() - t0
    # timestamps 0,0,1,2,3,2(gold),… → 3 s of forward gaps at 10× ≈ 0.3 s
    assert 0.25 <= elapsed < 3, elapsed
    assert sum(1 for o in got if isinstance(o, QueryProgress)) == 4
    backend.stop()
