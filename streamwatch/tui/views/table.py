"""A DataTable that is updated by syncing to a desired list of rows (minimal changes)."""

from __future__ import annotations

from typing import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

Cell = str | Text


class SyncTable(DataTable):
    """``sync(rows)`` makes the table show exactly ``rows`` — ``(key, cells)`` in order —
    touching only what changed: unchanged cells are not rewritten, new rows at the end are
    appended, removed rows are removed; other reorderings rebuild the table. The cursor stays
    on the same key when it still exists.

    Columns grow to fit a wider value and never shrink while the table lives: DataTable
    re-measures the whole column for every narrower value it is asked to fit, which made a
    100-query frame cost seconds (``bench/tui_bench.py --hundred``)."""

    def __init__(self, columns: Sequence[str], **kw) -> None:
        kw.setdefault("cursor_type", "row")
        super().__init__(**kw)
        self._columns = tuple(columns)
        self._cells: dict[str, tuple[Cell, ...]] = {}

    def on_mount(self) -> None:
        for c in self._columns:
            self.add_column(c, key=c)

    @property
    def keys(self) -> list[str]:
        return [str(k.value) for k in self.rows]

    def cursor_key(self) -> str | None:
        if self.row_count == 0:
            return None
        try:
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        except Exception:
            return None

    def sync(self, rows: Sequence[tuple[str, Sequence[Cell]]], follow: bool = False) -> None:
        desired = [k for k, _ in rows]
        current = self.keys
        if desired != current:
            wanted = set(desired)
            for k in current:
                if k not in wanted:
                    self.remove_row(k)
                    self._cells.pop(k, None)
            remaining = self.keys
            if remaining != desired[: len(remaining)]:
                keep = self.cursor_key()
                self.clear()
                self._cells.clear()
                remaining = []
                for k, cells in rows:
                    self.add_row(*cells, key=k)
                    self._cells[k] = tuple(cells)
                if keep in wanted:
                    self.move_cursor(row=desired.index(keep), animate=False)
            else:
                for k, cells in rows[len(remaining):]:
                    self.add_row(*cells, key=k)
                    self._cells[k] = tuple(cells)
        for k, cells in rows:
            old = self._cells.get(k)
            cells = tuple(cells)
            if old == cells:
                continue
            for col, new, prev in zip(self._columns, cells, old or (None,) * len(cells)):
                if new != prev:
                    self.update_cell(k, col, new, update_width=self._wider(col, new))
            self._cells[k] = cells
        if follow and self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def _wider(self, column: str, value: Cell) -> bool:
        """``value`` is wider than ``column`` now is (so the column must grow)."""
        width = value.cell_len if isinstance(value, Text) else cell_len(str(value))
        col = self.columns.get(column)  # type: ignore[call-overload]
        return col is None or width > col.content_width
