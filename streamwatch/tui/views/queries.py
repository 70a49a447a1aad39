"""Queries tab: one row per query — status, stall diagnosis, batch id, input and processed
rates (rows/s), the last batch's duration (ms), backlog (landed files not yet read; for a
Kafka source the consumer lag, "N rec": broker latest offsets − last committed batch; for a
Delta source "V ver F files": versions and files committed upstream after its latest offset),
watermark (UTC), trigger, output mode and total input rows.

The diagnosis column has a bounded width (cut with ``…``; the detail tab has the whole text) so
the numbers stay on screen: wide enough for every column (:data:`FULL_MIN_DIAGNOSIS` cells of
diagnosis), the columns keep their order; narrower (80 columns), the compact set
:data:`COMPACT_COLUMNS` comes first and the rest follow it, reached with ←/→ (a column a key),
home/end."""

from __future__ import annotations

from collections.abc import Callable

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from streamwatch.analysis import fmt
from streamwatch.analysis.board import QueryRow
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.diagnosis import Diagnosis
from streamwatch.tui.views.base import FilteredView
from streamwatch.tui.views.datatable_hook import Cell
from streamwatch.tui.views.table import SyncTable

QUERY_COLUMNS = ("query", "status", "diagnosis", "batch", "input rows/s", "processed rows/s", "batch ms",
                 "backlog", "watermark", "trigger", "mode", "rows")
#: narrow screens: these first (on screen at 80 columns), the other columns after them
COMPACT_COLUMNS = ("query", "status", "diagnosis", "batch", "input rows/s", "backlog", "trigger")
#: the diagnosis column's width (cells): at least this with every column on screen, else compact
FULL_MIN_DIAGNOSIS = 20
#: its width bounds in the compact layout, and its widest
COMPACT_DIAGNOSIS = (10, 32)
MAX_DIAGNOSIS = 60
#: cells kept free at the right (the vertical scrollbar)
SPARE = 2
DIAG_STYLE = {"ok": "green", "waiting": "cyan", "slow": "yellow", "stuck": "bold red", "failed": "bold red"}
#: one query's cells, in :data:`QUERY_COLUMNS` order (:func:`cells`)
QueryCells = tuple[Cell, ...]
STATUS_STYLE = {"failed": "bold red", "stopped": "dim", "idle": "cyan", "active": "green", "queued": "cyan",
                "not run": "yellow"}


