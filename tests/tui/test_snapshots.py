"""SVG snapshots of the dashboard fed by the recorded flights run (``data/flights_run.jsonl``)
at 120×40 and 80×24. Deterministic: no Spark, an injected clock, no landing watcher, no
checkpoint scans, and each snapshot is taken once the screen has measured and laid out what
the model says (``drawn``: Textual's pending column widths and layout, not a timeout).
Update with ``pytest tests/tui/test_snapshots.py --snapshot-update``."""

from __future__ import annotations

import pytest

from conftest import drawn, settle, wait_for

SIZES = [(120, 40), (80, 24)]
VIEWS = {
    "queries": (),
    "detail_gold": ("down", "down", "enter"),
    "events_filtered": ("5", "slash", *"gold", "enter"),
    "landing": ("4",),
    "help": ("question_mark",),
    "command_line": ("colon", *"resta"),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("view", list(VIEWS))
def test_snapshot(snap_compare, make_app, view, size):
    app = make_app()

    async def run_before(pilot):
        await settle(pilot, app)
        # dismiss the failure toast so it does not cover the view
        app.clear_notifications()
        await pilot.press(*VIEWS[view])
        if view == "command_line":
            line = app.query_one("#cmdline")
            await wait_for(pilot, lambda: line._suggestion == "restart", "the completion")
        await drawn(pilot, app)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
