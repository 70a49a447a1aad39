"""``streamwatch`` dashboard: queries, detail, checkpoint, landing, events and results tabs.

Model objects arrive from any thread through :meth:`StreamwatchApp.emit` into an inbox; one
coalescing :class:`~streamwatch.tui.messages.Wake` message drains it into the
:class:`~streamwatch.analysis.dashboard.DashboardModel` (:func:`~streamwatch.tui.ingest.ingest`),
so a flood of progress events renders once. Blocking work — starting the backend, reading
checkpoints, reading result tables, controls — runs in thread workers that post typed
messages (what they read: :mod:`streamwatch.tui.readers`).

:class:`StreamwatchApp` ingests messages, runs the workers and navigates; the
:class:`~streamwatch.tui.screen.DashboardScreen` owns the layout, the redraw timers and the
command line, and each tab is a view that draws itself from the model (``show(model)``) and
handles its own rows' selection, calling back into the app (``open_query``,
``highlight_query``, ``read_journey``).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import events, on, work
from textual.actions import SkipAction
from textual.app import App
from textual.binding import Binding
from textual.widgets import TabbedContent

from streamwatch.analysis import fmt
from streamwatch.analysis.board import DEFAULT_HISTORY, QueryBoard
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.pipeview import PlanPipeline
from streamwatch.backends.base import Backend
from streamwatch.errors import one_line
from streamwatch.model.runtime import RuntimeNotice
from streamwatch.tui.command_args import Command
from streamwatch.tui.commandline import CommandLine
from streamwatch.tui.commands import BINDINGS, LINE_OPENERS
from streamwatch.tui.control import Controls
from streamwatch.tui.gc_policy import GcPolicy
from streamwatch.tui.help import HelpScreen
from streamwatch.tui.ingest import ingest
from streamwatch.tui.keys import KeysInFlight
from streamwatch.tui.messages import CheckpointsRead, ControlDone, JourneyRead, ResultsRead, Wake
from streamwatch.tui.readers import read_checkpoints, read_journey, read_results
from streamwatch.tui.screen import DashboardScreen
from streamwatch.tui.tabs import Tab
from streamwatch.tui.views.feeds import LandingView, ResultsView
from streamwatch.tui.views.queries import QueriesView

#: a warning or error older than this (s) leaves the status line (the events tab keeps it)
STATUS_NEWS_S = 30.0


class StreamwatchApp(App[None]):
    """The dashboard.

    ``backend`` supplies the run plan, the model objects and the controls it supports.
    ``checkpoint_refresh_s`` is how often checkpoints are re-read (s, 0 = never); ``history``
    the progress updates kept per query; ``clock`` returns epoch ms (injectable for
    deterministic tests); ``max_events`` bounds the events tab and ``max_landed`` the landing
    tab.
    """

    TITLE = "streamwatch"
    CSS = """
    #session { height: 1; padding: 0 1; color: $text-muted; }
    TabbedContent { height: 1fr; }
    TabPane { padding: 0; }
    SyncTable { height: 1fr; }
    DetailView > SyncTable { height: auto; }
    #status { height: 1; padding: 0 1; background: $boost; }
    CommandLine { height: 1; border: none; padding: 0 1; display: none; }
    """
    #: from the command registry (streamwatch.tui.commands); enter on the queries table is the
    #: app's own priority binding (:meth:`action_open_selected`)
    BINDINGS = [*BINDINGS, Binding("enter", "open_selected", show=False, priority=True)]
    LINE_OPENERS = LINE_OPENERS

    def __init__(self, backend: Backend, checkpoint_refresh_s: float = 2.0, history: int = DEFAULT_HISTORY,
                 clock: Callable[[], int] | None = None, max_events: int = 2_000, max_landed: int = 2_000,
                 watch_landing: bool = True) -> None:
        super().__init__()
        self.backend = backend
        self.plan = backend.plan
        self.checkpoint_refresh_s = checkpoint_refresh_s
        self.model = DashboardModel(
            backend.plan, clock or (lambda: int(time.time() * 1000)), history=history, max_events=max_events,
            max_landed=max_landed, triggers=lambda: backend.triggers, output_modes=lambda: backend.output_modes)
        self.controls = Controls(self)
        self.paused = False
        self.render_interval_s = 0.1
        self._inbox: collections.deque[object] = collections.deque()
        self._wake_pending = False
        self._watch_landing = watch_landing
        self._watcher: Any = None
        self._stopping = False
        self._results_at = 0.0
        self._results_due = False
        self._rendered_at = 0.0
        self._plan_pipeline = None if backend.emits_pipeline else PlanPipeline(backend.plan)
        #: the process-global collector switches, undone on unmount
        self.collector = GcPolicy()
        #: keys not handled yet; automatic GC waits until they are answered on screen
        self.keys = KeysInFlight(self, self.collector)

    # -- the model, as the views see it --------------------------------------------------------
    @property
    def board(self) -> QueryBoard:
        return self.model.board

    @property
    def selected(self) -> str | None:
        return self.model.selected

    @selected.setter
    def selected(self, name: str | None) -> None:
        self.model.selected = name

    # -- layout: the dashboard screen ------------------------------------------------------------
    def get_default_screen(self) -> DashboardScreen:
        """The dashboard is the base screen: it owns the layout and the redraw timers."""
        self.dashboard = DashboardScreen(self)
        return self.dashboard

    @property
    def active_tab(self) -> Tab:
        return self.dashboard.active_tab

    def on_mount(self) -> None:
        self.sub_title = f"{self.plan.pipeline} — {self.plan.description}"

    def on_unmount(self) -> None:
        """Shutting down: no key's hold outlives the app, and what :meth:`dashboard_mounted`
        froze may be collected again."""
        self.keys.release()
        self.collector.restore()

    async def on_event(self, event: events.Event) -> None:
        """Every key the terminal delivers is in flight until handled (:class:`KeysInFlight`)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.keys.arrived(event)
        await super().on_event(event)

    def key_route_busy(self) -> bool:
        """Messages are queued on a key's way: the screen, the focused widget, its ancestors."""
        screen = self.screen
        focused = screen.focused
        on_the_way = focused.ancestors_with_self if focused is not None else [screen]
        return any(pump.message_queue_size for pump in on_the_way if pump is not self)

    def dashboard_mounted(self) -> None:
        """Called by the dashboard screen once its widgets exist: start the feeds. What is alive
        now lives as long as the dashboard: frozen (:meth:`GcPolicy.freeze_long_lived`), full
        collections skip it."""
        self.collector.freeze_long_lived()
        if self._watch_landing:
            self._start_watcher()
        self.start_backend()

    def set_status(self, text: str, level: str = "info", about: str | None = None) -> None:
        self.dashboard.set_status(text, level, about)

    def status_passed(self, about: str | None = None, older_than_s: float | None = None) -> None:
        self.dashboard.status_passed(about, older_than_s)

    # -- adapters in, model out ------------------------------------------------------------------
    def emit(self, obj: object) -> None:
        """Thread-safe entry for model objects: O(1), never blocks the caller."""
        self._inbox.append(obj)
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
            self.emit(RuntimeNotice("error", f"could not start: {one_line(e)}"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="checkpoints")
    def scan_checkpoints(self) -> None:
        """Read every query's checkpoint (read-only) and post :class:`CheckpointsRead`."""
        self.post_message(read_checkpoints(self.plan))
        if self._plan_pipeline is not None:  # the pipeline tab, from the same checkpoints
            try:
                self.emit(self._plan_pipeline.poll())
            except Exception as e:
                self.emit(RuntimeNotice("warning", f"pipeline view: {one_line(e)}"))

    def on_wake(self, _: Wake) -> None:
        self._wake_pending = False
        while self._inbox:
            obj = self._inbox.popleft()
            try:
                self._ingest(obj)
            except Exception as e:  # a malformed object must not take the dashboard down
                self.log.error(f"could not show {type(obj).__name__}: {e!r}")
                self.set_status(f"could not show {type(obj).__name__}: {e}", "warning")
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
            self.render_now()

    def render_now(self, everything: bool = False) -> None:
        """Draw the model now (the queries view and the active tab, or every view)."""
        self.dashboard.draw_frame(self.model, everything)
        if self._results_due and self.dashboard.drawable and self.active_tab is Tab.RESULTS and time.monotonic() - self._results_at > 1.0:
            self._results_due = False
            self.refresh_results()

    def tick(self) -> None:
        """Once a second (the dashboard's timer): an old warning leaves the status line and
        the queries view redraws (ages and rates move on with the clock)."""
        if not self.paused:  # paused, the line says so for as long as it lasts
            self.status_passed(older_than_s=STATUS_NEWS_S)
            self.dashboard.draw(lambda: self.dashboard.query_one(QueriesView).show(self.model), "the queries view")

    def _ingest(self, obj: object) -> None:
        if ingest(self.model, obj, self):
            self._results_due = True

    def alarm(self, text: str) -> None:
        """An error worth a toast as well as the status line."""
        self.notify(text, severity="error", timeout=10)

    def session_changed(self) -> None:
        self.dashboard.draw(self.dashboard.render_session, "the session line")

    # -- checkpoints -------------------------------------------------------------------------------
    def on_checkpoints_read(self, message: CheckpointsRead) -> None:
        try:
            self.model.set_checkpoints(message.checkpoints, message.errors, message.timelines)
        except Exception as e:
            self.set_status(f"cannot follow landed files: {e}", "warning")
        if not self.paused:
            self.render_now()

    # -- a landed file's journey -------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="journey")
    def read_journey(self, path: str) -> None:
        """Follow one landed file through every layer (read-only) and post :class:`JourneyRead`."""
        self.post_message(read_journey(self.plan, path))

    def on_journey_read(self, message: JourneyRead) -> None:
        if self.dashboard.drawable:
            view = self.dashboard.query_one("#landing-view", LandingView)
            self.dashboard.draw(lambda: view.show_journey(message), "the journey")

    # -- results -------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, exit_on_error=False, group="results")
    def refresh_results(self) -> None:
        self._results_at = time.monotonic()
        name = self.selected or ""
        table = next((q.table for q in self.plan.queries if q.query_name == name), "")
        self.post_message(read_results(self.backend, name, table=table or ""))

    def on_results_read(self, message: ResultsRead) -> None:
        row = self.board.rows.get(message.query)
        view = self.dashboard.query_one("#results-view", ResultsView) if self.dashboard.drawable else None
        if view is not None:
            self.dashboard.draw(lambda: view.show_results(message, row.batch_id if row else None), "the results view")

    # -- navigation ----------------------------------------------------------------------------------
    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == Tab.RESULTS:
            self.refresh_results()
        else:
            self.render_now()

    def highlight_query(self, name: str) -> None:
        """The queries table's cursor moved onto ``name``: it becomes the selected query."""
        if name in self.board.rows:
            self.selected = name

    def open_query(self, name: str) -> None:
        """Show query ``name`` in the detail tab (enter in the queries view calls this directly)."""
        if name in self.board.rows:
            self.selected = name
            self.action_tab(Tab.DETAIL)

    def action_open_selected(self) -> None:
        """enter on the queries table, answered as the app reads it (a priority binding); behind
        a key still in flight (an arrow typed before it) it is the table's own enter, in order."""
        table = self.focused
        if not isinstance(table, QueriesView) or self.keys.in_flight > 1:  # this enter, and another key
            raise SkipAction()
        table.open_highlighted()

    def action_tab(self, tab: Tab) -> None:
        """Show ``tab`` (also given by its id, as a binding's action string gives it)."""
        self.dashboard.show_tab(self.model, Tab.of(tab))
        self.call_after_refresh(self.dashboard.focus_tab)

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        self.paused = not self.paused
        self.dashboard.draw(self.dashboard.render_session, "the session line")
        if self.paused:
            self.set_status("display paused — events are still recorded; p resumes", "warning")
        else:
            self.set_status("display resumed")
            self.render_now(everything=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Typed inside the command line, or over the help screen, ``:``, ``/`` and ``t`` are
        plain keys, not line openers."""
        if action in self.LINE_OPENERS:
            return self.screen is self.dashboard and not isinstance(self.focused, CommandLine)
        if action == "open_selected":  # elsewhere enter is the focused widget's own key
            return self.screen is self.dashboard and isinstance(self.focused, QueriesView)
        # a key typed into the line is a character (``:land 5``), not a binding
        return not (action == "run" and isinstance(self.focused, CommandLine))

    def action_command(self, value: str = "") -> None:
        self.dashboard.open_line("command", value)

    def action_filter(self) -> None:
        self.dashboard.open_line("filter")

    def action_trigger(self) -> None:
        self.action_command("trigger ")

    def action_escape(self) -> None:
        if self.dashboard.needle():
            self.dashboard.set_filter("")
        elif self.active_tab is not Tab.QUERIES:
            self.action_tab(Tab.QUERIES)

    def run_command(self, text: str) -> Command | None:
        """Parse and run one command line; a bad one is shown in the status line."""
        return self.controls.run_command(text)

    # -- controls ----------------------------------------------------------------------------------
    def action_run(self, line: str) -> None:
        """A key bound to a command (see :data:`streamwatch.tui.commands.KEYS`)."""
        self.controls.run_command(line)

    def on_control_done(self, message: ControlDone) -> None:
        self.set_status(message.text, "info" if message.ok else "error")
        if not self.paused:
            self.render_now()

    # -- quit ----------------------------------------------------------------------------------------
    async def action_quit(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        self.set_status("stopping queries…", "warning")
        self.stop_everything()

    @work(thread=True, exit_on_error=False, group="shutdown")
    def stop_everything(self) -> None:
        t0 = time.monotonic()
        try:
            if self._watcher is not None:
                self._watcher.stop()
            self.backend.stop()
        finally:
            done = f"stopped in {time.monotonic() - t0:.1f} s"
            if self.backend.forced_queries:  # said where the user reads it after the screen is gone
                done += "\n" + fmt.grace_ran_out(self.backend.forced_queries, self.backend.stop_grace_s)
            self.call_from_thread(self.exit, None, 0, done)
