"""Keys, the ``:`` command line, the ``/`` filter and the controls (start/stop/restart a query
or the pipeline, land data, change the trigger, pause), mixed into the app."""

from __future__ import annotations

import time
from typing import Any

from textual import work
from textual.binding import Binding
from textual.widgets import Input

from streamwatch.tui import fmt
from streamwatch.tui.commands import Command, CommandError, CommandSuggester, parse
from streamwatch.tui.help import HelpScreen
from streamwatch.tui.messages import ControlDone

#: (action, target) → the optional backend method and whether it takes the query name
CONTROL_METHODS = {
    ("start", False): "start_query", ("stop", False): "stop_query", ("restart", False): "restart_query",
    ("start", True): "start_pipeline", ("stop", True): "stop_pipeline", ("restart", True): "restart_pipeline",
}


class CommandLine(Input):
    """One input line for both ``:`` commands and ``/`` filters (``mode``)."""

    BINDINGS = [Binding("escape", "close", "Close", show=False),
                Binding("tab", "complete", "Complete", show=False, priority=True)]

    def __init__(self, app: Any) -> None:
        super().__init__(id="cmdline", suggester=CommandSuggester(lambda: list(app.board.rows)),
                         select_on_focus=False)
        self.mode = "command"
        self.display = False
        self.cursor_blink = False  # steady cursor (and deterministic screenshots)

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        self.placeholder = "command (tab completes, esc closes)" if mode == "command" else "filter (esc clears)"
        self.value = value
        self.display = True
        self.app.set_focus(self)  # now, so the next key already goes to the line
        self.cursor_position = len(value)

    def action_complete(self) -> None:
        """Accept the greyed-out completion (tab)."""
        if self._suggestion and self._suggestion != self.value:
            self.value = self._suggestion + " "
            self.cursor_position = len(self.value)

    def action_close(self) -> None:
        self.app.close_command_line(cancel=True)  # type: ignore[attr-defined]


