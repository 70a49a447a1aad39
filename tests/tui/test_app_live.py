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
            app = pilot.app
            state = {n: (r.status, r.batch_id) for n, r in app.board.rows.items()}
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; queries {state}; "
                                 f"notices {[n.message for n in app.model.notices][-5:]}")
        await pilot.pause(0.2)


def test_three_queries_appear_and_advance_then_quit_cleanly(spark, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.app import StreamwatchApp

    backend = LiveBackend(
        get_pipeline("flights"), Workspace(tmp_path), trigger="processingTime=1 second",
        spark=spark, land_every_s=0.5, initial_files=3, max_files=10,
    )
    app = StreamwatchApp(backend, checkpoint_refresh_s=0.5)
    names = ["flights_bronze", "flights_silver", "flights_gold"]

    async def scenario() -> dict[str, int]:
        async with app.run_test(size=(120, 40)) as pilot:
            table = app.query_one("#query-table")
            planned = [q.query_name for q in backend.plan.queries]
            assert [str(k.value) for k in table.rows] == planned  # first frame, before Spark
            assert set(names) <= set(planned)
            await _wait_for(pilot, lambda: all(app.board.rows[n].batch_id is not None for n in names),
                            180, "a first batch of every query")
            first = {n: app.board.rows[n].batch_id for n in names}
            await pilot.press("colon", *"land 4", "enter")  # more data now: batch ids must advance
            await _wait_for(pilot, lambda: all(app.board.rows[n].batch_id > first[n] for n in names),
                            180, "batch ids to advance")
            await _wait_for(pilot, lambda: len(app.model.landed) >= 5, 30, "landed files in the landing panel")
            await _wait_for(pilot, lambda: app.model.heads.get("flights_bronze") is not None
                            and app.model.heads["flights_bronze"].commit_batch is not None,
                            30, "the checkpoint scan to show a commit")
            assert str(table.get_cell("flights_bronze", "status")) in ("active", "idle")
            # controls on the real queries: stop, start, land, change trigger, results
            await pilot.press("x")
            await _wait_for(pilot, lambda: app.board.rows["flights_bronze"].status == "stopped", 60, "bronze to stop")
            await pilot.press("s")
            await _wait_for(pilot, lambda: app.board.rows["flights_bronze"].status in ("active", "idle"), 60,
                            "bronze to start again")
            await pilot.press("colon", *"trigger 500ms silver", "enter")
            await _wait_for(pilot, lambda: backend.triggers["flights_silver"] == "processingTime=500ms"
                            and str(table.get_cell("flights_silver", "trigger")) == "500ms", 60, "the new trigger")
            await pilot.press("colon", *"results bronze", "enter")
            results = app.query_one("#results-table")
            await _wait_for(pilot, lambda: results.row_count > 0, 60, "bronze rows in the results tab")
            await pilot.press("3")
            await _wait_for(pilot, lambda: app.query_one("#cp-batches").row_count > 0, 30, "the batch timeline")
            # the pipeline tab: the live pipeline's chain learnt from its checkpoints, drawn
            await pilot.press("7")
            chain = {("flights_bronze", "flights_silver"), ("flights_silver", "flights_gold")}
            await _wait_for(pilot, lambda: app.model.pipeline is not None and chain <= {
                (e.upstream, e.downstream) for e in app.model.pipeline.links if e.learnt}, 60, "the learnt chain")
            await _wait_for(pilot, lambda: "← silver:" in str(app.query_one("#pipe-graph").content), 10,
                            "the pipeline drawn")
            graph = app.model.pipeline
            assert [graph.layer(n).column for n in names] == [0, 1, 2]
            assert graph.slowest in planned and graph.layer(graph.slowest).slowest
            assert all(e.backlog_files is not None and e.backlog_files >= 0 for e in graph.links if e.learnt)
            await pilot.press("q")
            await _wait_for(pilot, lambda: not app.is_running, 60, "the app to exit")
            return first

    first = asyncio.run(scenario())
    assert set(first) == set(names)
    assert spark.streams.active == [], "quitting must stop every query"
    assert app.return_code == 0
