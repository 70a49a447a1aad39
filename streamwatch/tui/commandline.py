"""One input line for both ``:`` commands and ``/`` filters (its ``mode``)."""

from __future__ import annotations

from collections.abc import Callable

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

from streamwatch.tui.commands import CommandSuggester, complete

#: the most candidates one listing names (the rest are counted)
LISTED = 12


class CommandLine(Input):
    """The ``:``/``/`` line; completes commands and the names ``queries()`` returns. Posts
    :class:`CommandLine.Closed` on esc.

    Tab completes as a shell does (:func:`~streamwatch.tui.commands.complete`): one fitting
    command or query is completed (and a space follows); several are completed to the
    longest prefix they share (``fl`` → ``flights_``). A tab that adds nothing lists the
    candidates (a notification); the tabs after it put each candidate on the line in turn,
    from the first, round and round, until the line is edited."""

    BINDINGS = [Binding("escape", "close", "Close", show=False),
                Binding("tab", "complete", "Complete", show=False, priority=True)]

    class Closed(Message):
        """esc: the line was closed without running anything."""

    def __init__(self, queries: Callable[[], list[str]]) -> None:
        super().__init__(id="cmdline", suggester=CommandSuggester(queries, lambda: self.mode == "command"),
                         select_on_focus=False)
        self.mode = "command"
        self.display = False
        self.cursor_blink = False  # steady cursor (and deterministic screenshots)
        self._queries = queries
        #: what tab cycles through: (the line each candidate is shown on, the candidates,
        #: the index shown; -1 when the list was only listed); None after an edit
        self._cycle: tuple[str, list[str], int] | None = None
        #: the last candidates listed (tests and the notification read them)
        self.listed: list[str] = []

    def open(self, mode: str, value: str = "") -> None:
        self.mode = mode
        self.placeholder = "command (tab completes, esc closes)" if mode == "command" else "filter (esc clears)"
        self.value = value
        self.display = True
        self.app.set_focus(self)  # now, so the next key already goes to the line
        self.cursor_position = len(value)

    def action_complete(self) -> None:
        """Tab: complete the line (see the class doc)."""
        if self.mode != "command":
            return
        cycle = self._cycle
        if cycle is not None and self.value == cycle[0]:
            _, hits, i = cycle
            i = (i + 1) % len(hits)
            self._set(hits[i])
            self._cycle = (self.value, hits, i)
            return
        line, hits = complete(self.value, list(self._queries()))
        self._cycle = None
        if len(hits) == 1:
            self._set(hits[0] + " ")
        elif line != self.value:
            self._set(line)
        elif len(hits) > 1:  # nothing to add: list them; the next tabs cycle through them
            self.listed = hits
            self._cycle = (self.value, hits, -1)
            self._list(hits)

    def _set(self, value: str) -> None:
        self.value = value
        self.cursor_position = len(value)

    def _list(self, hits: list[str]) -> None:
        words = [h.rsplit(" ", 1)[-1] for h in hits]
        more = f" … and {len(words) - LISTED} more" if len(words) > LISTED else ""
        self.app.notify("  ".join(words[:LISTED]) + more + "  (tab cycles)", title=f"{len(hits)} completions",
                        timeout=6, markup=False)

    def action_close(self) -> None:
        self.post_message(self.Closed())
