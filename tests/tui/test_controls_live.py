"""The pipeline controls ``r`` (restart the selected query), ``X`` (stop the pipeline), ``S``
(start every query) and ``R`` (restart the pipeline) pressed in the real dashboard (Pilot) on
the real :class:`~streamwatch.spark.live.LiveBackend` running the bundled flights pipeline in
the shared SparkSession. Spark is the oracle: ``spark.streams.active`` must show the effect
(a new ``runId`` for the same query ``id`` — the checkpoint resumed —, no active query …), and
the board must agree with it. Every wait is on that state, never a sleep."""

from __future__ import annotations

import asyncio
import time

import pytest

pytestmark = pytest.mark.spark

NAMES = ("flights_bronze", "flights_silver", "flights_gold")


def _spark_runs(spark) -> dict[str, tuple[str, str]]:
    """query name → (id, runId) of the pipeline's active queries, as Spark reports them."""
    return {q.name: (q.id, q.runId) for q in spark.streams.active if q.name in NAMES}


async def _wait_for(pilot, spark, predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            app = pilot.app
            board = {n: (r.status, r.run_id, r.batch_id) for n, r in app.board.rows.items()}
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}; board {board}; "
                                 f"spark {_spark_runs(spark)}; notices {[n.message for n in app.model.notices][-5:]}")
        await pilot.pause(0.2)


def test_r_X_S_R_act_on_the_real_queries(spark, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.app import StreamwatchApp

    backend = LiveBackend(get_pipeline("flights"), Workspace(tmp_path), trigger="processingTime=1 second",
                          spark=spark, land_every_s=0.5, initial_files=2, max_files=4)
    app = StreamwatchApp(backend, checkpoint_refresh_s=0)
    rows = app.board.rows

    def board_matches_spark() -> bool:
        runs = _spark_runs(spark)
        return set(runs) == set(NAMES) and all(
            rows[n].status in ("active", "idle") and rows[n].run_id == runs[n][1] for n in NAMES)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            w = lambda pred, what, t=180: _wait_for(pilot, spark, pred, t, what)  # noqa: E731
            await w(lambda: board_matches_spark() and all(rows[n].batch_id is not None for n in NAMES),
                    "a first batch of every query")
            before = _spark_runs(spark)
            assert app.selected == "flights_bronze"  # the first row is highlighted

            # r: only the selected query restarts — same id (its checkpoint), a new runId
            await pilot.press("r")
            await w(lambda: _spark_runs(spark).get("flights_bronze", before["flights_bronze"])[1]
                    != before["flights_bronze"][1] and board_matches_spark(), "bronze's new run", 120)
            after_r = _spark_runs(spark)
            assert after_r["flights_bronze"][0] == before["flights_bronze"][0]
            assert {n: after_r[n] for n in NAMES[1:]} == {n: before[n] for n in NAMES[1:]}, "r restarted others"

            # X: every query stops; the board says stopped (we asked), not failed
            await pilot.press("X")
            await w(lambda: not _spark_runs(spark) and all(rows[n].status == "stopped" for n in NAMES),
                    "the pipeline to stop", 120)
            assert all(rows[n].stop_requested and rows[n].exception is None for n in NAMES)
            stopped_at = {n: rows[n].batch_id for n in NAMES}

            # S: every query starts again from its checkpoint (same ids, new runIds)
            await pilot.press("S")
            await w(board_matches_spark, "every query to start again", 120)
            after_s = _spark_runs(spark)
            assert {n: after_s[n][0] for n in NAMES} == {n: after_r[n][0] for n in NAMES}
            assert all(after_s[n][1] != after_r[n][1] for n in NAMES)
            # fresh data reaches every layer; batch ids continue from the checkpoint, not from 0
            await pilot.press("colon", *"land 2", "enter")
            await w(lambda: all(rows[n].batch_id is not None and rows[n].batch_id > stopped_at[n] for n in NAMES),
                    "batch ids past the ones before the stop")

            # R: the whole pipeline restarts — every query a new runId, same ids
            await pilot.press("R")
            await w(lambda: board_matches_spark() and all(_spark_runs(spark)[n][1] != after_s[n][1] for n in NAMES),
                    "every query's new run", 120)
            after_big_r = _spark_runs(spark)
            assert {n: after_big_r[n][0] for n in NAMES} == {n: before[n][0] for n in NAMES}

            await pilot.press("q")
            await w(lambda: not app.is_running, "the app to exit", 60)

    asyncio.run(scenario())
    assert spark.streams.active == [], "quitting must stop every query"
    assert app.return_code == 0
