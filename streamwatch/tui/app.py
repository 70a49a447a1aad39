"""``streamwatch`` dashboard: queries, landing files and checkpoints, live.

Model objects arrive from any thread through ``post_message`` (thread-safe, non-blocking);
blocking work — starting the backend, reading checkpoints — runs in thread workers.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Header, Static

from streamwatch.model.events import Event
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import RuntimeNotice, SessionInfo
from streamwatch.tui.backend import Backend
from streamwatch.tui.state import QueryBoard, QueryRow

QUERY_COLUMNS = ("query", "status", "batch", "input rows/s", "processed rows/s", "batch ms", "rows", "watermark")
MAX_LANDED_ROWS = 500


class ModelMessage(Message):
    """Carries one model object (event, landed file, notice, session info) to the app."""

    def __init__(self, obj: object) -> None:
        super().__init__()
        self.obj = obj


class CheckpointsRead(Message):
    """Result of a checkpoint scan: query name → (latest offsets batch, latest commit)."""

    def __init__(self, latest: dict[str, tuple[int | None, int | None, str | None]]) -> None:
        super().__init__()
        self.latest = latest


HELP_TEXT = """\
[b]streamwatch — keys[/b]

  [b]q[/b]        quit: stop the queries cleanly, then exit
  [b]?[/b]        this help (any key closes it)
  [b]tab[/b]      move focus between panels
  [b]↑ ↓[/b]      move within a table

