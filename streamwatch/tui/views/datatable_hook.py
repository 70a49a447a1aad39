"""The one place the dashboard relies on Textual's ``DataTable`` internals (Textual 8.2).

``DataTable`` has no public per-cell drawing hook, and it forgets every drawn cell on any
``update_cell`` and on any focus or style change; :class:`~streamwatch.tui.views.table.SyncTable`
keeps drawn cells itself, which needs three private members:

- ``DataTable._render_cell(row_index, column_index, base_style, width, cursor, hover)``, the
  method DataTable draws every cell through: overridden here to call :meth:`CellHookTable.draw_cell`;
- ``_row_locations`` / ``_column_locations`` (``TwoWayDict``: key ↔ index, ``get_key(index)``):
  which row and column are at an index;
- ``_data`` (row key → column key → value): a cell's value by keys without the
  ``CellDoesNotExist`` check and the O(columns) ``ordered_columns`` list per cell.

:data:`PRIVATE_API` names them with the shape relied on; ``tests/tui/test_datatable_hook.py``
checks them against the installed Textual, so an upgrade that renames or reshapes one fails a
test, not the dashboard.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

#: a cell's value: what SyncTable puts in its cells (DataTable's ``CellType``)
Cell = str | Text
#: one drawn cell: its lines, each a list of segments (DataTable's ``SegmentLines``)
CellLines = list[list[Segment]]

#: the private members of ``DataTable`` used here: the method's parameters, in order, and each
#: attribute with the method called on it (None: indexed as a mapping)
PRIVATE_API: dict[str, tuple[str, ...] | str | None] = {
    "_render_cell": ("row_index", "column_index", "base_style", "width", "cursor", "hover"),
    "_row_locations": "get_key",
    "_column_locations": "get_key",
    "_data": None,
}


class CellHookTable(DataTable[Cell]):
    """A ``DataTable`` whose every cell is drawn through :meth:`draw_cell` (by default
    DataTable's own drawing, :meth:`framework_cell`); :meth:`cell_at` gives the keys and value
    of the cell at an index."""

    def draw_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool,
                  hover: bool) -> CellLines:
        """One cell's lines (``row_index`` -1: the header; ``column_index`` -1: the row
        labels); ``width`` in cells, padding included. Override to draw cells otherwise."""
        return self.framework_cell(row_index, column_index, base_style, width, cursor, hover)

    def framework_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                       cursor: bool = False, hover: bool = False) -> CellLines:
        """The cell as DataTable draws it (through its own per-cell cache)."""
        return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)

    def cell_at(self, row_index: int, column_index: int) -> tuple[RowKey, ColumnKey, Cell | None] | None:
        """(row key, column key, value — None when the row has no such cell) of the cell at
        these indexes; None when no row or column is there."""
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None:
            return None
        return row_key, column_key, self._data[row_key].get(column_key)

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False,
                     hover: bool = False) -> CellLines:
        """DataTable's per-cell drawing, routed to :meth:`draw_cell`."""
        return self.draw_cell(row_index, column_index, base_style, width, cursor, hover)
