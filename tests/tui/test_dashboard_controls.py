"""Pilot tests of the dashboard's controls against an in-test Backend fed by the recorded
flights run (no Spark): every key and `:` command reaches the backend, status follows, an
unsupported control is said, and quitting stops the backend."""

from __future__ import annotations

import pytest

from streamwatch.backends.base import Control

from conftest import cell, wait_for
from conftest import run_app as run


@pytest.mark.parametrize("keys,expected", [
    (("x",), ("stop_query", "flights_bronze")),
    (("down", "r"), ("restart_query", "flights_silver")),
    (("s",), ("start_query", "flights_bronze")),
    (("X",), ("stop_pipeline",)),
    (("R",), ("restart_pipeline",)),
    (("S",), ("start_pipeline",)),
    (("l",), ("land", 1, None)),
    (("colon", *"land 3 flights", "enter"), ("land", 3, "flights")),
    (("t", *"5s gold", "enter"), ("set_trigger", "processingTime=5s", "flights_gold")),
    (("colon", *"stop all", "enter"), ("stop_pipeline",)),
])
def test_controls_reach_the_backend(make_app, keys, expected):
    app = make_app()

    async def scenario(pilot):
        await pilot.press(*keys)
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: expected in app.backend.calls, f"{expected} to be called")
        await pilot.pause()
        assert "failed" not in str(app.query_one("#status").render())

    run(app, scenario)


def test_stop_then_start_shows_status_changes_and_new_trigger(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("x")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_bronze", "status") == "stopped", "stopped")
        await pilot.press("s")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_bronze", "status") == "active", "active")
        await pilot.press("t", *"500ms", "enter")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "trigger") == "500ms", "new trigger")

    run(app, scenario)


def test_unsupported_control_is_reported_not_crashing(make_app):
    app = make_app()
    app.backend.CONTROLS = frozenset(Control) - {Control.LAND}  # this backend cannot land data

    async def scenario(pilot):
        await pilot.press("l")
        assert "not supported" in str(app.query_one("#status").render())
        await app.workers.wait_for_complete()
        assert not [c for c in app.backend.calls if c[0] == "land"]
        assert app.is_running

    run(app, scenario)


def test_quit_stops_the_backend(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to exit")

    run(app, scenario)
    assert app.backend.stopped == 1
    assert app.return_code == 0


def test_a_frame_due_after_the_app_exited_draws_nothing_and_does_not_raise(make_app):
    """A render timer can fire while the app shuts down (seen in bench/tui_bench.py at the
    end of a flood): by then the screen stack is empty."""
    app = make_app()

    async def scenario(pilot):
        assert app.screen_stack

    run(app, scenario)
    assert not app.screen_stack
    app._frame()  # raised ScreenStackError before the guard
