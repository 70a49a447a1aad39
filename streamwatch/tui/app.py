"""``streamwatch`` dashboard: queries, detail, checkpoint, landing, events and results tabs.

Model objects arrive from any thread through :meth:`StreamwatchApp.emit` into an inbox; one
coalescing :class:`~streamwatch.tui.messages.Wake` message drains it, so a flood of progress
events renders once. Blocking work — starting the backend, reading checkpoints, reading
result tables, controls — runs in thread workers that post typed messages.

:class:`StreamwatchApp` is the composition root: layout, key bindings, the inbox and frame
scheduling, the workers and navigation live here; drawing the tabs is
:class:`~streamwatch.tui.rendering.RenderingMixin`, the keys/command line/controls
:class:`~streamwatch.tui.controls.ControlsMixin`.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path
from typing import Any, Callable

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.widgets import DataTable, Static, TabbedContent

from streamwatch.model.events import Event, QueryProgress
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import RecordedSession, RuntimeNotice, SessionInfo
from streamwatch.tui import fmt
from streamwatch.tui.backend import Backend
from streamwatch.tui.controls import ControlsMixin
from streamwatch.tui.diagnosis import CheckpointHead, Diagnosis
from streamwatch.tui.journey import Consumed, Journey
from streamwatch.tui.messages import CheckpointsRead, ResultsRead, Wake
from streamwatch.tui.rendering import RenderingMixin
from streamwatch.tui.screen import DashboardScreen
from streamwatch.tui.state import DEFAULT_HISTORY, QueryBoard
from streamwatch.tui.views.checkpoint import CheckpointView, timeline_of
from streamwatch.tui.views.feeds import event_line, render_results

TABS = ("queries", "detail", "checkpoint", "landing", "events", "results")


class StreamwatchApp(ControlsMixin, RenderingMixin, App[None]):
    """The dashboard.

    ``backend`` supplies the run plan and the model objects (and optional controls, detected
    with ``getattr``: ``start_query``, ``stop_query``, ``restart_query``, ``start_pipeline``,
    ``stop_pipeline``, ``restart_pipeline``, ``land``, ``set_trigger``, ``read_results``,
    ``triggers``, ``output_modes``). ``checkpoint_refresh_s`` is how often checkpoints are
    re-read (s, 0 = never); ``history`` the progress updates kept per query; ``clock``
    returns epoch ms (injectable for deterministic tests); ``max_events`` bounds the events
    tab and ``max_landed`` the landing tab.
    """

    TITLE = "streamwatch"
    CSS = """
    #session { height: 1; padding: 0 1; color: $text-muted; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    SyncTable { height: 1fr; }
    #backlog { height: auto; padding: 0 1; }
    #results-head { height: auto; padding: 0 1; }
    #status { height: 1; padding: 0 1; background: $boost; }
    CommandLine { height: 1; border: none; padding: 0 1; display: none; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("colon", "command", "Cmd", key_display=":", priority=True),  # see ControlsMixin.LINE_OPENERS
        Binding("slash", "filter", "Filter", key_display="/", priority=True),
        Binding("escape", "escape", "Back", show=False, key_display="esc"),
        *(Binding(str(i + 1), f"tab('{t}')", t.title(), show=False) for i, t in enumerate(TABS)),
        Binding("p", "pause", "Pause"),
        Binding("s", "control('start')", "Start", show=False),
        Binding("x", "control('stop')", "Stop"),
        Binding("r", "control('restart')", "Restart"),
        Binding("S", "control('start', 'all')", "Start all", show=False),
        Binding("X", "control('stop', 'all')", "Stop all", show=False),
        Binding("R", "control('restart', 'all')", "Restart all", show=False),
        Binding("l", "land", "Land"),
        Binding("t", "trigger", "Trigger", show=False, priority=True),
    ]

    def __init__(self, backend: Backend, checkpoint_refresh_s: float = 2.0, history: int = DEFAULT_HISTORY,
                 clock: Callable[[], int] | None = None, max_events: int = 2_000, max_landed: int = 2_000,
                 watch_landing: bool = True) -> None:
        super().__init__()
        self.backend = backend
        self.plan = backend.plan
        self.checkpoint_refresh_s = checkpoint_refresh_s
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.board = QueryBoard([q.query_name for q in self.plan.queries], history=history)
        self.session_info: SessionInfo | RecordedSession | None = None
        self.landed: collections.deque[LandedFile] = collections.deque(maxlen=max_landed)
        self.landed_count = 0
        self.notices: list[RuntimeNotice] = []
        self.event_log: collections.deque[tuple[str, tuple[str, str, str, str]]] = collections.deque(maxlen=max_events)
        self.event_count = 0
        self.checkpoints: dict[str, Any] = {}
        self.cp_errors: dict[str, str] = {}
        self.timelines: dict[str, tuple] = {}
        self.heads: dict[str, CheckpointHead] = {}
        self.consumed: dict[str, Consumed] = {}
        self.journeys: list[Journey] = []
        self.diagnoses: dict[str, Diagnosis] = {}
        self.filters: dict[str, str] = {t: "" for t in TABS}
        self.selected: str | None = self.plan.queries[0].query_name if self.plan.queries else None
        self.paused = False
        self.lag_samples: collections.deque[float] | None = None  # set by the benchmark
        self._inbox: collections.deque[tuple[float, object]] = collections.deque()
        self._wake_pending = False
        self._dirty: set[str] = set()
        self._watch_landing = watch_landing
        self._watcher = None
        self._stopping = False
        self._results_at = 0.0
        self._journeys_stale = False
        self.render_interval_s = 0.1
        self._rendered_at = 0.0
        self._unrendered: list[float] = []

    # -- layout: the dashboard screen ------------------------------------------------------
    def get_default_screen(self) -> DashboardScreen:
        """The dashboard is the base screen: it owns the layout and the redraw timers."""
        self.dashboard = DashboardScreen(self)
        return self.dashboard

    @property
    def _main(self) -> DashboardScreen:
        """The dashboard screen (queries keep working while help is open)."""
        return self.dashboard

    def on_mount(self) -> None:
        self.sub_title = f"{self.plan.pipeline} — {self.plan.description}"

    def dashboard_mounted(self) -> None:
        """Called by the dashboard screen once its widgets exist: start the feeds."""
        if self._watch_landing:
            self._start_watcher()
        self.start_backend()

    # -- adapters in, model out ------------------------------------------------------------
    def emit(self, obj: object) -> None:
        """Thread-safe entry for model objects: O(1), never blocks the caller."""
        self._inbox.append((time.monotonic(), obj))
        if not self._wake_pending:
            self._wake_pending = True
            self.post_message(Wake())

    def _start_watcher(self) -> None:
        from streamwatch.landing import LandingWatcher

        dirs = {name: Path(path) for name, path in self.plan.landing}
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
            self.emit(RuntimeNotice("error", f"could not start: {fmt.first_line(str(e)) or type(e).__name__}"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="checkpoints")
    def scan_checkpoints(self) -> None:
        """Read every query's checkpoint (read-only) and post :class:`CheckpointsRead`."""
        from streamwatch.checkpoint import read_checkpoint

        cps: dict[str, Any] = {}
        errors: dict[str, str] = {}
        timelines: dict[str, tuple] = {}
        for q in self.plan.queries:
            try:
                cp = read_checkpoint(q.checkpoint)
                cps[q.query_name] = cp
                timelines[q.query_name] = timeline_of(cp)
            except Exception as e:  # not written yet, mid-write, unreadable: say so, keep going
                errors[q.query_name] = fmt.first_line(str(e).split(": ")[-1]) or type(e).__name__
        self.post_message(CheckpointsRead(cps, errors, timelines))

    def on_wake(self, _: Wake) -> None:
        self._wake_pending = False
        while self._inbox:
            t, obj = self._inbox.popleft()
            try:
                self._ingest(obj)
            except Exception as e:  # a malformed object must not take the dashboard down
                self._set_status(f"could not show {type(obj).__name__}: {e}", "warning")
            if self.lag_samples is not None:
                self._unrendered.append(t)
        # render at most every ``render_interval_s``: a flood costs one frame per interval
        wait = self.render_interval_s - (time.monotonic() - self._rendered_at)
        if wait <= 0:
            self._frame()
        else:
            self.dashboard.schedule_frame(wait, self._frame)

    @property
    def frame_pending(self) -> bool:
        """A frame is scheduled and has not been drawn yet."""
        return self.dashboard.frame_pending

    def _frame(self) -> None:
        self._rendered_at = time.monotonic()
        if not self.dashboard.drawable:  # torn down: a late frame has nothing to draw
            return
        if not self.paused:
            self._render_dirty()
        if self.lag_samples is not None:
            now = time.monotonic()
            self.lag_samples.extend(now - t for t in self._unrendered)
            self._unrendered.clear()

    def _ingest(self, obj: object) -> None:
        if isinstance(obj, Event):
            row = self.board.apply(obj)
            name = row.name if row else (self.board.name_of(obj.id) or "")
            self._log(event_line(obj, name))
            if row is not None:
                self._dirty.add("queries")
                if row.name == self.selected:
                    self._dirty.add("detail")
                    if isinstance(obj, QueryProgress):
                        self._dirty.add("results-maybe")
                if row.status == "failed" and getattr(obj, "exception", None):
                    msg = f"{row.name} failed in batch {row.failed_batch_id}: {fmt.first_line(row.exception)}"
                    self._set_status(msg, "error")
                    self.notify(msg, severity="error", timeout=10)
        elif isinstance(obj, LandedFile):
            self.landed.append(obj)
            self.landed_count += 1
            self._journeys_stale = True
            self._log(event_line(obj, ""))
            self._dirty.add("landing")
        elif isinstance(obj, (SessionInfo, RecordedSession)):
            self.session_info = obj
            self._guard(self.render_session)
        elif isinstance(obj, RuntimeNotice):
            self.notices.append(obj)
            self._log(event_line(obj, ""))
            self._set_status(obj.message, obj.level)
            if obj.level == "error":
                self.notify(obj.message, severity="error", timeout=10)

    def _log(self, line: tuple[str, str, str, str]) -> None:
        self.event_count += 1
        self.event_log.append((str(self.event_count), line))
        self._dirty.add("events")

    # -- checkpoints -------------------------------------------------------------------
    def on_checkpoints_read(self, message: CheckpointsRead) -> None:
        from streamwatch.tui.journey import consumed_files

        self.checkpoints = message.checkpoints
        self.cp_errors = message.errors
        self.timelines = message.timelines
        self.heads = {}
        for name, cp in self.checkpoints.items():
            last = cp.offsets[-1] if cp.offsets else None
            self.heads[name] = CheckpointHead(cp.latest_batch_id, cp.last_committed_batch_id,
                                              last.timestamp_ms if last else None)
        try:
            self.consumed = consumed_files(self.checkpoints)
        except Exception as e:
            self._set_status(f"cannot follow landed files: {e}", "warning")
        self._journeys_stale = True
        self._dirty |= {"queries", "checkpoint", "landing"}
        if not self.paused:
            self._render_dirty()

    # -- results -----------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="results")
    def refresh_results(self) -> None:
        self._results_at = time.monotonic()
        name = self.selected or ""
        reader = getattr(self.backend, "read_results", None)
        if reader is None:
            self.post_message(ResultsRead(name, [], [], "this backend cannot read tables (replay?)"))
            return
        try:
            columns, rows = reader(name, 100)
            self.post_message(ResultsRead(name, list(columns), [tuple(map(str, r)) for r in rows]))
        except Exception as e:
            self.post_message(ResultsRead(name, [], [], fmt.first_line(str(e)) or type(e).__name__))

    def on_results_read(self, message: ResultsRead) -> None:
        row = self.board.rows.get(message.query)

        def render_results_tab() -> None:
            render_results(self._main.query_one("#results-head", Static),
                           self._main.query_one("#results-table", DataTable), message, row.batch_id if row else None)
        self._guard(render_results_tab)

    # -- navigation ----------------------------------------------------------------------
    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id or ""
        {"detail": lambda: self._guard(self.render_detail),
         "checkpoint": lambda: self._guard(self.render_checkpoint),
         "landing": lambda: self._guard(self.render_landing),
         "events": lambda: self._guard(self.render_events),
         "results": self.refresh_results,
         "queries": lambda: self._guard(self.render_queries)}.get(tab, lambda: None)()

    @on(DataTable.RowHighlighted, "#query-table")
    def _query_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value in self.board.rows:
            self.selected = str(event.row_key.value)

    @on(DataTable.RowSelected, "#query-table")
    def _query_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key is not None and event.row_key.value in self.board.rows:
            self.selected = str(event.row_key.value)
            self.action_tab("detail")

    @on(DataTable.RowSelected, "#cp-batches")
    def _batch_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key is not None and str(event.row_key.value).isdigit():
            self._main.query_one("#checkpoint-view", CheckpointView).open_batch(
                self.checkpoints.get(self.selected or ""), int(str(event.row_key.value)))

    def action_tab(self, tab: str) -> None:
        self._main.query_one("#tabs", TabbedContent).active = tab
        self.call_after_refresh(self._focus_tab)
