"""Issue 18 (a hundred queries): what a focus change costs the queries table. Moving the focus
(the ``/`` line opens, a tab switch) must not re-render the table's cells: only the cursor row
looks different focused, so only its cells are drawn again (DataTable's own ``:focus`` tint
made every visible cell re-render, ~200 ms for 45 rows × 12 columns)."""

from __future__ import annotations

import asyncio
import time

import pytest
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Input

from streamwatch.tui.views.table import SyncTable

from conftest import layout_pending

COLUMNS = tuple(f"c{i}" for i in range(6))


class _TableAndLine(App):
    def compose(self) -> ComposeResult:
        yield SyncTable(COLUMNS, id="t", zebra_stripes=True)
        yield Input(id="line")


async def _painted(pilot, app) -> None:
    """Until the screen has laid out and painted everything pending (Textual's bookkeeping)."""
    await pilot.pause()
    for _ in range(200):
        if not layout_pending(app):
            return
        await pilot.pause()
    raise AssertionError(f"the screen did not settle: {layout_pending(app)}")


async def _redrawn(pilot, app, drawn: list[int], mark: int, cells: int) -> list[int]:
    """The rows of the cells drawn since ``mark``, once at least ``cells`` were drawn and the
    screen settled. A focus change reaches the table through the app's queue, the style
    update and the screen's update timer; on a busy machine :func:`_painted` can see a settled
    screen before the first of those ran, so this waits for the repaint the test expects (a
    repaint that never comes fails at the deadline)."""
    deadline = time.monotonic() + 30
    while True:
        await _painted(pilot, app)
        rows = [r for r in drawn[mark:] if r >= 0]
        if len(rows) >= cells:
            return rows
        assert time.monotonic() < deadline, f"only {len(rows)} of {cells} cells redrawn"


def test_a_focus_change_redraws_only_the_cursor_row(monkeypatch):
    drawn: list[int] = []
    render_cell = DataTable._render_cell

    def counting(self, row_index, column_index, *a, **kw):
        drawn.append(row_index)
        return render_cell(self, row_index, column_index, *a, **kw)

    app = _TableAndLine()

    async def scenario() -> tuple[int, list[int], list[int], list[int]]:
        async with app.run_test(size=(100, 30)) as pilot:
            table = app.query_one("#t", SyncTable)
            table.sync([(f"q{i:03d}", tuple(f"{i}-{c}" for c in COLUMNS)) for i in range(40)])
            table.focus()
            await _painted(pilot, app)
            monkeypatch.setattr(DataTable, "_render_cell", counting)
            first = len(drawn)
            app.query_one("#line", Input).focus()
            blurred = await _redrawn(pilot, app, drawn, first, len(COLUMNS))
            mark = len(drawn)
            table.focus()
            focused = await _redrawn(pilot, app, drawn, mark, len(COLUMNS))
            mark = len(drawn)
            table.sync([(f"q{i:03d}", tuple(f"{i}-{c}" + ("!" if (i, c) == (5, "c2") else "") for c in COLUMNS))
                        for i in range(40)])
            await _painted(pilot, app)
            changed = [r for r in drawn[mark:] if r >= 0]
            assert "5-c2!" in app.export_screenshot()  # the changed row's repaint reached the screen
            return first, blurred, focused, changed

    first, blurred, focused, changed = asyncio.run(scenario())
    assert first == 0
    # the cursor is on row 0: only its cells are drawn again when the focus leaves or returns
    assert set(blurred) == {0} and len(blurred) == len(COLUMNS)
    assert set(focused) == {0} and len(focused) == len(COLUMNS)
    # one changed cell: that cell alone (only its row is repainted)
    assert changed == [5]


@pytest.mark.parametrize("focus_first", [True, False])
def test_the_table_looks_the_same_focused_or_not_but_for_its_cursor(focus_first):
    app = _TableAndLine()

    async def scenario() -> tuple[object, object]:
        async with app.run_test(size=(100, 30)) as pilot:
            table = app.query_one("#t", SyncTable)
            table.sync([(f"q{i:03d}", tuple(f"{i}-{c}" for c in COLUMNS)) for i in range(5)])
            (table if focus_first else app.query_one("#line", Input)).focus()
            await _painted(pilot, app)
            a = [table.render_line(y).text for y in range(2, 5)], table.rich_style
            (app.query_one("#line", Input) if focus_first else table).focus()
            await _painted(pilot, app)
            b = [table.render_line(y).text for y in range(2, 5)], table.rich_style
            return a, b

    a, b = asyncio.run(scenario())
    assert a == b
    assert a[0][0].split()[0] == "1-c0"
