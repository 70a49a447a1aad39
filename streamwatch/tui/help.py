"""``?`` help: every key and every ``:`` command."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from streamwatch.tui.commands import COMMANDS

#: (key, what it does) — the app's bindings plus the keys widgets handle themselves
KEYS: tuple[tuple[str, str], ...] = (
    ("1 2 3 4 5 6", "tabs: queries, detail, checkpoint, landing, events, results"),
    ("enter", "open the selected query's detail / open a checkpoint batch"),
    ("↑ ↓ pgup pgdn", "move within a table"),
    ("tab", "move focus"),
    (":", "command line (tab completes)"),
    ("/", "filter the current view (esc clears)"),
    ("esc", "close the command line, clear the filter, back to queries"),
    ("s", "start the selected query"),
    ("x", "stop the selected query"),
    ("r", "restart the selected query"),
    ("S", "start every query of the pipeline"),
    ("X", "stop the pipeline (every query)"),
    ("R", "restart the pipeline"),
    ("l", "land one more input file now"),
    ("t", "change the trigger (opens :trigger)"),
    ("p", "pause / resume the display (events are still recorded)"),
    ("?", "this help"),
    ("q", "stop the queries cleanly, then quit"),
)

DIAGNOSES = """\
[b]Diagnosis column[/b]
  ok        batches keep up with input
  waiting   waiting for data: the trigger fires, no source has new data (idle)
  slow      processing rate below input rate over the recent batches
  stuck     offsets N written, no commit N for longer than 5 × trigger interval
  failed    the query stopped with an exception (detail shows it and the batch)
Mouse: click tabs, rows and footer keys."""


def help_text() -> Text:
    t = Text()
    t.append("streamwatch — keys\n", style="bold")
    for key, what in KEYS:
        t.append(f"  {key:<14}", style="bold")
        t.append(f"{what}\n")
    t.append("\n: commands\n", style="bold")
    for name, (args, what) in COMMANDS.items():
        t.append(f"  {(name + ' ' + args).strip():<24}", style="bold")
        t.append(f"{what}\n")
    t.append("\n")
    t.append_text(Text.from_markup(DIAGNOSES))
    return t


class HelpScreen(ModalScreen[None]):
    """Modal list of keys and commands; esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $accent; padding: 0 1; background: $panel; }
    HelpScreen Static { height: auto; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_text(), id="help-text")
