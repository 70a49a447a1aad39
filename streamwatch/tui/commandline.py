"""One input line for both ``:`` commands and ``/`` filters (its ``mode``)."""

from __future__ import annotations

from typing import Callable

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from streamwatch.tui.commands import CommandSuggester


class CommandLine(Input):
    """The ``:``/``/`` line; completes commands and the names ``queries()`` returns. Posts
    :class:`CommandLine.Closed` on esc."""

    BINDINGS = [Binding("escape", "close", "Close", show=False),
                Binding("tab", "complete", "Complete", show=False, priority=True)]

    class Closed(Message):
        """esc: the line was closed without running anything."""

    def __init__(self, queries: Callable[[], list[str]]) -> None:
        super().__init__(id="cmdline", suggester=CommandSuggester(queries), select_on_focus=False)
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
        self.post_message(self.Closed())
