"""Teardown: nothing draws after the dashboard is unmounted, and a failed render is shown
and logged, never raised (the crash of issue 13: a render tick fired while ``run_test``
pruned the screens and ``query_one`` raised twice)."""

from __future__ import annotations

import asyncio

from textual.widget import Widget

from streamwatch.model.events import QueryProgress
from streamwatch.tui.messages import ControlDone

from conftest import settle, wait_for


class SlowUnmount(Widget):
    """Holds the dashboard's teardown open for longer than one render tick (1 s): while it
    unmounts, its sibling widgets are already gone. Posts the messages a live backend and a
    control worker would post in that window."""

    DEFAULT_CSS = "SlowUnmount { height: 0; }"

    def __init__(self, app) -> None:
        super().__init__()
        self.target = app

    async def on_unmount(self) -> None:
        p = self.target.board.rows["flights_bronze"].last_progress
        self.target.emit(QueryProgress.from_dict({**p.to_dict(), "batchId": 77}))
        self.target.post_message(ControlDone("stop", True, "stop done"))
        await asyncio.sleep(1.3)  # the window: longer than the 1 s tick interval


def test_no_render_after_the_dashboard_is_torn_down(make_app):
    app = make_app()

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            await app.dashboard.mount(SlowUnmount(app))
            await pilot.press("question_mark")  # the help screen on top, as in the CI failure
            await wait_for(pilot, lambda: app.screen is not app.dashboard, "the help screen")
    asyncio.run(main())
    assert app._exception is None, f"the dashboard raised during teardown: {app._exception!r}"
    assert app.return_code in (0, None)


def test_a_failed_render_is_shown_in_the_status_line_not_raised(make_app):
    app = make_app()

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot, app)
            board_apply = app.board.apply

            def broken(obj):  # a display bug: the model update for this object raises
                raise RuntimeError("bad cell")
            app.board.apply = broken
            p = app.board.rows["flights_bronze"].last_progress
            app.emit(QueryProgress.from_dict({**p.to_dict(), "batchId": 78}))
            status = app.dashboard.query_one("#status")
            await wait_for(pilot, lambda: "bad cell" in str(status.render()), "the error in the status line")
            app.board.apply = board_apply
            assert app.is_running
    asyncio.run(main())
    assert app._exception is None