class QueriesView(FilteredView, SyncTable):
    """The overview table; ``show(model)`` redraws it, setting ``needle`` filters it;
    ``highlighted(name)`` is called when the cursor moves onto a query's row, ``opened(name)``
    when a query's row is selected (enter, click) or :meth:`open_highlighted` is called."""

    def __init__(self, opened: Callable[[str], None] | None = None,
                 highlighted: Callable[[str], None] | None = None, *, id: str | None = None,
                 zebra_stripes: bool = False) -> None:
        super().__init__(QUERY_COLUMNS, id=id, zebra_stripes=zebra_stripes)
        self._opened = opened
        self._highlighted = highlighted
        self._title = ""
        #: the columns' order and the diagnosis width they were laid out for (:meth:`_arrange`)
        self._arranged: tuple[tuple[str, ...], int] = (QUERY_COLUMNS, MAX_DIAGNOSIS)

    def on_resize(self, _: events.Resize) -> None:
        """Another width may call for another column set or diagnosis width: drawn again."""
        if self.model is not None:
            self.watch_model()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Handled here, at once: bubbled to the app it waited behind every frame and repaint
        queued in the four containers' message queues on its way."""
        if self._opened is not None and event.row_key is not None and event.row_key.value is not None:
            event.stop()
            self._opened(str(event.row_key.value))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The cursor's query becomes the selected one (handled here, like a selection)."""
        if self._highlighted is not None and event.row_key is not None and event.row_key.value is not None:
            event.stop()
            self._highlighted(str(event.row_key.value))

    def action_select_cursor(self) -> None:
        """enter, when it reaches the table (the app's own enter gave way to keys queued before
        it): the query under the cursor opens now, not after a ``RowSelected`` message has
        waited its turn in this table's queue a second time (a paint or more under a flood)."""
        if not self.open_highlighted():
            super().action_select_cursor()

    def open_highlighted(self) -> bool:
        """Open the query under the cursor now (as enter would); False when there is none."""
        name = self.cursor_key()
        if name is None or self._opened is None:
            return False
        self._opened(name)
        return True

    def draw(self, model: DashboardModel) -> None:
        needle = self.needle.lower()
        backlogs = model.query_backlog()
        rows = []
        for name, diag in model.diagnose_all().items():
            row = model.board.rows[name]
            if needle and needle not in f"{name} {row.status} {diag.text}".lower():
                continue
            rows.append((name, cells(model, row, diag, backlogs.get(name))))
        order, room = self._arrange(rows)
        index = [QUERY_COLUMNS.index(c) for c in order]
        at = QUERY_COLUMNS.index("diagnosis")
        self.sync([(name, tuple(shorten(c[i], room) if i == at else c[i] for i in index)) for name, c in rows])
        title = f"{model.plan.pipeline} · {len(model.board.rows)} queries" + (f" · /{needle}" if needle else "")
        if title != self._title:  # setting border_title repaints the whole table, even unchanged
            self._title = title
            self.border_title = title

    def _arrange(self, rows: list[tuple[str, QueryCells]]) -> tuple[tuple[str, ...], int]:
        """The column order and the diagnosis width for this width and these cells; the table's
        columns are laid out again when they change (a resize, or columns grown wider): every
        column with a diagnosis of at least :data:`FULL_MIN_DIAGNOSIS` cells where that fits,
        else :data:`COMPACT_COLUMNS` first with the diagnosis fitted between them. The
        diagnosis only widens again for 3 cells or more (no relayout for a digit more or less)."""
        width = self.size.width or self.app.size.width
        need = {c: cell_len(c) for c in QUERY_COLUMNS}
        for _, cs in rows:
            for c, v in zip(QUERY_COLUMNS, cs, strict=True):
                need[c] = max(need[c], v.cell_len if isinstance(v, Text) else cell_len(str(v)))
        order, room = self._arranged
        for c in order:  # a column never shrinks while the table lives (SyncTable)
            col = self.columns.get(ColumnKey(c))
            if col is not None and c != "diagnosis":
                need[c] = max(need[c], col.content_width)
        pad = 2 * self.cell_padding

        def left(columns: tuple[str, ...]) -> int:
            return width - SPARE - sum(need[c] + pad for c in columns if c != "diagnosis") - pad

        header = cell_len("diagnosis")
        diag_need = max(need["diagnosis"], header)
        if left(QUERY_COLUMNS) >= max(header, min(FULL_MIN_DIAGNOSIS, diag_need)):
            want: tuple[tuple[str, ...], int] = (QUERY_COLUMNS, min(MAX_DIAGNOSIS, left(QUERY_COLUMNS), diag_need))
        else:
            lo, hi = COMPACT_DIAGNOSIS
            compact = COMPACT_COLUMNS + tuple(c for c in QUERY_COLUMNS if c not in COMPACT_COLUMNS)
            want = (compact, max(lo, min(hi, left(COMPACT_COLUMNS), diag_need)))
        if want[0] != order or want[1] < room or want[1] >= room + 3:
            self._arranged = want
            self.set_columns(want[0], {"diagnosis": want[1]})
        return self._arranged


def cells(model: DashboardModel, row: QueryRow, diag: Diagnosis, backlog_n: int | None) -> QueryCells:
    """The table cells of one query."""
    return (
        row.name,
        Text(row.status, style=STATUS_STYLE.get(row.status, "")),
        Text(diag.text, style=DIAG_STYLE.get(diag.code, "")),
        fmt.count(row.batch_id),
        fmt.rate(row.input_rps),
        fmt.rate(row.processed_rps),
        fmt.count(row.batch_duration_ms),
        backlog_cell(model, row.name, backlog_n),
        fmt.iso(row.watermark),
        model.trigger_label(row.name),
        model.output_mode_of(row.name),
        fmt.count(row.total_input_rows),
    )


def shorten(value: Cell, width: int) -> Cell:
    """``value`` cut to ``width`` cells, its last one ``…`` when cut (a ``Text``; a ``str``
    cell is left as it is: the cell cut, the diagnosis, is a ``Text``)."""
    if isinstance(value, str) or value.cell_len <= width:
        return value
    cut = value.copy()
    cut.truncate(width, overflow="ellipsis")
    return cut


def backlog_cell(model: DashboardModel, name: str, files: int | None) -> str:
    """Landed files not yet read; for a query reading Kafka its consumer lag in records; for
    one streaming from a Delta table the versions and files committed upstream, not yet read
    (``2 ver 6 files``)."""
    lag = model.consumer_lag(name)
    if lag is not None:
        return f"{lag:,} rec"
    delta = model.delta_backlog(name)
    if delta is not None:
        return f"{delta.versions:,} ver {delta.files:,} files"
    return fmt.count(files)
