"""The DataTable internals the dashboard relies on (``streamwatch.tui.views.datatable_hook``),
checked against the installed Textual: a Textual upgrade that renames, reshapes or stops
calling one fails here, not in the dashboard."""

from __future__ import annotations

import asyncio
import inspect

from rich.style import Style
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from streamwatch.tui.views.datatable_hook import PRIVATE_API, CellHookTable, CellLines


class _Plain(App[None]):
    def compose(self) -> ComposeResult:
        yield DataTable()


def test_the_private_members_exist_with_the_shape_relied_on():
    """``_render_cell`` takes the parameters the hook passes, in order; each map has the method
    called on it and maps an index to the key at it; ``_data`` is indexed by row key then
    column key — on a DataTable of the installed Textual."""
    method = PRIVATE_API["_render_cell"]
    assert isinstance(method, tuple)
    assert tuple(inspect.signature(DataTable._render_cell).parameters)[1:] == method
    assert set(PRIVATE_API) == {"_render_cell", "_row_locations", "_column_locations", "_data"}
    app = _Plain()
    seen: list[object] = []

    async def scenario() -> None:
        async with app.run_test(size=(40, 6)):
            table: DataTable[str] = app.query_one(DataTable)
            table.add_column("c", key="c")
            table.add_row("v", key="r")
            for name in ("_row_locations", "_column_locations"):
                seen.append(callable(getattr(getattr(table, name), str(PRIVATE_API[name]))))
            seen.append((table._row_locations.get_key(0), table._column_locations.get_key(0)))
            seen.append(table._data[table._row_locations.get_key(0)][table._column_locations.get_key(0)])

    asyncio.run(scenario())
    assert seen == [True, True, ("r", "c"), "v"]  # a RowKey/ColumnKey equals its str


class _Counting(CellHookTable):
    """Counts the cells DataTable draws through the hook, by (row, column) index."""

    def __init__(self) -> None:
        super().__init__(id="t")
        self.drawn: set[tuple[int, int]] = set()

    def draw_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool,
                  hover: bool) -> CellLines:
        self.drawn.add((row_index, column_index))
        return super().draw_cell(row_index, column_index, base_style, width, cursor, hover)


class _App(App[None]):
    def compose(self) -> ComposeResult:
        yield _Counting()


def test_datatable_draws_every_cell_through_the_hook_and_cell_at_follows_the_rows():
    """A paint of a 3×2 table reaches :meth:`draw_cell` for every cell and the header (row -1);
    after a row is removed (the rows renumber), :meth:`cell_at` gives what DataTable's public
    ``ordered_rows``/``ordered_columns``/``get_cell`` give at every index, and None past the end."""
    app = _App()
    seen: list[object] = []

    async def scenario() -> None:
        async with app.run_test(size=(60, 10)) as pilot:
            table = app.query_one(_Counting)
            table.add_columns("a", "b")
            for r in range(3):
                table.add_row(f"a{r}", f"b{r}", key=f"r{r}")
            await pilot.pause()
            seen.append(set(table.drawn))
            table.remove_row("r0")
            await pilot.pause()
            public = [(row.key, column.key, table.get_cell(row.key, column.key))
                      for row in table.ordered_rows for column in table.ordered_columns]
            hooked = [table.cell_at(r, c) for r in range(table.row_count) for c in range(len(table.columns))]
            seen.append((hooked, public, table.cell_at(table.row_count, 0)))

    asyncio.run(scenario())
    drawn, (hooked, public, past_end) = seen
    assert drawn == {(r, c) for r in (-1, 0, 1, 2) for c in (0, 1)}
    assert hooked == public and len(public) == 4
    assert [str(v) for _, _, v in public] == ["a1", "b1", "a2", "b2"]
    assert past_end is None
