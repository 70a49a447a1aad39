"""A DataTable that is updated by syncing to a desired list of rows (minimal changes)."""

from __future__ import annotations

from typing import NamedTuple, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable

Cell = str | Text
#: more rows than this leaving the table (a ``/`` filter) rebuild it: cheaper than removing each
REMOVE_ONE_BY_ONE = 8
#: drawn cells kept (see :meth:`SyncTable._render_cell`); all are forgotten beyond this
CELL_LINES_MAX = 20_000


class _Paint(NamedTuple):
    """What every row line of one paint shares (:meth:`SyncTable.render_lines`)."""

    key: tuple  #: all of it: a kept line drawn under another key is drawn again
    base: Style  #: the table's style
    rows: tuple[Style, Style]  #: even and odd rows' style
    widths: tuple[int, ...]  #: each column's width with its padding (cells)
    width: int  #: the table's width (cells)
    scroll_x: int


class SyncTable(DataTable):
    """``sync(rows)`` makes the table show exactly ``rows`` — ``(key, cells)`` in order —
    touching only what changed: unchanged cells are not rewritten, new rows at the end are
    appended, removed rows are removed; other reorderings rebuild the table. The cursor stays
    on the same key when it still exists.

    Columns grow to fit a wider value and never shrink while the table lives: DataTable
    re-measures the whole column for every narrower value it is asked to fit, which made a
    100-query frame cost seconds (``bench/tui_bench.py --hundred``).

    Each drawn row line is kept (per row key) with what it was drawn from — its cells, its
    position (its stripe, and the row a click on it selects), the column widths, the table's
    width, horizontal scroll, style and focus — and reused while none of that changed:
    DataTable forgets every drawn cell on any ``update_cell``, so without this a frame
    re-rendered every visible cell (~110 ms CPU for 45 visible rows × 12 columns) although a
    frame of 100 queries changes a few rows.
    The cursor and hover rows are always drawn by DataTable. Lines of rows a filter removed
    are kept (bounded) so clearing the filter redraws only what changed meanwhile. Below the
    line, each drawn cell is kept too (:meth:`_render_cell`), so a changed row re-renders only
    its changed cells. A filter that removes more than :data:`REMOVE_ONE_BY_ONE` rows rebuilds
    the table instead (``DataTable.remove_row`` renumbers every row, O(rows) each)."""

    DEFAULT_CSS = """
    SyncTable:focus { background-tint: $foreground 0%; }
    """

    #: inside :meth:`sync`'s cell updates: a whole-table refresh is narrowed to the changed rows
    _rows_only = False

    def __init__(self, columns: Sequence[str], **kw) -> None:
        kw.setdefault("cursor_type", "row")
        super().__init__(**kw)
        self._columns = tuple(columns)
        self._cells: dict[str, tuple[Cell, ...]] = {}
        #: row key → (what the line was drawn from, the drawn line)
        self._drawn: dict[str, tuple[tuple, Strip]] = {}
        self._paint: _Paint | None = None
        #: (row key, column key, row index, style, width, cursor, hover, …) → (cell value, its lines)
        self._cell_lines: dict[tuple, tuple[object, list[list[Segment]]]] = {}

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
            gone = [k for k in current if k not in wanted]
            rebuild = len(gone) > REMOVE_ONE_BY_ONE  # remove_row renumbers every row: O(rows) each
            if not rebuild:
                for k in gone:
                    self.remove_row(k)
                    self._cells.pop(k, None)
                remaining = self.keys
                rebuild = remaining != desired[: len(remaining)]
            if rebuild:
                keep = self.cursor_key()
                self.clear()
                self._cells.clear()
                for k, cells in rows:
                    self.add_row(*cells, key=k)
                    self._cells[k] = tuple(cells)
                if keep in wanted:
                    self.move_cursor(row=desired.index(keep), animate=False)
            else:
                for k, cells in rows[len(remaining):]:
                    self.add_row(*cells, key=k)
                    self._cells[k] = tuple(cells)
        changed: list[str] = []
        wider = False
        self._rows_only = True  # update_cell's whole-table refresh becomes a refresh of its row
        try:
            for k, cells in rows:
                old = self._cells.get(k)
                cells = tuple(cells)
                if old == cells:
                    continue
                for col, new, prev in zip(self._columns, cells, old or (None,) * len(cells)):
                    if new != prev:
                        grow = self._wider(col, new)
                        wider = wider or grow
                        self.update_cell(k, col, new, update_width=grow)
                self._cells[k] = cells
                changed.append(k)
        finally:
            self._rows_only = False
        if wider:
            self.refresh()
        else:
            for k in changed:
                self.refresh_row(self.get_row_index(k))
        if len(self._drawn) > 2 * len(self._cells) + 100:  # rows long gone: forget their lines
            self._drawn = {k: v for k, v in self._drawn.items() if k in self._cells}
        if follow and self.row_count:
            self.move_cursor(row=self.row_count - 1, animate=False)

    def refresh(self, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> SyncTable:
        """Textual's ``Widget.refresh``; while :meth:`sync` rewrites cells, the whole-table
        repaint ``update_cell`` asks for is replaced by a repaint of the changed rows only
        (``refresh_row``): a frame of 100 queries changes ~20 of them, and a whole-table
        repaint re-processed every visible line through the compositor."""
        if self._rows_only and not regions and repaint and not layout and not recompose:
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    # -- drawing: reuse a row's line while nothing it was drawn from changed ---------------------
    def render_lines(self, crop: Region) -> list[Strip]:
        """Textual's Line API entry: what every line of this paint shares is computed once."""
        self._paint = self._paint_context() if self._cacheable() else None
        return super().render_lines(crop)

    def _cacheable(self) -> bool:
        return (self.cursor_type == "row" or not self.show_cursor) and not self.fixed_rows and not self.fixed_columns

    def _paint_context(self) -> _Paint:
        base = self.rich_style
        if self.zebra_stripes:  # DataTable's row style: the even/odd component's, else the table's
            rows = (self.get_component_styles("datatable--even-row").rich_style,
                    self.get_component_styles("datatable--odd-row").rich_style)
        else:
            rows = (base, base)
        widths = tuple(c.get_render_width(self) for c in self.ordered_columns)
        scroll_x = self.scroll_offset.x
        key = (self.size.width, scroll_x, base, rows, self.zebra_stripes, self.show_cursor, self.app.theme, widths)
        return _Paint(key, base, rows, widths, self.size.width, scroll_x)

    def render_line(self, y: int) -> Strip:
        paint = self._paint
        header = self.header_height if self.show_header else 0
        index = y + self.scroll_offset.y - header
        if paint is None or y < header or index < 0 or index >= self.row_count:
            return super().render_line(y)
        if index == self.cursor_row or index == self.hover_coordinate.row:
            return super().render_line(y)
        row = self.ordered_rows[index]
        key = str(row.key.value)
        cells = self._cells.get(key)
        if cells is None or row.height != 1:  # a row not added by sync(): DataTable draws it
            return super().render_line(y)
        what = (paint.key, index, cells)  # the index too: the line's click targets name its row
        drawn = self._drawn.get(key)
        if drawn is not None and drawn[0] == what:
            return drawn[1]
        strip = self._row_line(index, paint)
        self._drawn[key] = (what, strip)
        return strip

    def _row_line(self, index: int, paint: _Paint) -> Strip:
        """The line of row ``index`` (one line high, neither the cursor's nor the hover's row),
        as DataTable draws it (``_render_line_in_row`` then ``_render_line``, Textual 8.2): its
        cells in the row's stripe style, then the row style filling the rest of the width, the
        whole scrolled by ``scroll_x`` and cut to the width. DataTable recomputes the table's
        style, the stripe and header styles and every column width for each line it draws,
        which cost ~1.7 ms a row (a frame of 100 queries changes ~15 visible rows); here
        they come from ``paint``, computed once a paint. SyncTable rows have no labels and the
        table no fixed rows or columns (:meth:`_cacheable`), so that is all a row line is."""
        row_style = paint.rows[index % 2]
        segments: list[Segment] = []
        for column, width in enumerate(paint.widths):
            segments.extend(self._render_cell(index, column, row_style, width)[0])
        fill = max(0, paint.width - sum(paint.widths))
        segments.append(Segment(" " * fill, row_style + Style.from_meta(
            {"row": index, "column": 0, "out_of_bounds": True})))
        return Strip(segments).crop(paint.scroll_x, paint.scroll_x + paint.width) \
            .adjust_cell_length(paint.width, paint.base).simplify()

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False,
                     hover: bool = False) -> list[list[Segment]]:
        """One cell's lines, kept while its value and how it is drawn did not change.

        This overrides DataTable's private ``_render_cell`` (Textual 8.2; the public API has no
        per-cell hook) and is the only private name this class relies on: DataTable forgets
        every drawn cell on any ``update_cell`` and on any focus or style change, so a row
        whose batch id changed re-rendered all its 12 cells, and a focus change (the ``/``
        line, a tab switch) re-rendered every visible cell (~200 ms for 45 rows). Cells of the
        cursor and hover rows (whose look depends on focus) are always drawn by DataTable;
        every other cell is drawn from its value, ``base_style`` (the row's resolved style,
        which is how a theme or CSS change reaches it), width and padding only, all in the
        key."""
        if row_index < 0 or column_index < 0 or cursor or hover or self.fixed_rows or self.fixed_columns:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if row_key is None or column_key is None or self.rows[row_key].height != 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self._data[row_key].get(column_key)
        key = (row_key, column_key, row_index, base_style, width, self.cell_padding)
        kept = self._cell_lines.get(key)
        if kept is not None and (kept[0] is value or kept[0] == value):
            return kept[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if len(self._cell_lines) >= CELL_LINES_MAX:
            self._cell_lines.clear()
        self._cell_lines[key] = (value, lines)
        return lines

    def _wider(self, column: str, value: Cell) -> bool:
        """``value`` is wider than ``column`` now is (so the column must grow)."""
        width = value.cell_len if isinstance(value, Text) else cell_len(str(value))
        col = self.columns.get(column)  # type: ignore[call-overload]
        return col is None or width > col.content_width
