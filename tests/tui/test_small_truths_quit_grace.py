"""A quit whose stop grace ran out says so where the user reads it once the screen is gone:
the line the dashboard prints when it exits names the queries and what Spark does next."""

from __future__ import annotations

from conftest import ControlledBackend, run_app, settle


class _GraceRanOut(ControlledBackend):
    stop_grace_s = 30.0

    def stop(self) -> None:
        self.forced_queries = ["flights_silver"]  # as LiveBackend records them during its stop


def test_quit_line_names_the_queries_the_grace_ran_out_on(recorded):
    from streamwatch.tui.app import StreamwatchApp

    plan, objects = recorded
    app = StreamwatchApp(_GraceRanOut(plan, objects), checkpoint_refresh_s=0, watch_landing=False)

    said: list[str] = []

    async def scenario(pilot):
        await settle(pilot, app)
        app.exit = lambda result=None, return_code=0, message=None: said.append(str(message))  # what it prints
        await pilot.press("q")
        await app.workers.wait_for_complete()
        await pilot.pause()

    run_app(app, scenario)
    said_text = "\n".join(said)
    assert "stopped in" in said_text
    assert ("flights_silver: its running batch did not commit within the 30 s stop grace; stopped anyway "
            "(that batch stays planned, not committed: Spark runs it again on restart)") in said_text
