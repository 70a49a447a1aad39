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


class _Three(App):
    def compose(self) -> ComposeResult:
        yield SyncTable(("a", "b", "c"), id="t")


def test_a_cell_drawn_from_one_of_its_shape_is_what_datatable_draws():
    """A changed value of the shape of one drawn at the same place before is drawn from that
    cell's segments with its own characters: for any such pair of values (markup-free text,
    ``Text`` of any style and justify, emoji-like ``:codes:``), segment for segment
    what DataTable's own ``_render_cell`` draws afresh. Values of no shape (markup, spans,
    wide characters, too long) are drawn by DataTable."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
    from rich.style import Style

    from streamwatch.tui.views.table import cell_shape

    app = _Three()
    chars = st.text(st.sampled_from("abcXYZ 0123456789,.:-_/%()é"), min_size=0, max_size=14)
    styles = st.sampled_from(["", "bold", "green", "bold red on blue", "dim italic"])
    kinds = st.sampled_from(["str", "text"])
    checked: list[int] = []

    async def scenario() -> None:
        async with app.run_test(size=(80, 10)) as pilot:
            table = app.query_one("#t", SyncTable)
            table.sync([("r0", ("x", "y", "z")), ("r1", ("x", "y", "z"))])
            await pilot.pause()

            @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
            @given(chars, chars, kinds, styles, st.sampled_from([None, "left", "right", "center"]),
                   st.integers(0, 6), st.integers(0, 1), st.integers(0, 2))
            def check(a: str, b: str, kind: str, style: str, justify, extra: int, row: int, column: int) -> None:
                b = (b + a)[:len(a)].ljust(len(a), "q")  # as long as a
                def value(plain: str):
                    return Text(plain, style=style, justify=justify) if kind == "text" else plain
                width = len(a) + 2 * table.cell_padding + extra
                base = table.rich_style + Style(bgcolor="grey11" if row else "black")
                columns = ("a", "b", "c")
                table.update_cell(f"r{row}", columns[column], value(a))
                first = table._render_cell(row, column, base, width)
                table.update_cell(f"r{row}", columns[column], value(b))
                ours = table._render_cell(row, column, base, width)
                theirs = DataTable._render_cell(table, row, column, base, width)
                assert first and ours == theirs
                if cell_shape(value(b), width - 2 * table.cell_padding) is not None:
                    checked.append(1)

            check()

    asyncio.run(scenario())
    assert len(checked) > 100  # most examples took the shape path


def test_values_of_no_shape():
    from streamwatch.tui.views.table import cell_shape

    assert cell_shape("ok", 5) == ("str", 2)
    assert cell_shape(Text("ok", style="green"), 5) is not None
    for value in ("[b]x[/b]", "a\\b", "wide 日本", "tab\there", "toolong", ":thumbs_up:", Text.assemble(("a", "red"), "b"),
                  Text("right", justify="right")):
        assert cell_shape(value, 6) is None, value
    assert cell_shape("09:58:11", 8) == ("str", 8)  # a time is no emoji code


def test_a_cell_whose_style_alone_changed_is_redrawn():
    """rich's ``Text`` equality ignores the style: a diagnosis turning from ok (green) to the
    same words in red must still reach the table and its drawn line."""
    app = _One()

    async def scenario() -> tuple[str, list[str]]:
        async with app.run_test(size=(80, 10)) as pilot:
            table = app.query_one("#t", SyncTable)
            table.sync([("a", ("a", Text("same words", style="green"))), ("b", ("b", "x"))])
            await pilot.pause()
            table.move_cursor(row=1)  # row 0 is a plain row: drawn by SyncTable
            await pilot.pause()
            table.render_line(1)
            table.sync([("a", ("a", Text("same words", style="red"))), ("b", ("b", "x"))])
            await pilot.pause()
            table.render_lines(table.region.reset_offset)  # what a paint does
            line = table.render_line(1)
            colours = [str(s.style.color.name) for s in line if "same" in s.text and s.style and s.style.color]
            return str(table.get_cell("a", "rows").style), colours

    style, colours = asyncio.run(scenario())
    assert (style, colours) == ("red", ["red"])
