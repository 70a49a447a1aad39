"""``?`` help: every key and every ``:`` command, from the command registry.

Each section is two columns: what to type (a key, or a command with its argument synopsis,
e.g. ``restart [QUERY|all]``) and what it does. The first column is as wide as its longest
entry plus a gap, so an entry never runs into its text; on screen the second column wraps
under itself (a grid), never under the first."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from streamwatch.tui.commands import KEYS, REGISTRY

#: the diagnosis column's words and what each means
DIAGNOSES: tuple[tuple[str, str], ...] = (
    ("ok", "batches keep up with input"),
    ("waiting", "waiting for data: the trigger fires, no source has new data (idle)"),
    ("slow", "processing rate below input rate over the recent batches"),
    ("stuck", "offsets N written, no commit N for longer than 5 × trigger interval"),
    ("failed", "the query stopped with an exception (detail shows it and the batch)"),
)
#: keys the tabs' own widgets answer (no app binding), listed after the registry's keys
VIEW_KEYS: tuple[tuple[str, str], ...] = (
    ("← →", "queries table: next / previous columns (at 80 columns the rest of them); detail: its tables' "
            "columns; pipeline: scroll sideways"),
    ("home end", "first / last column of a table; top / bottom of the detail and pipeline tabs"),
    ("↑ ↓ pgup pgdn", "detail and pipeline tabs: scroll (also with the focus on the tab row)"),
)
MOUSE = "Mouse: click tabs, rows and footer keys."
#: columns between an entry and its text
GAP = 2


def synopsis(name: str, args: str) -> str:
    """How a command is typed: ``restart [QUERY|all]``, ``queries``."""
    return f"{name} {args}".strip()


def sections() -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The help's sections: (title, ((entry, what it does), …))."""
    return (
        ("streamwatch — keys", tuple((k.keys, k.help) for k in KEYS) + VIEW_KEYS),
        (": commands", tuple((synopsis(c.name, c.args), c.help) for c in REGISTRY)),
        ("Diagnosis column", DIAGNOSES),
    )


def help_text() -> Text:
    """The help as plain lines (no wrapping): ``  ENTRY  text`` with each section's entries
    padded to its longest one plus :data:`GAP` columns."""
    t = Text()
    for i, (title, rows) in enumerate(sections()):
        if i:
            t.append("\n")
        t.append(f"{title}\n", style="bold")
        width = max(len(entry) for entry, _ in rows) + GAP
        for entry, what in rows:
            t.append(f"  {entry:<{width}}", style="bold")
            t.append(f"{what}\n")
    t.append(MOUSE)
    return t


def help_renderable() -> RenderableType:
    """The help as shown: each section a two-column grid (entries never wrap; the text wraps
    in its own column)."""
    parts: list[RenderableType] = []
    for i, (title, rows) in enumerate(sections()):
        if i:
            parts.append(Text(""))
        parts.append(Text(title, style="bold"))
        grid = Table.grid(padding=(0, GAP, 0, 0), pad_edge=False)
        grid.add_column(no_wrap=True, style="bold")
        grid.add_column(ratio=1, overflow="fold")
        for entry, what in rows:
            grid.add_row(Text("  " + entry), Text(what))
        parts.append(grid)
    parts.append(Text(MOUSE))
    return Group(*parts)


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
            yield Static(help_renderable(), id="help-text")
