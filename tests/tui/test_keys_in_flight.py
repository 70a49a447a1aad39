"""Issue 18 (a hundred queries): keys in flight (``streamwatch.tui.keys``). A key is in flight
from its delivery until handled; automatic garbage collection is held from a key's arrival
until every key is handled and the screen repainted, never past the cap, and never taken
from whoever else disabled it. enter gives way only to a key typed before it that is still
in flight."""

from __future__ import annotations

import gc

from textual import events

from streamwatch.tui.views.queries import QueriesView

from conftest import drawn, run_app, wait_for


def post(app, *keys: str) -> list[events.Key]:
    """Keys in one burst, as the terminal driver posts them (no waiting in between)."""
    sent = [events.Key(key, key if len(key) == 1 else None) for key in keys]
    for key in sent:
        app.post_message(key)
    return sent


def test_a_key_holds_collection_until_it_is_handled_and_painted(make_app):
    """While the table handles ``down``, automatic collection is off; once the
    move is on screen it is on again, no key is left in flight, and it was one hold."""
    app = make_app()
    during: list[tuple[str, bool]] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        table = app.query_one("#query-table", QueriesView)
        down = table.action_cursor_down

        def handled() -> None:  # the table handles the key (the binding's action, looked up by name)
            during.append(("down", gc.isenabled()))
            down()

        table.action_cursor_down = handled  # type: ignore[method-assign]
        answers = app.keys.answers
        post(app, "down")
        await wait_for(pilot, lambda: app.selected == "flights_silver", "the cursor to move")
        await drawn(pilot, app)
        await wait_for(pilot, lambda: not app.keys.held, "the hold to end")
        assert gc.isenabled()
        assert app.keys.in_flight == 0  # released as handled, not by a garbage collection
        assert app.keys.answers == answers + 1

    run_app(app, scenario)
    assert during == [("down", False)]


def test_collection_disabled_by_someone_else_stays_disabled(make_app):
    """The key's answer begins but collection is not the keys' to hold: disabled while the
    key is handled, and still disabled once the answer ended."""
    app = make_app()
    seen: list[object] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        table = app.query_one("#query-table", QueriesView)
        down = table.action_cursor_down

        def handled() -> None:
            seen.append((gc.isenabled(), app.keys.answering, app.keys.held))
            down()

        table.action_cursor_down = handled  # type: ignore[method-assign]
        answers = app.keys.answers
        gc.disable()
        try:
            post(app, "down")
            await wait_for(pilot, lambda: app.selected == "flights_silver", "the key")
            await drawn(pilot, app)
            await wait_for(pilot, lambda: not app.keys.answering, "the answer to end")
            seen.append((gc.isenabled(), app.keys.answers - answers))
        finally:
            gc.enable()

    run_app(app, scenario)
    assert seen == [(False, True, False), (False, 1)]


def test_an_answer_that_cannot_end_lasts_no_longer_than_the_cap(make_app):
    """A key whose way stays busy (here: the route reports messages queued, as a key held
    down would keep it) keeps its answer open; the cap ends it and enables collection again,
    and keys do not begin another answer for ``cap_s`` (the keys' clock, driven here)."""
    app = make_app()
    now = [100.0]
    app.keys.clock = lambda: now[0]
    app.keys.cap_s = 0.05  # the cap's timer runs on the app's clock, the resume on keys.clock
    steps: list[object] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        route = app.key_route_busy
        app.key_route_busy = lambda: True  # type: ignore[method-assign]
        answers = app.keys.answers
        kept = post(app, "down")  # alive, and its way busy: still in flight
        await wait_for(pilot, lambda: app.selected == "flights_silver", "the down key to be handled")
        assert app.keys.answers == answers + 1
        await wait_for(pilot, lambda: not app.keys.answering, "the cap")
        steps.append((gc.isenabled(), app.keys.held))
        post(app, "up")  # within cap_s of the cap (keys' clock): no answer begins
        await wait_for(pilot, lambda: app.selected == "flights_bronze", "the up key to be handled")
        steps.append((app.keys.answers - answers, app.keys.answering))
        app.key_route_busy = route  # type: ignore[method-assign]
        del kept[:]
        now[0] += 1.0
        post(app, "down")  # later: an answer again, ended once handled and painted
        await wait_for(pilot, lambda: app.selected == "flights_silver", "the second down key")
        assert app.keys.answers == answers + 2
        await wait_for(pilot, lambda: not app.keys.answering, "the answer to end")
        steps.append(gc.isenabled())

    run_app(app, scenario)
    assert steps == [(True, False), (1, False), True]


def test_a_handled_key_still_referenced_is_not_in_flight(make_app):
    """A key that is handled but still referenced (each message loop a key passed through
    keeps the last message it ran until its next one: a tab pane's can keep it for minutes;
    here the test keeps it) is no longer in flight once nothing is queued on its way: the
    answer ends (no cap here to end it) and the next enter is answered as the app reads it."""
    app = make_app()
    app.keys.cap_s = 600.0
    steps: list[object] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        answers = app.keys.answers
        kept = post(app, "z")  # no key of the dashboard: it bubbles up to the screen
        await wait_for(pilot, lambda: app.keys.answers == answers + 1 and not app.keys.answering,
                       "its answer to begin and end")
        steps.append((app.keys.in_flight, gc.isenabled(), kept[0].key))
        post(app, "down", "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        steps.append(app.selected)

    run_app(app, scenario)
    assert steps == [(0, True, "z"), "flights_silver"]


def test_the_route_is_busy_while_a_message_waits_for_the_focused_widget(make_app):
    app = make_app()
    steps: list[bool] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        table = app.query_one("#query-table", QueriesView)
        steps.append(app.key_route_busy())
        table.post_message(events.Key("z", "z"))  # on its way: in the table's queue
        steps.append(app.key_route_busy())
        await drawn(pilot, app)
        steps.append(app.key_route_busy())

    run_app(app, scenario)
    assert steps == [False, True, False]


def test_enter_after_keys_still_in_flight_takes_its_turn(make_app):
    """"down, up, down, enter" in one burst opens the query the cursor ends on; once every
    key is handled none is left in flight, so the next enter is answered as the app reads it."""
    app = make_app()
    seen: list[object] = []

    async def scenario(pilot):
        table = app.query_one("#query-table", QueriesView)
        post(app, "down", "up", "down", "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        await drawn(pilot, app)
        seen.append(app.selected)
        post(app, "1")
        await wait_for(pilot, lambda: app.active_tab == "queries" and app.focused is table, "the queries tab")
        await drawn(pilot, app)
        seen.append(app.keys.in_flight)

    run_app(app, scenario)
    assert seen == ["flights_silver", 0]
