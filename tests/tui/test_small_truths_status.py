"""An error leaves the status line once it has passed: the failed query makes progress again
(its restart's first batch), or a new command is typed; an unrelated query's progress leaves
it alone."""

from __future__ import annotations

from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

from conftest import run_app as run
from conftest import settle, wait_for


def _status(app) -> str:
    return str(app.query_one("#status").render())


async def _fail_gold(pilot, app) -> None:
    await settle(pilot, app)
    gold = app.model.board.rows["flights_gold"]
    app.emit(QueryStarted(id=gold.query_id, run_id="run-2", timestamp="2026-01-01T10:01:00.000Z", name="flights_gold"))
    app.emit(QueryTerminated(id=gold.query_id, run_id="run-2", timestamp="2026-01-01T10:01:01.000Z",
                             exception="java.io.IOException: disk full"))
    await wait_for(pilot, lambda: "flights_gold failed in batch" in _status(app), "the failure")


def test_a_failure_stays_until_its_query_runs_again(make_app):
    app = make_app()

    async def scenario(pilot):
        await _fail_gold(pilot, app)
        gold = app.model.board.rows["flights_gold"]
        bronze = app.model.board.rows["flights_bronze"]
        # another query's progress: the failure is still news
        app.emit(QueryProgress(id=bronze.query_id, run_id=bronze.run_id, timestamp="2026-01-01T10:01:02.000Z",
                               name="flights_bronze", batch_id=99))
        await wait_for(pilot, lambda: app.model.board.rows["flights_bronze"].batch_id == 99, "bronze's progress")
        await settle(pilot, app)
        assert "flights_gold failed in batch" in _status(app)
        # gold restarted and committed a batch: its failure has passed
        app.emit(QueryStarted(id=gold.query_id, run_id="run-3", timestamp="2026-01-01T10:01:03.000Z", name="flights_gold"))
        app.emit(QueryProgress(id=gold.query_id, run_id="run-3", timestamp="2026-01-01T10:01:04.000Z",
                               name="flights_gold", batch_id=20))
        await wait_for(pilot, lambda: "failed" not in _status(app), "the failure to leave the status line")

    run(app, scenario)


def test_a_new_command_clears_the_old_error(make_app):
    app = make_app()

    async def scenario(pilot):
        await _fail_gold(pilot, app)
        await pilot.press(":", *"detail flights_silver", "enter")
        await wait_for(pilot, lambda: "failed in batch" not in _status(app), "the old error to go")

    run(app, scenario)
