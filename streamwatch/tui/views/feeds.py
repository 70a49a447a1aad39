"""Landing, events and results tabs: landed files with their journey (landed → read →
committed) and the backlog per source; the raw event stream (one line per model object); the
current rows of a query's table."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from streamwatch.analysis import fmt
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.journeys import backlog
from streamwatch.errors import one_line
from streamwatch.model.deltalog import DeltaCommit
from streamwatch.model.events import Event, QueryIdle, QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import QueryNotRun, QueryQueued, RuntimeNotice
from streamwatch.tui.messages import JourneyRead, ResultsRead
from streamwatch.tui.views.base import FilteredView
from streamwatch.tui.views.table import SyncTable

LANDING_COLUMNS = ("landed", "source", "file", "size", "journey")
EVENT_COLUMNS = ("time", "kind", "query", "what")
STAGE_STYLE = {"landed": "yellow", "read": "cyan", "committed": "green"}


def event_line(obj: object, query: str) -> tuple[str, str, str, str]:
    """(time UTC with ms, kind, query, what) for an event, a landed file or a notice. Times
    come from the object itself (never the wall clock), so recordings render the same."""
    if isinstance(obj, QueryProgress):
        what = (f"batch {obj.batch_id}: {obj.num_input_rows:,} rows in, {fmt.rate(obj.input_rows_per_second)} → "
                f"{fmt.rate(obj.processed_rows_per_second)} rows/s, {obj.batch_duration:,} ms")
        if obj.num_output_rows >= 0:
            what += f", {obj.num_output_rows:,} out"
        return fmt.clock(obj.timestamp_ms, millis=True), "progress", query, what
    if isinstance(obj, QueryStarted):
        return fmt.clock(obj.timestamp_ms, millis=True), "started", query, f"run {obj.run_id}"
    if isinstance(obj, QueryIdle):
        return fmt.clock(obj.timestamp_ms, millis=True), "idle", query, "no new data"
    if isinstance(obj, QueryTerminated):
        what = f"failed: {one_line(obj.exception)}" if obj.failed else fmt.stopped(obj.exception)
        return fmt.clock(obj.timestamp_ms, millis=True), "terminated", query, what
    if isinstance(obj, Event):
        return fmt.clock(obj.timestamp_ms, millis=True), obj.kind, query, ""
    if isinstance(obj, QueryQueued):
        waits = ", ".join(obj.waiting_for)
        return "", "queued", obj.query_name, f"waits for {waits}" if waits else f"queued ({obj.trigger})"
    if isinstance(obj, QueryNotRun):
        return "", "not run", obj.query_name, obj.reason
    if isinstance(obj, LandedFile):
        return fmt.clock(obj.landed_at_ms, millis=True), "landed", obj.source, f"{obj.name} ({fmt.size(obj.size_bytes)})"
    if isinstance(obj, RuntimeNotice):
        return "", obj.level, "", obj.message
    return "", type(obj).__name__, query, str(obj)[:200]


class LandingView(FilteredView, Vertical):
    """Landed files (newest last, followed), the backlog per source and — once a file is
    selected (enter) — its journey through every layer."""

    DEFAULT_CSS = ("LandingView { height: 1fr; } LandingView > Static { height: auto; padding: 0 1; } "
                   "#journey { max-height: 12; border-top: solid $primary-background; }")

    def __init__(self, opened: Callable[[str], object] | None = None, *, id: str | None = None) -> None:
        """``opened(path)`` is called when a landed file's row is selected (enter, click); what
        it returns (the app's journey worker) is not used."""
        super().__init__(id=id)
        self._opened = opened

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if self._opened is not None and event.row_key is not None and event.row_key.value:
            event.stop()
            self._opened(str(event.row_key.value).rsplit("@", 1)[0])

    def compose(self) -> ComposeResult:
        yield Static("backlog: -", id="backlog")
        yield SyncTable(LANDING_COLUMNS, id="landing-table")
        journey = Static("", id="journey")
        journey.display = False
        yield journey

    def show_journey(self, message: JourneyRead) -> None:
        """Show a selected file's journey (or why it cannot be followed) under the table."""
        box = self.query_one("#journey", Static)
        if message.error:
            box.update(Text(f"{message.path.rsplit('/', 1)[-1]}: {message.error}", style="yellow"))
        else:
            box.update(Text("\n".join(message.lines)))
        box.display = True

    def draw(self, model: DashboardModel) -> None:
        needle = self.needle.lower()
        rows = []
        js = model.journeys()
        for j in js:
            f = j.file
            cells = (fmt.clock(f.landed_at_ms), f.source, f.name, fmt.size(f.size_bytes), j.text)
            if needle and needle not in " ".join(cells).lower():
                continue
            rows.append((f"{f.path}@{f.landed_at_ms}", (*cells[:4], Text(j.text, style=STAGE_STYLE[j.stage]))))
        table = self.query_one("#landing-table", SyncTable)
        table.sync(rows, follow=True)
        table.border_title = f"landed files ({model.landed_count:,})" + (f" · /{needle}" if needle else "")
        per = backlog(js)
        text = " · ".join(f"{s}: {n:,} not yet read" for s, n in sorted(per.items())) or "no files landed yet"
        self.query_one("#backlog", Static).update(Text(f"backlog — {text}"))


class EventsView(FilteredView, SyncTable):
    """The event stream (newest last, followed)."""


    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(EVENT_COLUMNS, id=id)

    def draw(self, model: DashboardModel) -> None:
        needle = self.needle.lower()
        rows = [(k, line) for k, line in model.event_log if not needle or needle in " ".join(line).lower()]
        self.sync(rows, follow=True)
        self.border_title = f"events ({model.event_count:,})" + (f" · /{needle}" if needle else "")


class ResultsView(Vertical):
    """The rows of one :class:`~streamwatch.tui.messages.ResultsRead` (``results``), or its
    error; ``batch_id`` is the query's batch when they were read."""

    DEFAULT_CSS = "ResultsView { height: 1fr; } ResultsView > Static { height: auto; padding: 0 1; }"
    results: reactive[tuple[ResultsRead, int | None] | None] = reactive(None, always_update=True, repaint=False,
                                                                        init=False)
    needle: reactive[str] = reactive("", repaint=False, init=False)

    def compose(self) -> ComposeResult:
        yield Static("results: select a query, then :results", id="results-head")
        history = Static("", id="results-history")
        history.display = False  # a Delta table's history, when there is one
        yield history
        yield DataTable(id="results-table", cursor_type="row")

    def show_results(self, message: ResultsRead, batch_id: int | None) -> None:
        self.results = (message, batch_id)

    def watch_results(self) -> None:
        if self.results is None:
            return
        message, batch_id = self.results
        head = self.query_one("#results-head", Static)
        table = self.query_one("#results-table", DataTable)
        if message.error:
            head.update(Text(f"results of {message.query}: {message.error}", style="yellow"))
            table.clear(columns=True)
            return
        head.update(Text(f"results of {message.query} — {len(message.rows):,} rows shown"
                         f" (as of batch {fmt.count(batch_id)})"))
        history = self.query_one("#results-history", Static)
        history.update(history_text(message.history))
        history.display = bool(message.history)
        table.clear(columns=True)
        for c in message.columns:
            table.add_column(c)
        for r in message.rows:
            table.add_row(*r)


def history_text(commits: Sequence[DeltaCommit]) -> Text:
    """A Delta table's history, newest first: version, operation, rows written, time (UTC)."""
    t = Text("Delta history (version · operation · rows written · time)", style="bold")
    for c in commits:
        rows = "-" if c.rows_written is None else f"{c.rows_written:,}"
        t.append(f"\n  v{c.version}  {c.operation or '?'}  {rows} rows  {fmt.stamp(c.timestamp_ms)}")
    return t
