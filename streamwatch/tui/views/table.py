"""A DataTable that is updated by syncing to a desired list of rows (minimal changes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets.data_table import ColumnKey

from streamwatch.tui.views.datatable_hook import Cell, CellHookTable, CellLines

#: more rows than this leaving the table (a ``/`` filter) rebuild it: cheaper than removing each
REMOVE_ONE_BY_ONE = 8
#: drawn cells kept (see :meth:`SyncTable.draw_cell`); all are forgotten beyond this
CELL_LINES_MAX = 20_000


def same_cell(a: object, b: object) -> bool:
    """``a`` and ``b`` are drawn alike. rich's ``Text`` equality compares the characters and
    spans only: a cell whose style, justify or overflow changed is a changed cell."""
    if a is b:
        return True
    if isinstance(a, Text) and isinstance(b, Text):
        return a == b and (a.style, a.justify, a.overflow, a.no_wrap, a.end) == (b.style, b.justify, b.overflow, b.no_wrap, b.end)
    return type(a) is type(b) and a == b


def cell_shape(value: object, room: int) -> tuple[object, ...] | None:
    """What decides how DataTable draws a one-line cell apart from its characters, when only
    the characters can differ: a ``str`` without markup or a left-justified ``Text`` without spans, of
    printable one-cell characters, fitting in ``room`` cells (no cropping). Two values of the
    same shape are drawn as the same segments, same styles and same cuts, holding different
    characters at the same places (:func:`put_chars`). None for any other value."""
    if isinstance(value, Text):
        if value.spans or value.justify not in (None, "default", "left"):  # else the characters move
            return None
        plain = value.plain
        shape: tuple[object, ...] = ("text", value.style, value.justify, value.overflow, value.no_wrap, value.end, len(plain))
    elif isinstance(value, str):
        if "[" in value or "\\" in value or (":" in value and Text.from_markup(value).plain != value):
            return None  # markup or an emoji code (DataTable reads a str cell as markup)
        plain = value
        shape = ("str", len(plain))
    else:
        return None
    if len(plain) > room or not plain.isprintable() or cell_len(plain) != len(plain):
        return None
    return shape


def put_chars(lines: list[list[Segment]], start: int, chars: str) -> list[list[Segment]]:
    """``lines`` (one line, drawn from a value of the same :func:`cell_shape`) with ``chars``
    in place of the characters at cells ``start`` … ``start + len(chars)``."""
    end = start + len(chars)
    out: list[Segment] = []
    pos = 0
    for seg in lines[0]:
        text = seg.text
        n = len(text)
        a, b = max(start, pos), min(end, pos + n)
        if a < b:
            text = text[:a - pos] + chars[a - start:b - start] + text[b - pos:]
            seg = Segment(text, seg.style, seg.control)
        out.append(seg)
        pos += n
    return [out]


class _Paint(NamedTuple):
    """What every row line of one paint shares (:meth:`SyncTable.render_lines`)."""

    key: tuple[object, ...]  #: all of it: a kept line drawn under another key is drawn again
    base: Style  #: the table's style
    rows: tuple[Style, Style]  #: even and odd rows' style
    widths: tuple[int, ...]  #: each column's width with its padding (cells)
    width: int  #: the table's width (cells)
    scroll_x: int


class SyncTable(CellHookTable):
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
    re-rendered every visible cell (its cost grows with the visible rows × columns) although a
    frame of 100 queries changes a few rows (measured: docs/changelog.md).
    The cursor and hover rows are always drawn by DataTable. Lines of rows a filter removed
    are kept (bounded) so clearing the filter redraws only what changed meanwhile. Below the
    line, each drawn cell is kept too (:meth:`draw_cell`), so a changed row re-renders only
    its changed cells. A filter that removes more than :data:`REMOVE_ONE_BY_ONE` rows rebuilds
    the table instead (``DataTable.remove_row`` renumbers every row, O(rows) each)."""

    DEFAULT_CSS = """
    SyncTable:focus { background-tint: $foreground 0%; }
    """

    #: inside :meth:`sync`'s cell updates: a whole-table refresh is narrowed to the changed rows
    _rows_only = False

    def __init__(self, columns: Sequence[str], *, id: str | None = None, show_cursor: bool = True,
                 zebra_stripes: bool = False) -> None:
        super().__init__(id=id, show_cursor=show_cursor, zebra_stripes=zebra_stripes, cursor_type="row")
        self._columns = tuple(columns)
        self._widths: dict[str, int] = {}
        #: the cursor's row key across :meth:`set_columns` (restored by the next sync)
        self._keep_cursor: str | None = None
        self._cells: dict[str, tuple[Cell, ...]] = {}
        #: row key → (paint key and row index, the cells it was drawn from, the drawn line)
        self._drawn: dict[str, tuple[tuple[object, ...], tuple[Cell, ...], Strip]] = {}
        self._paint: _Paint | None = None
        #: (row key, column key, row index, style, width, cursor, hover, …) → (cell value, its lines)
        self._cell_lines: dict[tuple[object, ...], tuple[object, CellLines]] = {}
        #: (row index, column index, style, width, padding, cell shape) → a cell drawn there
        self._shapes: dict[tuple[object, ...], CellLines] = {}

    def on_mount(self) -> None:
        for c in self._columns:
            self.add_column(c, key=c, width=self._widths.get(c))

    def set_columns(self, columns: Sequence[str], widths: Mapping[str, int] | None = None) -> None:
        """Lay the table out again with ``columns`` in this order (``widths``: a fixed width in
        cells for some, the others fit their cells): every row is forgotten, the next
        :meth:`sync` (given cells in the new order) adds them again; the cursor stays on its
        row's key then, and the horizontal scroll goes back to the first column."""
        self._columns = tuple(columns)
        self._widths = dict(widths or {})
        if not self.is_mounted:
            return  # on_mount adds them
        self._keep_cursor = self.cursor_key()
        self.clear(columns=True)
        self._cells.clear()
        self._drawn.clear()
        self._cell_lines.clear()
        self._shapes.clear()
        for c in self._columns:
            self.add_column(c, key=c, width=self._widths.get(c))

    def _column_starts(self) -> list[int]:
        """Where each column starts (cells from the table's left edge)."""
        starts, x = [], 0
        for column in self.ordered_columns:
            starts.append(x)
            x += column.get_render_width(self)
        return starts

    def action_cursor_right(self) -> None:
        """→ with a row cursor (or none): the table scrolls to the next column's start (DataTable
        scrolls a cell a key)."""
        if self.show_cursor and self.cursor_type in ("cell", "column"):
            return super().action_cursor_right()
        x = self.scroll_offset.x
        target = next((s for s in self._column_starts() if s > x), self.max_scroll_x)
        self.scroll_to(x=min(target, self.max_scroll_x), animate=False)

    def action_cursor_left(self) -> None:
        """← with a row cursor (or none): back to the previous column's start."""
        if self.show_cursor and self.cursor_type in ("cell", "column"):
            return super().action_cursor_left()
        x = self.scroll_offset.x
        self.scroll_to(x=max((s for s in self._column_starts() if s < x), default=0), animate=False)

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
                if old is not None and len(old) == len(cells) and all(map(same_cell, old, cells)):
                    continue
                # a row may give fewer cells than columns (DataTable shows the rest empty)
                for i, (col, new) in enumerate(zip(self._columns, cells, strict=False)):
                    prev = old[i] if old is not None and i < len(old) else None
                    if not same_cell(new, prev):
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
        elif self._keep_cursor is not None:
            keep, self._keep_cursor = self._keep_cursor, None
            if keep in self._cells:
                self.move_cursor(row=self.get_row_index(keep), animate=False)

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
        # the index too (the line's click targets name its row); the cells by identity (the
        # tuple is kept, so its id is never reused): sync() replaces a row's tuple when a cell
        # changed, and Text equality ignores a style change
        what = (paint.key, index)
        drawn = self._drawn.get(key)
        if drawn is not None and drawn[0] == what and drawn[1] is cells:
            return drawn[2]
        strip = self._row_line(index, paint)
        self._drawn[key] = (what, cells, strip)
        return strip

    def _row_line(self, index: int, paint: _Paint) -> Strip:
        """The line of row ``index`` (one line high, neither the cursor's nor the hover's row),
        as DataTable draws it (``_render_line_in_row`` then ``_render_line``, Textual 8.2): its
        cells in the row's stripe style, then the row style filling the rest of the width, the
        whole scrolled by ``scroll_x`` and cut to the width. DataTable recomputes the table's
        style, the stripe and header styles and every column width for each line it draws, the
        same for every line of a paint (a frame of 100 queries changes many visible rows); here
        they come from ``paint``, computed once a paint. SyncTable rows have no labels and the
        table no fixed rows or columns (:meth:`_cacheable`), so that is all a row line is."""
        row_style = paint.rows[index % 2]
        segments: list[Segment] = []
        for column, width in enumerate(paint.widths):
            segments.extend(self.draw_cell(index, column, row_style, width, False, False)[0])
        fill = max(0, paint.width - sum(paint.widths))
        segments.append(Segment(" " * fill, row_style + Style.from_meta(
            {"row": index, "column": 0, "out_of_bounds": True})))
        return Strip(segments).crop(paint.scroll_x, paint.scroll_x + paint.width) \
            .adjust_cell_length(paint.width, paint.base).simplify()

    def draw_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool,
                  hover: bool) -> CellLines:
        """One cell's lines, kept while its value and how it is drawn did not change.

        DataTable draws every cell through this (its private per-cell method, routed here by
        :class:`~streamwatch.tui.views.datatable_hook.CellHookTable`, the one place such names
        are used) and forgets every drawn cell on any ``update_cell`` and on any focus or style
        change, so a row whose batch id changed re-rendered all its 12 cells, and a focus
        change (the ``/`` line, a tab switch) re-rendered every visible cell, which keys typed
        then waited behind. Cells of the cursor and hover rows (whose look depends on focus) are always drawn by DataTable;
        every other cell is drawn from its value, ``base_style`` (the row's resolved style,
        which is how a theme or CSS change reaches it), width and padding only, all in the
        key. A changed value of the :func:`cell_shape` of one drawn at the same place before
        (a batch id of as many digits) is that cell's segments with its own characters, not a
        fresh draw through rich, the costly part of a cell (the ``/`` filter's 10 rows are 120
        cells; measured: docs/changelog.md)."""
        if row_index < 0 or column_index < 0 or cursor or hover or self.fixed_rows or self.fixed_columns:
            return self.framework_cell(row_index, column_index, base_style, width, cursor, hover)
        at = self.cell_at(row_index, column_index)
        if at is None or self.rows[at[0]].height != 1:
            return self.framework_cell(row_index, column_index, base_style, width, cursor, hover)
        row_key, column_key, value = at
        key = (row_key, column_key, row_index, base_style, width, self.cell_padding)
        kept = self._cell_lines.get(key)
        if kept is not None and same_cell(kept[0], value):
            return kept[1]
        shape = cell_shape(value, width - 2 * self.cell_padding)
        like = (row_index, column_index, base_style, width, self.cell_padding, shape)
        drawn = self._shapes.get(like) if shape is not None else None
        if drawn is not None:  # a value of this shape was drawn here: the same line, other characters
            lines = put_chars(drawn, self.cell_padding, value.plain if isinstance(value, Text) else str(value))
        else:
            lines = self.framework_cell(row_index, column_index, base_style, width, cursor, hover)
            if shape is not None:
                self._shapes[like] = lines
        if len(self._cell_lines) >= CELL_LINES_MAX:
            self._cell_lines.clear()
            self._shapes.clear()
        self._cell_lines[key] = (value, lines)
        return lines

    def _wider(self, column: str, value: Cell) -> bool:
        """``value`` is wider than ``column`` now is (so the column must grow)."""
        width = value.cell_len if isinstance(value, Text) else cell_len(str(value))
        col = self.columns.get(ColumnKey(column))
        return col is None or width > col.content_width
