"""SyncTable (every dashboard table): a column grows to fit a wider value and keeps its width
when values get narrower — DataTable's shrink path re-measures the whole column per cell,
which cost seconds a frame with 100 queries (``bench/tui_bench.py --hundred``)."""

from __future__ import annotations

import asyncio

import pytest
from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from streamwatch.tui.views.table import SyncTable


class _One(App):
    def compose(self) -> ComposeResult:
        yield SyncTable(("query", "rows"), id="t")


def test_columns_grow_to_fit_and_do_not_shrink():
    app = _One()

    async def scenario() -> list[tuple[int, int, str]]:
        seen = []
        async with app.run_test(size=(80, 10)) as pilot:
            table = app.query_one("#t", SyncTable)

            def step(rows):
                table.sync(rows)
                return pilot.pause()

            def widths() -> tuple[int, int, str]:
                return (table.columns["query"].content_width, table.columns["rows"].content_width,
                        str(table.get_cell("a", "rows")))

            await step([("a", ("a", "1")), ("b", ("b", "2"))])
            seen.append(widths())
            await step([("a", ("a", "1,234,567")), ("b", ("b", "2"))])  # wider: grows
            seen.append(widths())
            await step([("a", ("a", "9")), ("b", ("b", "3"))])  # narrower: the value changes, the width stays
            seen.append(widths())
            await step([("a", ("a", Text("12,345,678,901", style="bold"))), ("b", ("b", "3"))])  # Text measured too
            seen.append(widths())
            await step([("a", ("query-with-a-long-name", "9")), ("b", ("b", "3"))])
            seen.append(widths())
        return seen

    seen = asyncio.run(scenario())
    label = len("query")  # a column is at least as wide as its label
    assert seen == [(label, 4, "1"), (label, 9, "1,234,567"), (label, 9, "9"), (label, 14, "12,345,678,901"),
                    (len("query-with-a-long-name"), 14, "9")]


class _Wide(App):
    def __init__(self, zebra: bool) -> None:
        super().__init__()
        self.zebra = zebra

    def compose(self) -> ComposeResult:
        yield SyncTable(tuple(f"column {i}" for i in range(6)), id="t", zebra_stripes=self.zebra)


@pytest.mark.parametrize("zebra", [True, False])
@pytest.mark.parametrize("width", [120, 50])  # wider than the table (the row style fills the rest); narrower (it scrolls)
def test_row_lines_are_drawn_exactly_as_datatable_draws_them(zebra, width):
    """SyncTable draws a plain row's line itself (styles and widths computed once a paint):
    every line, the stripes, styled cells, the fill right of the last column and a horizontal
    scroll, segment for segment what DataTable's own ``render_line`` gives."""
    app = _Wide(zebra)

    async def scenario() -> list[tuple[int, list, list]]:
        out = []
        async with app.run_test(size=(width, 20)) as pilot:
            table = app.query_one("#t", SyncTable)
            table.sync([(f"q{i}", (f"q{i}", Text(f"{i * 1000:,}", style="bold green" if i % 3 else "red"),
                                   "x" * (i % 7), str(i), Text("ok", style="cyan"), "-"))
                        for i in range(12)])
            table.focus()
            await pilot.pause()
            for scroll in ((0, 7) if width < 100 else (0,)):
                table.scroll_to(x=scroll, animate=False)
                await pilot.pause()
                paint = table._paint_context()
                assert paint.scroll_x == scroll
                for y in range(1, 12):  # the header is line 0; row 0 holds the cursor
                    out.append((y, list(table._row_line(y - 1, paint)) if y > 1 else None,
                                list(DataTable.render_line(table, y))))
        return out

    lines = asyncio.run(scenario())
    assert len(lines) == (22 if width < 100 else 11)
    for y, ours, datatable in lines:
        if ours is not None:
            assert ours == datatable, f"line {y}"
    texts = ["".join(seg.text for seg in ours) for _, ours, _ in lines if ours is not None]
    assert all(len(t) == width for t in texts)
    assert texts[0].split()[:2] == ["q1", "1,000"]  # row 1 unscrolled: its query, then its bold green count
    if width < 100:  # scrolled 7 cells right: the query column (its padding and label width) is cut
        assert texts[10].split()[0] == "1,000"


def test_a_kept_line_names_the_row_it_is_drawn_at_after_rows_moved():
    """A drawn line carries the row index a click on it selects (DataTable reads it from the
    segments' meta). After a filter moves a row up (q7 from index 7 to 1, the same stripe),
    its line names index 1, not the index it was first drawn at."""
    app = _One()

    async def scenario() -> tuple[set[int], set[int]]:
        async with app.run_test(size=(40, 14)) as pilot:
            table = app.query_one("#t", SyncTable)
            rows = [(f"q{i}", (f"q{i}", str(i))) for i in range(10)]
            table.sync(rows)
            await pilot.pause()  # every row's line drawn (and kept); the cursor on q0

            def named(y: int) -> set[int]:
                return {seg.style.meta["row"] for seg in table.render_line(y) if seg.style and "row" in seg.style.meta}
            before = named(8)  # the header, then q0 … q7
            table.sync([rows[0], rows[7]])
            await pilot.pause()
            return before, named(2)

    assert asyncio.run(scenario()) == ({7}, {1})
