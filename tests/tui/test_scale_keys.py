"""Issue 18 (a hundred queries): enter on the queries table is the app's own priority binding,
answered as the app reads the key — unless keys typed before it (an arrow) are still queued
for the table: then it takes its turn, so a burst "down, enter" opens the query below."""

from __future__ import annotations

from textual import events
from textual.widgets import TabPane

from streamwatch.tui.views.queries import QueriesView

from conftest import drawn, run_app, wait_for


def post(app, *keys: str) -> None:
    """Keys in one burst, as the terminal driver posts them (no waiting in between)."""
    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


def test_enter_opens_the_highlighted_query(make_app):
    app = make_app()
    seen: list[tuple[str, str | None]] = []

    async def scenario(pilot):
        table = app.query_one("#query-table", QueriesView)
        for key in ("down", "down"):
            post(app, key, "enter")
            await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
            await drawn(pilot, app)
            seen.append((app.active_tab, app.selected))
            post(app, "1")
            await wait_for(pilot, lambda: app.active_tab == "queries" and app.focused is table, "the queries tab")
            await drawn(pilot, app)

    run_app(app, scenario)
    assert seen == [("detail", "flights_silver"), ("detail", "flights_gold")]


def test_enter_elsewhere_is_the_focused_widgets_key(make_app):
    app = make_app()

    async def scenario(pilot):
        post(app, "colon", "p", "a", "u", "s", "e", "enter")  # enter submits the command line
        await wait_for(pilot, lambda: app.paused, "the pause command")
        await drawn(pilot, app)
        assert app.active_tab == "queries"

    run_app(app, scenario)


def test_late_news_of_a_focus_given_before_a_tab_switch_does_not_switch_back(make_app):
    """The race behind a fast enter, made deterministic: the queries pane's ``Focused`` news
    arrives after enter switched to the detail tab (the focus has not moved since): ignored.
    A focus that moved into another pane after the switch still activates that pane."""
    app = make_app()

    async def scenario(pilot):
        queries = app.query_one("#queries", TabPane)
        post(app, "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        await drawn(pilot, app)
        queries.post_message(TabPane.Focused(queries))  # the late news
        await drawn(pilot, app)
        assert app.active_tab == "detail"
        app.query_one("#cp-batches").focus()  # a real focus move into the checkpoint pane
        await wait_for(pilot, lambda: app.active_tab == "checkpoint", "the checkpoint tab")

    run_app(app, scenario)
