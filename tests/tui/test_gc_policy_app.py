"""The dashboard's collector policy (``streamwatch.tui.gc_policy``) in the real app, against
the interpreter's own account (``gc.isenabled``, ``gc.get_freeze_count``): what lives once
the dashboard is mounted is frozen, a key burst holds automatic collection, and the app's
exit undoes both — even with a key's answer still under way."""

from __future__ import annotations

import gc

from textual import events

from conftest import drawn, run_app, wait_for


def test_the_app_freezes_at_mount_holds_during_keys_and_restores_on_exit(make_app):
    app = make_app()
    app.keys.cap_s = 600.0  # the answer below cannot end by the cap during the test
    seen: list[object] = []
    gc.unfreeze()
    was_enabled = gc.isenabled()
    gc.enable()

    async def scenario(pilot):
        await drawn(pilot, app)
        seen.append((gc.get_freeze_count() > 0, app.collector.frozen, gc.isenabled()))
        app.key_route_busy = lambda: True  # type: ignore[method-assign]  # keys stay in flight
        keys = [events.Key(k, None) for k in ("down", "down", "up")]
        for key in keys:  # a burst, as the terminal driver posts it
            app.post_message(key)
        await wait_for(pilot, lambda: app.selected == "flights_silver" and app.keys.answers > 0, "the burst")
        seen.append((gc.isenabled(), app.keys.held, app.keys.answering))

    try:
        run_app(app, scenario)  # returns once the app has exited
        seen.append((gc.isenabled(), gc.get_freeze_count(), app.collector.held, app.collector.frozen))
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
    assert seen == [(True, True, True), (False, True, True), (True, 0, False, False)]
