"""Queries tab: one row per query — status, stall diagnosis, batch id, input and processed
rates (rows/s), the last batch's duration (ms), backlog (landed files not yet read; for a
Kafka source the consumer lag, "N rec": broker latest offsets − last committed batch; for a
Delta source "V ver F files": versions and files committed upstream after its latest offset),
watermark (UTC), trigger, output mode and total input rows."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.widgets import DataTable

from streamwatch.analysis import fmt
from streamwatch.analysis.board import QueryRow
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.diagnosis import Diagnosis
from streamwatch.tui.views.base import FilteredView
from streamwatch.tui.views.table import SyncTable

QUERY_COLUMNS = ("query", "status", "diagnosis", "batch", "input rows/s", "processed rows/s", "batch ms",
                 "backlog", "watermark", "trigger", "mode", "rows")
DIAG_STYLE = {"ok": "green", "waiting": "cyan", "slow": "yellow", "stuck": "bold red", "failed": "bold red"}
STATUS_STYLE = {"failed": "bold red", "stopped": "dim", "idle": "cyan", "active": "green", "queued": "cyan",
                "not run": "yellow"}


class QueriesView(FilteredView, SyncTable):
    """The overview table; ``show(model)`` redraws it, setting ``needle`` filters it;
    ``highlighted(name)`` is called when the cursor moves onto a query's row, ``opened(name)``
    when a query's row is selected (enter, click) or :meth:`open_highlighted` is called."""

    def __init__(self, opened: Callable[[str], None] | None = None,
                 highlighted: Callable[[str], None] | None = None, **kw: object) -> None:
        super().__init__(QUERY_COLUMNS, **kw)
        self._opened = opened
        self._highlighted = highlighted
        self._title = ""

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
        self.sync(rows)
        title = f"{model.plan.pipeline} · {len(model.board.rows)} queries" + (f" · /{needle}" if needle else "")
        if title != self._title:  # setting border_title repaints the whole table, even unchanged
            self._title = title
            self.border_title = title


def cells(model: DashboardModel, row: QueryRow, diag: Diagnosis, backlog_n: int | None) -> tuple:
    """The table cells of one query."""
    return (
        row.name,
        Text(row.status, style=STATUS_STYLE.get(row.status, "")),
        Text(diag.text[:60], style=DIAG_STYLE.get(diag.code, "")),
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
