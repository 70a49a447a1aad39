"""Rows of the events tab (one line per model object) and the results tab."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import DataTable, Static

from streamwatch.model.events import Event, QueryIdle, QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import RuntimeNotice
from streamwatch.tui import fmt


def event_line(obj: Any, query: str) -> tuple[str, str, str, str]:
    """(time UTC with ms, kind, query, what) for an event, a landed file or a notice. Times
    come from the object itself (never the wall clock), so recordings render the same."""
    if isinstance(obj, QueryProgress):
        what = (f"batch {obj.batch_id}: {obj.num_input_rows:,} rows in, {fmt.rate(obj.input_rows_per_second)} → "
                f"{fmt.rate(obj.processed_rows_per_second)} rows/s, {obj.batch_duration:,} ms")
        if obj.num_output_rows >= 0:
            what += f", {obj.num_output_rows:,} out"
        return fmt.clock(obj.timestamp_ms, millis=True), "progress", query, what
    if isinstance(obj, QueryStarted):
        return fmt.clock(obj.timestamp_ms, millis=True), "started", query, f"run {obj.run_id}"
    if isinstance(obj, QueryIdle):
        return fmt.clock(obj.timestamp_ms, millis=True), "idle", query, "no new data"
    if isinstance(obj, QueryTerminated):
        what = f"failed: {fmt.first_line(obj.exception)}" if obj.failed else "stopped"
        return fmt.clock(obj.timestamp_ms, millis=True), "terminated", query, what
    if isinstance(obj, Event):
        return fmt.clock(obj.timestamp_ms, millis=True), obj.kind, query, ""
    if isinstance(obj, LandedFile):
        return fmt.clock(obj.landed_at_ms, millis=True), "landed", obj.source, f"{obj.name} ({fmt.size(obj.size_bytes)})"
    if isinstance(obj, RuntimeNotice):
        return "", obj.level, "", obj.message
    return "", type(obj).__name__, query, str(obj)[:200]


def render_results(head: Static, table: DataTable, message: Any, batch_id: int | None) -> None:
    """Show a :class:`~streamwatch.tui.messages.ResultsRead` in the results tab."""
    if message.error:
        head.update(Text(f"results of {message.query}: {message.error}", style="yellow"))
        table.clear(columns=True)
        return
    head.update(Text(f"results of {message.query} — {len(message.rows):,} rows shown"
                     f" (as of batch {fmt.count(batch_id)})"))
    table.clear(columns=True)
    for c in message.columns:
        table.add_column(c)
    for r in message.rows:
        table.add_row(*r)
