"""``?`` help: every key and every ``:`` command, from the command registry."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from streamwatch.tui.commands import KEYS, REGISTRY

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
    for k in KEYS:
        t.append(f"  {k.keys:<14}", style="bold")
        t.append(f"{k.help}\n")
    t.append("\n: commands\n", style="bold")
    for c in REGISTRY:
        t.append(f"  {(c.name + ' ' + c.args).strip():<24}", style="bold")
        t.append(f"{c.help}\n")
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
