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
    """The key's answer begins (its frame would wait) but collection is not the keys' to
    hold: disabled while the key is handled, and still disabled once the answer ended."""
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


def test_a_key_kept_alive_holds_collection_no_longer_than_the_cap(make_app):
    """A key something keeps (here: the test) stays in flight; the cap enables collection
    again, and keys do not hold it for another ``cap_s`` (the keys' clock, driven here)."""
    app = make_app()
    now = [100.0]
    app.keys.clock = lambda: now[0]
    app.keys.cap_s = 0.05  # the cap's timer runs on the app's clock, the resume on keys.clock
    steps: list[object] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        answers = app.keys.answers
        kept = post(app, "down")
        await wait_for(pilot, lambda: app.selected == "flights_silver", "the down key to be handled")
        assert app.keys.answers == answers + 1
        await wait_for(pilot, lambda: not app.keys.held, "the cap")
        steps.append((gc.isenabled(), app.keys.in_flight))
        post(app, "up")  # within cap_s of the cap (keys' clock): no hold
        await wait_for(pilot, lambda: app.selected == "flights_bronze", "the up key to be handled")
        steps.append(app.keys.answers - answers)
        now[0] += 1.0
        post(app, "down")  # later: holds again, and is released once handled and painted
        await wait_for(pilot, lambda: app.selected == "flights_silver", "the second down key")
        assert app.keys.answers == answers + 2
        del kept[:]
        await wait_for(pilot, lambda: not app.keys.held and app.keys.in_flight == 0, "the release")
        steps.append(gc.isenabled())

    run_app(app, scenario)
    assert steps == [(True, 1), 1, True]


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


def test_a_frame_due_during_a_keys_answer_is_drawn_after_it(make_app):
    """New progress arriving while a key is in flight is in the model at once, but the
    table shows it only once the key's answer has been painted (the frame is owed, and
    ``frame_pending`` says so); then it is drawn without another event."""
    from streamwatch.model.events import QueryProgress

    from conftest import cell

    app = make_app()
    app.keys.cap_s = 600.0  # this test ends the answer itself, never the cap
    steps: list[object] = []

    async def scenario(pilot):
        await drawn(pilot, app)
        kept = post(app, "down")  # kept alive: the answer lasts until the test lets it go
        await wait_for(pilot, lambda: app.selected == "flights_silver", "the down key")
        p = app.board.rows["flights_bronze"].last_progress
        app.emit(QueryProgress.from_dict({**p.to_dict(), "batchId": 99}))
        await wait_for(pilot, lambda: app.board.rows["flights_bronze"].batch_id == 99 and not app._inbox,
                       "the model to update")
        await pilot.pause(0.3)  # three frame intervals: a frame not owed would have drawn it
        steps.append((app.keys.answering, app.frame_pending, cell(app, "#query-table", "flights_bronze", "batch")))
        del kept[:]
        await wait_for(pilot, lambda: not app.keys.answering, "the answer")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_bronze", "batch") == "99", "the frame")
        steps.append(app.frame_pending)

    run_app(app, scenario)
    assert steps == [(True, True, "20"), False]
