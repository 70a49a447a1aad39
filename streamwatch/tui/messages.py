"""Typed messages the dashboard's adapters and workers post to the app."""

from __future__ import annotations

from collections.abc import Mapping

from textual.message import Message

from streamwatch.model.checkpoint import BatchRow, Checkpoint
from streamwatch.model.deltalog import DeltaCommit


class Wake(Message):
    """"Model objects are waiting in the inbox". A burst of them coalesces into one
    (``can_replace``), so a flood of progress events renders once."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, Wake)


class CheckpointsRead(Message):
    """One checkpoint scan: query name → its ``Checkpoint`` (unreadable ones left out), the
    error text for unreadable ones, and per-query batch timelines (``BatchRow`` per batch)."""

    def __init__(self, checkpoints: Mapping[str, Checkpoint], errors: Mapping[str, str],
                 timelines: Mapping[str, tuple[BatchRow, ...]]) -> None:
        super().__init__()
        self.checkpoints = dict(checkpoints)
        self.errors = dict(errors)
        self.timelines = dict(timelines)

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, CheckpointsRead)


class JourneyRead(Message):
    """One landed file's journey through every layer (``lines``, as ``streamwatch lineage``
    prints them) or why it cannot be followed (``error``, one line)."""

    def __init__(self, path: str, lines: list[str], error: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.lines = lines
        self.error = error


class ResultsRead(Message):
    """Current rows of a query's table: column names, rows (tuples of text), or an error;
    ``history`` the table's newest Delta commits, newest first (empty for other tables)."""

    def __init__(self, query: str, columns: list[str], rows: list[tuple[str, ...]], error: str | None = None,
                 history: tuple[DeltaCommit, ...] = ()) -> None:
        super().__init__()
        self.query = query
        self.columns = columns
        self.rows = rows
        self.error = error
        self.history = history


class ControlDone(Message):
    """A control (start/stop/restart/land/trigger) finished: ``ok`` and a one-line result."""

    def __init__(self, action: str, ok: bool, text: str) -> None:
        super().__init__()
        self.action = action
        self.ok = ok
        self.text = text