[b]Panels[/b]
  queries      one row per streaming query: status, batch id, rates (rows/s),
               last batch duration (ms), rows read so far, watermark (UTC)
  landing      files arriving in the landing directories (newest first)
  checkpoints  latest batch id in offsets/ (planned) and commits/ (finished);
               a gap of one is the batch in flight
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: 80; max-width: 100%; border: round $accent; padding: 1 2; background: $panel; }
    """

    def compose(self) -> ComposeResult:
        yield Static(HELP_TEXT)

    def on_key(self) -> None:
        self.dismiss()


def _fmt_rate(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"


def _fmt_int(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"


def _fmt_size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


class StreamwatchApp(App[None]):
    """The dashboard. ``backend`` supplies the run plan and the model objects;
    ``checkpoint_refresh_s`` is how often checkpoints are re-read (seconds)."""

    TITLE = "streamwatch"
    CSS = """
    #session { height: auto; padding: 0 1; color: $text-muted; }
    #queries { height: 1fr; min-height: 6; }
    #bottom { height: 1fr; }
    #landing { width: 3fr; }
    #checkpoints { width: 2fr; }
    DataTable { border: round $primary-background; }
    DataTable:focus { border: round $accent; }
    #status { height: 1; padding: 0 1; background: $boost; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
    ]

    def __init__(self, backend: Backend, checkpoint_refresh_s: float = 2.0) -> None:
        super().__init__()
        self.backend = backend
        self.checkpoint_refresh_s = checkpoint_refresh_s
        self.board = QueryBoard([q.query_name for q in backend.plan.queries])
        self.session_info: SessionInfo | None = None
        self.landed: list[LandedFile] = []
        self.notices: list[RuntimeNotice] = []
        self._watcher = None
        self._stopping = False

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self._session_text(), id="session")
        with Vertical():
            yield DataTable(id="queries", cursor_type="row", zebra_stripes=True)
            with Horizontal(id="bottom"):
                yield DataTable(id="landing", cursor_type="row")
                yield DataTable(id="checkpoints", cursor_type="row")
        yield Static("starting…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        plan = self.backend.plan
        self.sub_title = f"{plan.pipeline} — {plan.description}"
        queries = self.query_one("#queries", DataTable)
        queries.border_title = "queries"
        for c in QUERY_COLUMNS:
            queries.add_column(c, key=c)
        for name, row in self.board.rows.items():
            queries.add_row(*self._query_cells(row), key=name)
        landing = self.query_one("#landing", DataTable)
        landing.border_title = "landing"
        for c in ("time", "source", "file", "size"):
            landing.add_column(c, key=c)
        cps = self.query_one("#checkpoints", DataTable)
        cps.border_title = "checkpoints"
        for c in ("query", "offsets", "commits", "state"):
            cps.add_column(c, key=c)
        for q in plan.queries:
            cps.add_row(q.query_name, "-", "-", "not yet written", key=q.query_name)
        self._start_watcher()
        self.start_backend()
        self.set_interval(self.checkpoint_refresh_s, self.scan_checkpoints)

    # -- adapters in, model out ------------------------------------------------------------
    def emit(self, obj: object) -> None:
        """Thread-safe entry for model objects (never blocks the caller)."""
        self.post_message(ModelMessage(obj))

    def _start_watcher(self) -> None:
        from streamwatch.landing import LandingWatcher

        dirs = {name: Path(path) for name, path in self.backend.plan.landing}
        if dirs:
            try:
                self._watcher = LandingWatcher(dirs, self.emit).start()
            except OSError as e:
                self.emit(RuntimeNotice("warning", f"cannot watch landing folders: {e}"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="backend")
    def start_backend(self) -> None:
        try:
            self.backend.start(self.emit)
        except Exception as e:  # shown, never a crash of the dashboard
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            self.emit(RuntimeNotice("error", f"could not start: {first}"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="checkpoints")
    def scan_checkpoints(self) -> None:
        from streamwatch.checkpoint import read_checkpoint

        latest: dict[str, tuple[int | None, int | None, str | None]] = {}
        for q in self.backend.plan.queries:
            try:
                cp = read_checkpoint(q.checkpoint)
                latest[q.query_name] = (cp.latest_batch_id, cp.last_committed_batch_id, None)
            except Exception as e:  # not written yet, or mid-write: say so, keep going
                latest[q.query_name] = (None, None, str(e).split(": ")[-1])
        self.post_message(CheckpointsRead(latest))

    # -- rendering ---------------------------------------------------------------------
    def _session_text(self) -> str:
        info = self.session_info
        if info is None:
            return "Spark: starting…"
        ui = info.ui_url or "off"
        return (
            f"Spark {info.spark_version} on {info.master} · UI {ui} · tables: {info.table_format} "
            f"({info.table_format_reason})"
        )

    @staticmethod
    def _query_cells(row: QueryRow) -> tuple[str, ...]:
        wm = row.watermark.replace("T", " ").replace(".000Z", "") if row.watermark else "-"
        return (
            row.name,
            row.status,
            _fmt_int(row.batch_id),
            _fmt_rate(row.input_rps),
            _fmt_rate(row.processed_rps),
            _fmt_int(row.batch_duration_ms),
            _fmt_int(row.total_input_rows),
            wm,
        )

    def on_model_message(self, message: ModelMessage) -> None:
        obj = message.obj
        if isinstance(obj, Event):
            self._on_event(obj)
        elif isinstance(obj, LandedFile):
            self._on_landed(obj)
        elif isinstance(obj, SessionInfo):
            self.session_info = obj
            self.query_one("#session", Static).update(self._session_text())
        elif isinstance(obj, RuntimeNotice):
            self.notices.append(obj)
            self._set_status(obj.message, obj.level)
            if obj.level == "error":
                self.notify(obj.message, severity="error", timeout=10)

    def _set_status(self, text: str, level: str = "info") -> None:
        style = {"error": "bold red", "warning": "yellow"}.get(level, "")
        self.query_one("#status", Static).update(f"[{style}]{text}[/]" if style else text)

    def _on_event(self, event: Event) -> None:
        row = self.board.apply(event)
        if row is None:
            return
        table = self.query_one("#queries", DataTable)
        cells = self._query_cells(row)
        if row.name not in table.rows:
            table.add_row(*cells, key=row.name)
        else:
            for col, value in zip(QUERY_COLUMNS, cells):
                table.update_cell(row.name, col, value)
        if row.status == "failed" and row.exception:
            self._set_status(f"{row.name} failed: {row.exception.splitlines()[0]}", "error")

    def _on_landed(self, f: LandedFile) -> None:
        self.landed.append(f)
        table = self.query_one("#landing", DataTable)
        when = datetime.fromtimestamp(f.landed_at_ms / 1000, tz=timezone.utc).strftime("%H:%M:%S")
        key = f"{f.path}@{f.landed_at_ms}"
        if key in table.rows:
            return
        table.add_row(when, f.source, f.name, _fmt_size(f.size_bytes), key=key)
        table.sort("time", reverse=True)  # newest first
        if table.row_count > MAX_LANDED_ROWS:
            oldest = table.coordinate_to_cell_key((table.row_count - 1, 0)).row_key
            table.remove_row(oldest)
        table.border_title = f"landing ({len(self.landed):,} files)"

    def on_checkpoints_read(self, message: CheckpointsRead) -> None:
        table = self.query_one("#checkpoints", DataTable)
        for name, (offsets, commits, problem) in message.latest.items():
            if name not in table.rows:
                continue
            if problem:
                state = problem
            elif offsets is None:
                state = "no batch yet"
            elif commits == offsets:
                state = "committed"
            else:
                state = f"batch {offsets} in flight"
            table.update_cell(name, "offsets", _fmt_int(offsets))
            table.update_cell(name, "commits", _fmt_int(commits))
            table.update_cell(name, "state", state)

    # -- actions -----------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        self._set_status("stopping queries…", "warning")
        self.stop_everything()

    @work(thread=True, exit_on_error=False, group="shutdown")
    def stop_everything(self) -> None:
        t0 = time.monotonic()
        try:
            if self._watcher is not None:
                self._watcher.stop()
            self.backend.stop()
        finally:
            self.call_from_thread(self.exit, None, 0, f"stopped in {time.monotonic() - t0:.1f} s")
