"""Runs the parsed ``:`` commands (and the keys bound to them): navigation on the app, the
controls (start/stop/restart a query or the pipeline, land data, change the trigger) on the
app's :class:`~streamwatch.backends.base.Backend` in thread workers. A control the backend
does not support (its capability flag) is refused in the status line, never attempted.

:class:`Controls` is the :class:`~streamwatch.tui.command_args.Runner` of the typed commands:
each parsed command calls the method of its kind (no dispatch on command names)."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from streamwatch.backends.base import Backend, Control
from streamwatch.errors import one_line
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.tui.command_args import (
    Advise,
    Command,
    CommandError,
    Filter,
    Help,
    Land,
    OpenState,
    Pause,
    QueryControl,
    Quit,
    SetTrigger,
    ShowTab,
)
from streamwatch.tui.commands import parse
from streamwatch.tui.messages import ControlDone
from streamwatch.tui.tabs import Tab

if TYPE_CHECKING:
    from streamwatch.tui.app import StreamwatchApp

#: the backend call of each control on one query (backend, query name)
_ONE_QUERY: dict[Control, Callable[[Backend, str], None]] = {
    Control.START_QUERY: lambda b, q: b.start_query(q),
    Control.STOP_QUERY: lambda b, q: b.stop_query(q),
    Control.RESTART_QUERY: lambda b, q: b.restart_query(q),
}
#: the backend call of each control on the whole pipeline
_PIPELINE: dict[Control, Callable[[Backend], None]] = {
    Control.START_PIPELINE: lambda b: b.start_pipeline(),
    Control.STOP_PIPELINE: lambda b: b.stop_pipeline(),
    Control.RESTART_PIPELINE: lambda b: b.restart_pipeline(),
}


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
        cmd.run(self)
        return cmd

    # -- navigation and the display ----------------------------------------------------------------
    def show_tab(self, cmd: ShowTab) -> None:
        """Show the tab (the query named becomes the selected one); the results tab re-reads."""
        app = self.app
        if cmd.query is not None:
            app.selected = cmd.query
        app.action_tab(cmd.tab)
        if cmd.tab is Tab.RESULTS:
            app.refresh_results()

    def pause(self, cmd: Pause) -> None:
        if self.app.paused != cmd.paused:
            self.app.action_pause()

    def filter(self, cmd: Filter) -> None:
        self.app.dashboard.set_filter(cmd.text)

    def help(self, cmd: Help) -> None:
        self.app.action_help()

    def quit(self, cmd: Quit) -> None:
        self.app.call_later(self.app.action_quit)

    def open_state(self, cmd: OpenState) -> None:
        """Open the selected query's state at ``cmd.batch`` (None: the batch highlighted in
        the checkpoint tab, else the last committed one) over the dashboard."""
        from streamwatch.tui.views.state import StateScreen

        app = self.app
        name = app.selected
        try:
            checkpoint = app.plan.query(name or "").checkpoint
        except KeyError:
            app.set_status("state: no query selected", "warning")
            return
        batch = cmd.batch
        if batch is None and app.active_tab is Tab.CHECKPOINT:
            batch = app.dashboard.highlighted_batch()
        read: Checkpoint | None = app.model.checkpoints.get(name or "")
        committed = read.commit_batch_ids if read is not None else ()
        if batch is not None and committed and batch not in committed:
            app.set_status(f"state: batch {batch} of {name} is not committed (last committed: {committed[-1]})", "warning")
            return
        app.push_screen(StateScreen(checkpoint, name or "", batch))

    def advise(self, cmd: Advise) -> None:
        """Advice for the query named (the selected one without a name), measured in a worker
        and shown in the detail tab (:mod:`streamwatch.tui.views.advice`)."""
        from streamwatch.tui.views.advice import AdviceSection, advice_request

        app = self.app
        name = cmd.query or app.selected
        if name is None:
            app.set_status("advise: no query selected", "warning")
            return
        try:
            request = advice_request(app.plan, app.model, name)
        except KeyError:
            app.set_status(f"advise: no checkpoint known for {name}", "warning")
            return
        app.selected = request.query
        app.action_tab(Tab.DETAIL)
        app.dashboard.query_one(AdviceSection).load(request)

    # -- controls on the backend -------------------------------------------------------------------
    def query_control(self, cmd: QueryControl) -> None:
        """Start, stop or restart a query (the selected one unless named) or the pipeline."""
        backend = self.app.backend
        call: Callable[[], None]
        if cmd.every:
            what, call = f"{cmd.name} all", partial(_PIPELINE[cmd.control], backend)
        else:
            target = cmd.query or self.app.selected
            if target is None:
                self.app.set_status(f"{cmd.name}: no query selected", "warning")
                return
            what, call = f"{cmd.name} {target}", partial(_ONE_QUERY[cmd.control], backend, target)

        def work() -> str:
            call()
            return f"{what} done"
        self._launch(cmd, cmd.control, what, work)

    def land(self, cmd: Land) -> None:
        backend = self.app.backend

        def work() -> str:
            result = backend.land(cmd.count, cmd.source)
            return f"landed {len(result) if result is not None else cmd.count} file(s)"
        self._launch(cmd, cmd.control, cmd.name, work)

    def set_trigger(self, cmd: SetTrigger) -> None:
        """Restart the query named (every query without one) with the command's
        :class:`~streamwatch.analysis.triggers.Trigger`, the object itself."""
        backend, trigger = self.app.backend, cmd.trigger
        target = "all" if cmd.every else cmd.query
        what = f"{cmd.name} {target}" if target else cmd.name

        def work() -> str:
            backend.set_trigger(trigger, cmd.query)
            return f"trigger now {trigger.spec} ({cmd.query or 'all'})"
        self._launch(cmd, cmd.control, what, work)

    def _launch(self, cmd: Command, control: Control, what: str, work: Callable[[], str]) -> None:
        """Run ``work`` on the backend in a worker, unless the backend lacks ``control``."""
        app, backend = self.app, self.app.backend
        if not backend.supports(control):
            app.set_status(backend.why_not(control), "warning")
            return
        app.set_status(f"{what}…")
        app.run_worker(lambda: self._work(cmd.name, what, work), thread=True, exit_on_error=False, group="control")

    def _work(self, action: str, what: str, work: Callable[[], str]) -> None:
        t0 = time.monotonic()
        try:
            text = work()
            self.app.post_message(ControlDone(action, True, f"{text} in {time.monotonic() - t0:.1f} s"))
        except Exception as e:  # shown, never a crash
            self.app.post_message(ControlDone(action, False, f"{what} failed: {one_line(e)}"))
