"""The real dashboard (Pilot) on the real flights pipeline in the shared SparkSession."""

from __future__ import annotations

import asyncio
import time

import pytest

pytestmark = pytest.mark.spark


async def _wait_for(pilot, predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await pilot.pause(0.2)


def test_three_queries_appear_and_advance_then_quit_cleanly(spark, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.app import StreamwatchApp

    backend = LiveBackend(
        get_pipeline("flights"), Workspace(tmp_path), trigger="processingTime=1 second",
        spark=spark, land_every_s=0.5, initial_files=3, max_files=20,
    )
    app = StreamwatchApp(backend, checkpoint_refresh_s=0.5)
    names = ["flights_bronze", "flights_silver", "flights_gold"]

    async def scenario() -> dict[str, int]:
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.query_one("#queries")
            assert [str(k.value) for k in table.rows] == names  # first frame, before Spark
            await _wait_for(pilot, lambda: all(app.board.rows[n].batch_id is not None for n in names),
                            180, "a first batch of every query")
            first = {n: app.board.rows[n].batch_id for n in names}
            await _wait_for(pilot, lambda: all(app.board.rows[n].batch_id > first[n] for n in names),
                            180, "batch ids to advance")
            await _wait_for(pilot, lambda: len(app.landed) >= 5, 30, "landed files in the landing panel")
            await _wait_for(pilot, lambda: app.query_one("#checkpoints").get_cell("flights_bronze", "commits") != "-",
                            30, "the checkpoint panel to show a commit")
            assert table.get_cell("flights_bronze", "status") in ("active", "idle")
            await pilot.press("q")
            await _wait_for(pilot, lambda: not app.is_running, 60, "the app to exit")
            return first

    first = asyncio.run(scenario())
    assert set(first) == set(names)
    assert spark.streams.active == [], "quitting must stop every query"
    assert app.return_code == 0
