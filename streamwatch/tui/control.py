"""Runs the parsed ``:`` commands (and the keys bound to them): navigation on the app, the
controls (start/stop/restart a query or the pipeline, land data, change the trigger) on the
app's :class:`~streamwatch.backends.base.Backend` in thread workers. A control the backend
does not support (its capability flag) is refused in the status line, never attempted."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from streamwatch.backends.base import Control
from streamwatch.errors import one_line
from streamwatch.tui.commands import COMMANDS, TABS, Command, CommandError, parse
from streamwatch.tui.messages import ControlDone

if TYPE_CHECKING:
    from streamwatch.tui.app import StreamwatchApp


class Controls:
    """Runs commands and controls for ``app``; a control's outcome comes back as
    :class:`~streamwatch.tui.messages.ControlDone`."""

    def __init__(self, app: StreamwatchApp) -> None:
        self.app = app

    def run_command(self, text: str) -> Command | None:
        """Parse and run one command line; a bad one is shown in the status line."""
        app = self.app
        try:
            cmd = parse(text, list(app.board.rows), [s for s, _ in app.plan.landing])
        except CommandError as e:
            app.set_status(str(e), "error")
            return None
        if cmd.target and cmd.target != "all" and cmd.name in ("detail", "checkpoint", "results"):
            app.selected = cmd.target
        if cmd.name in TABS:
            app.action_tab(cmd.name)
            if cmd.name == "results":
                app.refresh_results()
        elif COMMANDS[cmd.name].controls:
            self.control(cmd)
        elif cmd.name in ("pause", "resume"):
            if app.paused == (cmd.name == "resume"):
                app.action_pause()
        elif cmd.name == "filter":
            app.dashboard.set_filter(cmd.text)
        elif cmd.name == "help":
            app.action_help()
        elif cmd.name == "state":
            self.open_state(cmd.batch)
        elif cmd.name == "quit":
            app.call_later(app.action_quit)
        return cmd

    def open_state(self, batch: int | None) -> None:
        """Open the selected query's state at ``batch`` (None: the batch highlighted in the
        checkpoint tab, else the last committed one) over the dashboard."""
        from streamwatch.tui.views.state import StateScreen
        from streamwatch.tui.views.table import SyncTable

        app = self.app
        name = app.selected
        try:
            checkpoint = app.plan.query(name or "").checkpoint
        except KeyError:
            app.set_status("state: no query selected", "warning")
            return
        if batch is None and app.active_tab == "checkpoint":
            key = app.dashboard.query_one("#cp-batches", SyncTable).cursor_key()
            batch = int(key) if key is not None and key.isdigit() else None
        committed = getattr(app.model.checkpoints.get(name or ""), "commit_batch_ids", None)
        if batch is not None and committed and batch not in committed:
            app.set_status(f"state: batch {batch} of {name} is not committed (last committed: {committed[-1]})", "warning")
            return
        app.push_screen(StateScreen(checkpoint, name or "", batch))

    def control(self, cmd: Command) -> None:
        """Run a control command on the backend in a worker (unless unsupported)."""
        app, backend = self.app, self.app.backend
        spec = COMMANDS[cmd.name]
        target = cmd.target
        if spec.takes_query:
            target = target or app.selected
            if target is None:
                app.set_status(f"{cmd.name}: no query selected", "warning")
                return
        control = spec.controls[-1] if target == "all" else spec.controls[0]
        if not backend.supports(control):
            app.set_status(backend.why_not(control), "warning")
            return
        what = f"{cmd.name} {target}" if target else cmd.name
        work: Callable[[], str]
        if cmd.name == "land":
            def work() -> str:
                result = backend.land(cmd.count, cmd.source)
                return f"landed {len(result) if result is not None else cmd.count} file(s)"
        elif cmd.name == "trigger":
            trigger = cmd.trigger or ""

            def work() -> str:
                backend.set_trigger(trigger, None if target in (None, "all") else target)
                return f"trigger now {trigger} ({target or 'all'})"
        else:
            call = {
                Control.START_QUERY: backend.start_query, Control.STOP_QUERY: backend.stop_query,
                Control.RESTART_QUERY: backend.restart_query,
            }.get(control)
            pipeline = {
                Control.START_PIPELINE: backend.start_pipeline, Control.STOP_PIPELINE: backend.stop_pipeline,
                Control.RESTART_PIPELINE: backend.restart_pipeline,
            }.get(control)

            def work() -> str:
                if pipeline is not None:
                    pipeline()
                elif call is not None and target is not None:
                    call(target)
                return f"{what} done"
        app.set_status(f"{what}…")
        app.run_worker(lambda: self._work(cmd.name, what, work), thread=True, exit_on_error=False, group="control")

    def _work(self, action: str, what: str, work: Callable[[], str]) -> None:
        t0 = time.monotonic()
        try:
            text = work()
            self.app.post_message(ControlDone(action, True, f"{text} in {time.monotonic() - t0:.1f} s"))
        except Exception as e:  # shown, never a crash
            self.app.post_message(ControlDone(action, False, f"{what} failed: {one_line(e)}"))
