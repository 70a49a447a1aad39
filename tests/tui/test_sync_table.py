"""SyncTable (every dashboard table): a column grows to fit a wider value and keeps its width
when values get narrower — DataTable's shrink path re-measures the whole column per cell,
which cost seconds a frame with 100 queries (``bench/tui_bench.py --hundred``)."""

from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import App, ComposeResult

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
