"""A batch's state, opened from the checkpoint tab (``v`` / ``:state [BATCH]``): per state
operator and store the first rows (typed, timestamps as UTC text, windows as start – end) and
the per-partition sizes, decoded without a JVM through :func:`streamwatch.state.read_state`
in a thread worker (read-only: RocksDB stores are rebuilt in a temporary folder)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from streamwatch.analysis import fmt
from streamwatch.errors import one_line
from streamwatch.state import StateTable, read_state
from streamwatch.state.display import text

#: rows shown per operator/store
ROWS = 20


def table_title(t: StateTable) -> str:
    shown = len(t.rows)
    return (f"operator {t.operator_id} ({t.operator_name or 'unknown'}) · store {t.store} · {t.provider} · "
            f"batch {t.batch_id} (version {t.version}) · {t.total_rows:,} row(s)"
            + (f", first {shown}" if shown < t.total_rows else ""))


def partition_line(t: StateTable) -> str:
    """``p0: 3 rows, 1.2 KiB · p1: …`` (an unreadable partition shows its error)."""
    parts = [f"p{p.partition}: {p.error}" if p.error else f"p{p.partition}: {p.rows:,} rows, {fmt.size(p.file_bytes)}"
             for p in t.partitions]
    return "partitions  " + (" · ".join(parts) if parts else "none")


class StateRead(Message):
    """The decoded state (``tables``) or why it cannot be read (``error``, one line)."""

    def __init__(self, tables: Sequence[StateTable], error: str | None = None) -> None:
        super().__init__()
        self.tables = list(tables)
        self.error = error


class StatePanel(VerticalScroll):
    """The state of one checkpoint at one batch, drawn by :meth:`show_tables`."""

    DEFAULT_CSS = """
    StatePanel > Static { height: auto; }
    StatePanel > DataTable { height: auto; max-height: 14; margin: 0 0 1 0; }
    .state-title { text-style: bold; }
    .state-sizes { color: $text-muted; }
    """

    def compose(self) -> ComposeResult:
        yield Static("reading state…", id="state-head")

    def show_error(self, error: str) -> None:
        self.query_one("#state-head", Static).update(Text(error, style="yellow"))

    def show_tables(self, tables: Sequence[StateTable]) -> None:
        head = self.query_one("#state-head", Static)
        head.update(f"{len(tables)} state store(s)" if tables else "no state")
        for t in tables:
            self.mount(Static(table_title(t), classes="state-title"))
            table: DataTable[str] = DataTable(show_cursor=False, classes="state-rows")
            self.mount(table)
            names = [c.name for c in t.columns]
            table.add_columns(*(f"{c.name} ({c.type})" for c in t.columns))
            for r in t.rows:
                table.add_row(*(text(v, n.rsplit(".", 1)[-1]) for n, v in zip(names, r, strict=True)))
            self.mount(Static(partition_line(t), classes="state-sizes"))
            for f in t.findings:
                self.mount(Static(Text(f"{f.severity}: {f.code}: {f.message}", style="yellow")))


class StateScreen(ModalScreen[None]):
    """The state of ``checkpoint`` (query ``query``) as of ``batch`` (None: the last committed
    batch); esc, q or v closes it."""

    BINDINGS = [Binding("escape,q,v", "dismiss", "Close")]
    DEFAULT_CSS = """
    StateScreen { align: center middle; }
    StateScreen > StatePanel { width: 95%; height: 90%; border: round $accent; padding: 0 1; background: $panel; }
    """

    def __init__(self, checkpoint: str, query: str, batch: int | None) -> None:
        super().__init__()
        self.cp_path, self.query_name, self.batch_id = checkpoint, query, batch

    def compose(self) -> ComposeResult:
        panel = StatePanel(id="state-panel")
        batch = self.batch_id if self.batch_id is not None else "last committed"
        panel.border_title = f"state of {self.query_name} · batch {batch}"
        yield panel

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="state")
    def load(self) -> None:
        try:
            self.post_message(StateRead(read_state(self.cp_path, batch=self.batch_id, limit=ROWS)))
        except Exception as e:  # StateReadError and anything unexpected: one line, no crash
            self.post_message(StateRead([], one_line(e)))

    def on_state_read(self, message: StateRead) -> None:
        panel = self.query_one(StatePanel)
        if message.error is not None:
            panel.show_error(message.error)
        else:
            panel.show_tables(message.tables)
