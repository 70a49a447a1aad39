"""Keys that arrive in one burst, as a terminal delivers fast typing or a paste: the driver
posts them all before the app handles the first. Pilot's press() waits after every key, so
these tests post the Key events themselves."""

from __future__ import annotations

from textual import events

from conftest import drawn, run_app, wait_for

CHARS = {":": "colon", "/": "slash", " ": "space", "=": "equals_sign"}


def burst(app, text: str) -> None:
    """Post every key of ``text`` to the app at once (no waiting in between)."""
    for ch in text:
        app.post_message(events.Key(CHARS.get(ch, ch), ch))


def test_fast_typing_after_colon_lands_in_the_command_line(make_app):
    app = make_app()

    async def scenario(pilot):
        line = app.query_one("#cmdline")
        burst(app, ":events")  # s and t are bindings too (start, trigger)
        await wait_for(pilot, lambda: line.value == "events", "the whole command in the line")
        assert app.active_tab == "queries" and line.mode == "command", "no key reached a binding"
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.active_tab == "events", "the events tab")

    run_app(app, scenario)


def test_colon_and_slash_typed_inside_the_line_are_characters(make_app):
    app = make_app()

    async def scenario(pilot):
        line = app.query_one("#cmdline")
        burst(app, "/10:00/x")
        await wait_for(pilot, lambda: line.value == "10:00/x", "the filter text with : and /")
        assert line.mode == "filter"

    run_app(app, scenario)


def test_colon_over_the_help_screen_does_not_open_the_line(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: app.screen is not app.dashboard, "the help screen")
        await pilot.press("colon")
        await drawn(pilot, app)  # the key handled and the screen settled
        assert not app.dashboard.query_one("#cmdline").display

    run_app(app, scenario)


def test_a_tab_key_typed_right_before_slash_filters_that_tab(make_app):
    """``5/gold`` in one burst: the tab switch must not be overtaken by the ``/`` opener (the
    events snapshot once showed the queries view filtered and the events unfiltered)."""
    app = make_app()

    async def scenario(pilot):
        line = app.query_one("#cmdline")
        burst(app, "5/gold")
        await wait_for(pilot, lambda: line.value == "gold", "the filter text")
        assert app.active_tab == "events" and line.mode == "filter"
        assert app.dashboard.needle("events") == "gold" and app.dashboard.needle("queries") == ""
        await pilot.press("enter")
        table = app.query_one("#event-table")
        await wait_for(pilot, lambda: table.row_count > 0 and all("gold" in " ".join(map(str, table.get_row_at(i))).lower()
                                                                 for i in range(table.row_count)), "only gold events")

    run_app(app, scenario)


def test_digits_typed_into_the_command_line_are_characters(make_app):
    app = make_app()

    async def scenario(pilot):
        line = app.query_one("#cmdline")
        burst(app, ":land 5")
        await wait_for(pilot, lambda: line.value == "land 5", "the whole command in the line")
        assert app.active_tab == "queries"

    run_app(app, scenario)
