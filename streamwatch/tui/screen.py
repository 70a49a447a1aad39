"""The dashboard screen: the layout (session line, the six tabs, command line, status line)
and the timers that redraw it.

The timers belong to the screen, not the app: Textual stops a screen's timers when the screen
starts closing, before its widgets are removed, so no tick can draw into a half-removed
dashboard. :attr:`DashboardScreen.drawable` is False from that moment on; every draw checks
it, and a draw that fails anyway is shown in the status line and logged, never raised.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from rich.text import Text
from textual import messages
from textual.app import ComposeResult
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Static, TabbedContent, TabPane

from streamwatch.tui.controls import CommandLine
from streamwatch.tui.views.checkpoint import CheckpointView
from streamwatch.tui.views.detail import DetailView
from streamwatch.tui.views.table import SyncTable

if TYPE_CHECKING:
    from streamwatch.tui.app import StreamwatchApp

QUERY_COLUMNS = ("query", "status", "diagnosis", "batch", "input rows/s", "processed rows/s", "batch ms",
                 "backlog", "watermark", "trigger", "mode", "rows")
LANDING_COLUMNS = ("landed", "source", "file", "size", "journey")
EVENT_COLUMNS = ("time", "kind", "query", "what")
STATUS_STYLE = {"error": "bold red", "warning": "yellow"}


class DashboardScreen(Screen[None]):
    """The app's base screen (``App.get_default_screen``); ``owner`` is the app whose model it
    draws."""

    def __init__(self, owner: StreamwatchApp) -> None:
        super().__init__(id="dashboard")
        self.owner = owner
        self.closing = False
        self.render_errors = 0
        self._frame_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.owner._session_text(), id="session")
        with TabbedContent(initial="queries", id="tabs"):
            with TabPane("1 Queries", id="queries"):
                yield SyncTable(QUERY_COLUMNS, id="query-table", zebra_stripes=True)
            with TabPane("2 Detail", id="detail"):
                yield DetailView(id="detail-view")
            with TabPane("3 Checkpoint", id="checkpoint"):
                yield CheckpointView(id="checkpoint-view")
            with TabPane("4 Landing", id="landing"):
                yield Static("backlog: -", id="backlog")
                yield SyncTable(LANDING_COLUMNS, id="landing-table")
            with TabPane("5 Events", id="events"):
                yield SyncTable(EVENT_COLUMNS, id="event-table")
            with TabPane("6 Results", id="results"):
                yield Static("results: select a query, then :results", id="results-head")
                yield DataTable(id="results-table", cursor_type="row")
        yield CommandLine(self.owner)
        yield Static("starting…", id="status")
        yield Footer()

    def on_mount(self) -> None:
        app = self.owner
        self.draw(app.render_queries)
        self.query_one("#query-table").focus()
        if app.checkpoint_refresh_s > 0:
            self.set_interval(app.checkpoint_refresh_s, app.scan_checkpoints)
        self.set_interval(1.0, app._tick)
        app.dashboard_mounted()

    def on_prune(self, _: messages.Prune) -> None:
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
    def draw(self, fn: Callable[[], None]) -> bool:
        """Run one drawing function; a failure is shown in the status line and logged, never
        raised. Returns False when nothing was drawn (torn down, or it failed)."""
        if not self.drawable:
            return False
        try:
            fn()
            return True
        except Exception as e:  # a display bug is reported, never a crash
            self.render_errors += 1
            name = getattr(fn, "__name__", "render")
            self.log.error(f"display error in {name}: {e!r}")
            self.set_status(f"display error in {name}: {e}", "error")
            return False

    def set_status(self, text: str, level: str = "info") -> None:
        """Show one line in the status bar (nothing once torn down; never raises)."""
        if not self.drawable:
            return
        try:
            self.query_one("#status", Static).update(Text(text, style=STATUS_STYLE.get(level, "")))
        except Exception as e:
            self.log.error(f"cannot show status {text!r}: {e!r}")