class ControlsMixin:
    """Actions bound in :class:`~streamwatch.tui.app.StreamwatchApp` (needs its attributes)."""

    # -- help, pause, tabs -------------------------------------------------------------------
    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_pause(self) -> None:
        self.paused = not self.paused
        self._guard(self.render_session)
        if self.paused:
            self._set_status("display paused — events are still recorded; p resumes", "warning")
        else:
            self._set_status("display resumed")
            self.render_all()

    # -- command line and filter -------------------------------------------------------------
    #: actions that open the command line. Their keys are priority bindings, run the moment
    #: the key is read: keys typed right after ``:`` then already reach the line (a normal
    #: binding runs only after the focused table has handled the key, so fast typing would
    #: trigger the table's and the app's bindings instead).
    LINE_OPENERS = ("command", "filter", "trigger")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Typed inside the command line, or over the help screen, ``:``, ``/`` and ``t`` are
        plain keys, not line openers."""
        if action in self.LINE_OPENERS:
            return self.screen is self._main and not isinstance(self.focused, CommandLine)
        return True

    def action_command(self, value: str = "") -> None:
        self._main.query_one("#cmdline", CommandLine).open("command", value)

    def action_filter(self) -> None:
        self._main.query_one("#cmdline", CommandLine).open("filter", self.filters.get(self.active_tab, ""))

    def action_trigger(self) -> None:
        self.action_command("trigger ")

    def action_escape(self) -> None:
        tab = self.active_tab
        if self.filters.get(tab):
            self.filters[tab] = ""
            self.render_all()
        elif tab != "queries":
            self.action_tab("queries")

    def close_command_line(self, cancel: bool = False) -> None:
        line = self._main.query_one("#cmdline", CommandLine)
        if cancel and line.mode == "filter":
            self.filters[self.active_tab] = ""
            self.render_all()
        line.display = False
        line.value = ""
        self.call_after_refresh(self._focus_tab)

    def _focus_tab(self) -> None:
        target = {"queries": "#query-table", "checkpoint": "#cp-batches", "landing": "#landing-table",
                  "events": "#event-table", "results": "#results-table"}.get(self.active_tab)
        if target:
            try:
                self._main.query_one(target).focus()
            except Exception:
                pass

    def on_input_changed(self, event: Input.Changed) -> None:
        line = self._main.query_one("#cmdline", CommandLine)
        if event.input is line and line.mode == "filter" and line.display:
            self.filters[self.active_tab] = event.value.strip()
            self.render_all()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        line = self._main.query_one("#cmdline", CommandLine)
        if event.input is not line:
            return
        mode, value = line.mode, event.value.strip()
        self.close_command_line()
        if mode == "filter":
            self.filters[self.active_tab] = value
            self.render_all()
            return
        if value:
            self.run_command(value)

    def run_command(self, text: str) -> Command | None:
        """Parse and run one command line; a bad one is shown in the status line."""
        try:
            cmd = parse(text, list(self.board.rows), [s for s, _ in self.plan.landing])
        except CommandError as e:
            self._set_status(str(e), "error")
            return None
        if cmd.target and cmd.target != "all" and cmd.name in ("detail", "checkpoint", "results"):
            self.selected = cmd.target
        if cmd.name in ("queries", "detail", "checkpoint", "landing", "events", "results"):
            self.action_tab(cmd.name)
            if cmd.name == "results":
                self.refresh_results()
        elif cmd.name in ("start", "stop", "restart"):
            self.action_control(cmd.name, cmd.target)
        elif cmd.name == "land":
            self.run_control("land", None, count=cmd.count, source=cmd.source)
        elif cmd.name == "trigger":
            self.run_control("trigger", cmd.target, trigger=cmd.trigger)
        elif cmd.name == "pause":
            if not self.paused:
                self.action_pause()
        elif cmd.name == "resume":
            if self.paused:
                self.action_pause()
        elif cmd.name == "filter":
            self.filters[self.active_tab] = cmd.text
            self.render_all()
        elif cmd.name == "help":
            self.action_help()
        elif cmd.name == "quit":
            self.call_later(self.action_quit)
        return cmd

    # -- controls --------------------------------------------------------------------------
    def action_control(self, action: str, target: str | None = None) -> None:
        target = target or self.selected
        if target is None:
            self._set_status(f"{action}: no query selected", "warning")
            return
        self.run_control(action, target)

    def action_land(self) -> None:
        self.run_control("land", None, count=1)

    def run_control(self, action: str, target: str | None, **kw: Any) -> None:
        """Run a control on the backend in a worker; unsupported ones are reported."""
        if action == "land":
            method = "land"
        elif action == "trigger":
            method = "set_trigger"
        else:
            method = CONTROL_METHODS[(action, target == "all")]
        fn = getattr(self.backend, method, None)
        if fn is None:
            self._set_status(f"{action}: not supported by this backend", "warning")
            return
        what = f"{action} {target}" if target else action
        self._set_status(f"{what}…")
        self._control_worker(action, what, fn, target, kw)

    @work(thread=True, exit_on_error=False, group="control")
    def _control_worker(self, action: str, what: str, fn: Any, target: str | None, kw: dict) -> None:
        t0 = time.monotonic()
        try:
            if action == "land":
                result = fn(kw.get("count", 1), kw.get("source"))
                text = f"landed {len(result) if result is not None else kw.get('count', 1)} file(s)"
            elif action == "trigger":
                fn(kw["trigger"], None if target in (None, "all") else target)
                text = f"trigger now {kw['trigger']} ({target or 'all'})"
            elif target == "all":
                fn()
                text = f"{what} done"
            else:
                fn(target)
                text = f"{what} done"
            self.post_message(ControlDone(action, True, f"{text} in {time.monotonic() - t0:.1f} s"))
        except Exception as e:  # shown, never a crash
            self.post_message(ControlDone(action, False, f"{what} failed: {fmt.first_line(str(e)) or type(e).__name__}"))

    def on_control_done(self, message: ControlDone) -> None:
        self._set_status(message.text, "info" if message.ok else "error")
        self._dirty.add("queries")
        self._render_dirty()

    # -- quit -------------------------------------------------------------------------------
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
