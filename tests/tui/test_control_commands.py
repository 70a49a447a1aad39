"""The `:` commands that are not a control of the backend, and the controls' failure paths,
run in the real dashboard (Pilot) on the recorded flights run: pause/resume, filter,
help, quit, `:state` without a query or on an uncommitted batch, a control with no query
selected, a control the backend raises on (shown, never a crash), `:results`."""

from __future__ import annotations

from conftest import run_app as run
from conftest import wait_for


def status(app) -> str:
    return str(app.query_one("#status").render())


async def command(pilot, line: str) -> None:
    """Run ``line`` as the `:` command line does once enter is pressed (typing itself is
    covered in test_dashboard.py), then let the app process what it posted."""
    pilot.app.controls.run_command(line)
    await pilot.pause()


def test_pause_and_resume_commands_toggle_only_when_needed(make_app):
    app = make_app()

    async def scenario(pilot):
        await command(pilot, "resume")
        assert app.paused is False  # resuming a running display changes nothing
        await command(pilot, "pause")
        assert app.paused is True
        await command(pilot, "pause")
        assert app.paused is True  # pausing twice stays paused
        await command(pilot, "resume")
        assert app.paused is False

    run(app, scenario)


def test_filter_and_help_commands(make_app):
    app = make_app()

    async def scenario(pilot):
        await command(pilot, "filter gold")
        table = app.dashboard.query_one("#query-table")
        await wait_for(pilot, lambda: table.row_count == 1, "the filter to leave one query")
        assert str(table.get_row_at(0)[0]).endswith("flights_gold")
        await command(pilot, "help")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")

    run(app, scenario)


def test_control_without_a_selected_query_is_a_warning(make_app):
    app = make_app()

    async def scenario(pilot):
        app.selected = None
        await command(pilot, "restart")
        assert status(app) == "restart: no query selected"
        await app.workers.wait_for_complete()
        assert not [c for c in app.backend.calls if c[0] == "restart_query"]

    run(app, scenario)


def test_a_control_that_raises_is_shown_as_failed(make_app):
    app = make_app()

    def broken(name):
        raise OSError(f"checkpoint of {name} is locked\nsecond line")

    app.backend.stop_query = broken

    async def scenario(pilot):
        await command(pilot, "stop flights_gold")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: "failed" in status(app), "the failure in the status line")
        assert status(app).startswith("stop flights_gold failed: ")
        assert "checkpoint of flights_gold is locked" in status(app) and "\n" not in status(app)
        assert app.is_running

    run(app, scenario)


def test_state_needs_a_query_and_a_committed_batch(make_app, tmp_path):
    app = make_app()

    async def scenario(pilot):
        app.selected = None
        await command(pilot, "state 3")
        assert status(app) == "state: no query selected"
        app.selected = "flights_gold"
        # a checkpoint read with three committed batches: only what the command reads, so it
        # is taken out again before the app runs on (the views cannot draw it: a 1-second
        # tick drawing it in between wrote a display error over the status line, under load)
        before = app.model.checkpoints.get("flights_gold")
        app.model.checkpoints["flights_gold"] = type("Read", (), {"commit_batch_ids": [0, 1, 2]})()
        app.controls.run_command("state 7")  # answered at once: checked before any await
        shown = status(app)
        if before is None:
            del app.model.checkpoints["flights_gold"]
        else:
            app.model.checkpoints["flights_gold"] = before
        assert shown == "state: batch 7 of flights_gold is not committed (last committed: 2)"
        await pilot.pause()
        assert type(app.screen).__name__ != "StateScreen"

    run(app, scenario)


def test_results_command_opens_the_tab_and_reads_the_query(make_app):
    app = make_app()

    async def scenario(pilot):
        await command(pilot, "results flights_gold")
        assert app.active_tab == "results" and app.selected == "flights_gold"
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: ("read_results", "flights_gold", 100) in [c[:3] for c in app.backend.calls
                                                                                 if c[0] == "read_results"],
                       "the gold table to be read", timeout_s=120)

    run(app, scenario)


def test_quit_command_stops_the_backend_and_exits(make_app):
    app = make_app()

    async def scenario(pilot):
        await command(pilot, "quit")
        await wait_for(pilot, lambda: not app.is_running or app.backend.stopped > 0, "the backend to stop")
        assert app.backend.stopped >= 1

    run(app, scenario)
    assert app.return_code == 0
