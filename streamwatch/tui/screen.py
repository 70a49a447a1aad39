"""The dashboard screen: the layout (session line, the tabs of :class:`~streamwatch.tui.tabs.Tab`,
command line, status line)
and the timers that redraw it.

The timers belong to the screen, not the app: Textual stops a screen's timers when the screen
starts closing, before its widgets are removed, so no tick can draw into a half-removed
dashboard. :attr:`DashboardScreen.drawable` is False from that moment on; every draw checks
it, and a draw that fails anyway is shown in the status line and logged, never raised.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.text import Text
from textual import messages
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import DataTable, Header, Input, Static, TabbedContent, TabPane, Tabs

from streamwatch.analysis import fmt
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.tui.commandline import CommandLine
from streamwatch.tui.footer import SteadyFooter
from streamwatch.tui.tabs import Tab
from streamwatch.tui.views.base import FilteredView
from streamwatch.tui.views.checkpoint import CheckpointView
from streamwatch.tui.views.detail import DetailView
from streamwatch.tui.views.feeds import EventsView, LandingView, ResultsView
from streamwatch.tui.views.pipeline import PipelineView
from streamwatch.tui.views.queries import QueriesView

if TYPE_CHECKING:
    from streamwatch.tui.app import StreamwatchApp

STATUS_STYLE = {"error": "bold red", "warning": "yellow"}
View = QueriesView | DetailView | CheckpointView | LandingView | EventsView | PipelineView
#: the view class drawing each tab from the model (one instance each; the results tab is drawn
#: from read results)
VIEWS: dict[Tab, type[View]] = {
    Tab.QUERIES: QueriesView, Tab.DETAIL: DetailView, Tab.CHECKPOINT: CheckpointView, Tab.LANDING: LandingView,
    Tab.EVENTS: EventsView, Tab.PIPELINE: PipelineView}
#: keys that move within a tab: with the focus on the tab row (tab) or nowhere, they reach the
#: screen, which gives them to the tab's own widget (:meth:`DashboardScreen.action_in_tab`):
#: a table moves its cursor, anything else scrolls
IN_TAB_KEYS: dict[str, Callable[[Widget], None]] = {
    "up": lambda w: w.action_cursor_up() if isinstance(w, DataTable) else w.action_scroll_up(),
    "down": lambda w: w.action_cursor_down() if isinstance(w, DataTable) else w.action_scroll_down(),
    "pageup": lambda w: w.action_page_up(), "pagedown": lambda w: w.action_page_down(),
    "home": lambda w: w.action_scroll_home(), "end": lambda w: w.action_scroll_end()}


class DashboardTabs(TabbedContent):
    """The tabs. A pane whose widget took the focus becomes the active tab (TabbedContent's
    rule) — unless that news is stale: escape closing the ``/`` line gives the queries table
    the focus, and an enter answered at once (the app's priority binding) switches to the
    detail tab before the table's pane has said it was focused. News of a pane that is not
    active, while the focus is where it was at the last switch (or nowhere), or is not inside
    that pane (the tab switched to took it: the detail tab takes the focus), is ignored."""

    _focused_at_switch: Widget | None = None

    def watch_active(self) -> None:
        self._focused_at_switch = self.app.focused

    def on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        focused = self.app.focused
        if event.tab_pane.id != self.active and (focused is None or focused is self._focused_at_switch
                                                 or event.tab_pane not in focused.ancestors):
            event.stop()
            event.prevent_default()  # TabbedContent's own handler would activate the pane


class DashboardScreen(Screen[None]):
    """The app's base screen (``App.get_default_screen``); ``owner`` is the app whose model it
    draws."""

    BINDINGS = [Binding(key, f"in_tab({key!r})", show=False) for key in IN_TAB_KEYS]

    def __init__(self, owner: StreamwatchApp) -> None:
        super().__init__(id="dashboard")
        self.owner = owner
        self.closing = False
        self.render_errors = 0
        self._frame_timer: Timer | None = None
        #: what the status line shows: (level, the query it is about, since when; monotonic s)
        self._status: tuple[str, str | None, float] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.session_text(), id="session")
        with DashboardTabs(initial=Tab.QUERIES.value, id="tabs"):
            for tab, widget in self._tab_widgets().items():
                with TabPane(tab.heading, id=tab.value):
                    yield widget
        yield CommandLine(lambda: list(self.owner.model.board.rows))
        yield Static("starting…", id="status")
        yield SteadyFooter()

    def _tab_widgets(self) -> dict[Tab, Widget]:
        """Each tab's widget, in tab-row order."""
        owner = self.owner
        return {
            Tab.QUERIES: QueriesView(opened=owner.open_query, highlighted=owner.highlight_query,
                                     id=Tab.QUERIES.focus, zebra_stripes=True),
            Tab.DETAIL: DetailView(id=Tab.DETAIL.focus),
            Tab.CHECKPOINT: CheckpointView(id="checkpoint-view"),
            Tab.LANDING: LandingView(opened=owner.read_journey, id="landing-view"),
            Tab.EVENTS: EventsView(id=Tab.EVENTS.focus),
            Tab.RESULTS: ResultsView(id="results-view"),
            Tab.PIPELINE: PipelineView(id=Tab.PIPELINE.focus),
        }

    def on_mount(self) -> None:
        app = self.owner
        self.draw_frame(app.model, everything=False)
        self.query_one(f"#{Tab.QUERIES.focus}").focus()
        if app.checkpoint_refresh_s > 0:
            self.set_interval(app.checkpoint_refresh_s, app.scan_checkpoints)
        self.set_interval(1.0, app.tick)
        app.dashboard_mounted()

    async def on_prune(self, _: messages.Prune) -> None:
        """Teardown begins (Textual then stops this screen's timers and removes its widgets):
        from now on nothing draws."""
        self.closing = True

    @property
    def drawable(self) -> bool:
        """True while the widgets are there to draw into (mounted, not closing)."""
        return self.is_mounted and not self.closing

    # -- frames ------------------------------------------------------------------------------
    def schedule_frame(self, wait_s: float, frame: Callable[[], None]) -> None:
        """Run ``frame`` in ``wait_s`` seconds (once, however often asked meanwhile)."""
        if self._frame_timer is None and self.drawable:
            self._frame_timer = self.set_timer(wait_s, lambda: self._run_frame(frame))

    @property
    def frame_pending(self) -> bool:
        return self._frame_timer is not None

    def _run_frame(self, frame: Callable[[], None]) -> None:
        self._frame_timer = None
        frame()

    # -- drawing ------------------------------------------------------------------------------
    def draw(self, fn: Callable[[], object], what: str) -> bool:
        """Run one drawing function; a failure is shown in the status line and logged, never
        raised. Returns False when nothing was drawn (torn down, or it failed)."""
        if not self.drawable:
            return False
        try:
            fn()
            return True
        except Exception as e:  # a display bug is reported, never a crash
            self.render_errors += 1
            self.log.error(f"display error in {what}: {e!r}")
            self.set_status(f"display error in {what}: {e}", "error")
            return False

    def session_text(self) -> str:
        """The session line (markup): paused, Spark master, executors, UI address."""
        pause = "[b reverse] PAUSED [/] " if self.owner.paused else ""
        info = self.owner.model.session_info
        return pause + escape(fmt.session_line(info, replay=self.owner.plan.trigger == "replay",
                                              watching=self.owner.plan.trigger == "checkpoint"))

    def render_session(self) -> None:
        self.query_one("#session", Static).update(self.session_text())

    def set_status(self, text: str, level: str = "info", about: str | None = None) -> None:
        """Show one line in the status bar (nothing once torn down; never raises); ``about``
        names the query a warning or error is about (see :meth:`status_passed`)."""
        self._status = (level, about, time.monotonic()) if text else None
        if not self.drawable:
            return
        try:
            self.query_one("#status", Static).update(Text(text, style=STATUS_STYLE.get(level, "")))
        except Exception as e:
            self.log.error(f"cannot show status {text!r}: {e!r}")

    def status_passed(self, about: str | None = None, older_than_s: float | None = None) -> None:
        """Clear a warning or error the status line still shows once what it said has passed:
        ``about`` — the query it named made progress again (any subject when None);
        ``older_than_s`` — only when it has been shown that long. An old error never stays
        on screen as if it were news."""
        shown = self._status
        if shown is None or shown[0] not in ("warning", "error"):
            return
        level, subject, since = shown
        if about is not None and subject is not None and subject != about:
            return
        if older_than_s is not None and time.monotonic() - since < older_than_s:
            return
        self.set_status("", "info")

    # -- the views ------------------------------------------------------------------------------
    @property
    def active_tab(self) -> Tab:
        return Tab.of(self.query_one("#tabs", TabbedContent).active or Tab.QUERIES)

    def view(self, tab: Tab) -> View | None:
        """The view drawing ``tab`` from the model (results are drawn from read results)."""
        kind = VIEWS.get(tab)
        return self.query_one(kind) if kind is not None else None

    def highlighted_batch(self) -> int | None:
        """The batch id under the checkpoint tab's cursor (None: no batch row highlighted)."""
        return self.query_one(CheckpointView).highlighted_batch()

    def filtered_view(self, tab: Tab) -> FilteredView | None:
        """The view of ``tab`` that a ``/`` filter applies to (its ``needle``)."""
        v = self.view(tab)
        return v if isinstance(v, FilteredView) else None

    def draw_frame(self, model: DashboardModel, everything: bool = False) -> None:
        """Show ``model`` in the queries view (the overview, always) and the active tab's view
        (every view with ``everything``); hidden views draw when their tab is activated."""
        if not self.drawable:
            return
        tabs = tuple(VIEWS) if everything else (Tab.QUERIES, self.active_tab)
        for tab in dict.fromkeys(tabs):
            self.draw_tab(model, tab)

    def show_tab(self, model: DashboardModel, tab: Tab) -> None:
        """Switch to ``tab``, drawn from ``model`` now: the paint that brings it on screen shows
        the query just opened, not what the tab showed when it was last on screen (the redraw
        on ``TabActivated`` comes through two message queues, a paint or more later). That
        paint builds no chart of the detail tab (they follow, one a paint)."""
        if tab != self.active_tab and tab is Tab.DETAIL:
            self.query_one(DetailView).defer_charts()
        # drawn even when it is the tab on screen: ``:detail other`` changes what it shows, and
        # a replay that has ended sends no event to draw the next frame
        self.draw_tab(model, tab)
        self.query_one("#tabs", TabbedContent).active = tab.value

    def draw_tab(self, model: DashboardModel, tab: Tab) -> None:
        """Draw ``tab``'s view from ``model`` (none for the results tab), shown or not."""
        v = self.view(tab)
        if v is not None:
            self.draw(lambda: v.show(model), f"the {tab} view")

    # -- the command line and the / filter ------------------------------------------------------
    def needle(self, tab: Tab | None = None) -> str:
        v = self.filtered_view(tab or self.active_tab)
        return v.needle if v is not None else ""

    def set_filter(self, text: str, tab: Tab | None = None) -> None:
        """Filter the (active) tab's view by ``text`` (it redraws itself)."""
        v = self.filtered_view(tab or self.active_tab)
        if v is not None:
            def apply() -> None:
                v.needle = text
            self.draw(apply, "the filter")

    def open_line(self, mode: str, value: str = "") -> None:
        """Open the ``:``/``/`` line in the status line's place (the status line comes back
        when it closes): the tabs above keep their size, so opening it repaints one line, not
        the queries table (a full repaint of 100 queries' table under ``/``)."""
        line = self.query_one("#cmdline", CommandLine)
        line.open(mode, self.needle() if mode == "filter" else value)
        self.query_one("#status", Static).display = False

    def close_line(self, cancel: bool = False) -> None:
        line = self.query_one("#cmdline", CommandLine)
        if cancel and line.mode == "filter":
            self.set_filter("")
        line.display = False
        self.query_one("#status", Static).display = True
        line.value = ""
        self.call_after_refresh(self.focus_tab)

    def focus_tab(self) -> None:
        if self.drawable:
            self.query_one(f"#{self.active_tab.focus}").focus()

    def action_in_tab(self, key: str) -> None:
        """A moving key (↑ ↓ pgup pgdn home end) that no focused widget took — the focus is on
        the tab row, or nowhere: the active tab's own widget takes the focus and the key."""
        if not self.drawable or not (self.focused is None or isinstance(self.focused, Tabs)):
            return
        widget = self.query_one(f"#{self.active_tab.focus}")
        widget.focus()
        IN_TAB_KEYS[key](widget)

    def on_command_line_closed(self, _: CommandLine.Closed) -> None:
        self.close_line(cancel=True)

    def on_input_changed(self, event: Input.Changed) -> None:
        """The ``/`` line's text filters as it is typed — once for keys typed together: a
        change the line has already moved past (its value is newer) is skipped, the change
        carrying the current value follows."""
        line = self.query_one("#cmdline", CommandLine)
        if event.input is line and line.mode == "filter" and line.display and event.value == line.value:
            self.set_filter(event.value.strip())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        line = self.query_one("#cmdline", CommandLine)
        if event.input is not line:
            return
        mode, value = line.mode, event.value.strip()
        self.close_line()
        if mode == "filter":
            self.set_filter(value)
        elif value:
            self.status_passed()  # a new command: what the line said before is no longer news
            self.owner.run_command(value)
