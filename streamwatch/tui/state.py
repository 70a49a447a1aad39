"""Per-query state the dashboard shows, folded from lifecycle events (pure Python)."""

from __future__ import annotations

from dataclasses import dataclass

from streamwatch.model.events import Event, QueryIdle, QueryProgress, QueryStarted, QueryTerminated


@dataclass
class QueryRow:
    """The latest facts about one query: ``status`` is starting, active, idle, stopped or
    failed; rates are rows/s; ``batch_duration_ms`` is ms."""

    name: str
    status: str = "starting"
    query_id: str | None = None
    batch_id: int | None = None
    input_rps: float | None = None
    processed_rps: float | None = None
    batch_duration_ms: int | None = None
    num_input_rows: int = 0
    total_input_rows: int = 0
    watermark: str | None = None
    exception: str | None = None


class QueryBoard:
    """Query rows keyed by query name; ``apply(event)`` returns the row it changed (None when
    the event belongs to no known query and carries no name)."""

    def __init__(self, names: list[str]) -> None:
        self.rows: dict[str, QueryRow] = {n: QueryRow(n) for n in names}
        self._name_by_id: dict[str, str] = {}

    def _row(self, event: Event, name: str | None) -> QueryRow | None:
        name = name or self._name_by_id.get(event.id)
        if name is None:
            return None
        self._name_by_id[event.id] = name
        return self.rows.setdefault(name, QueryRow(name))

    def apply(self, event: Event) -> QueryRow | None:
        row = self._row(event, getattr(event, "name", None))
        if row is None:
            return None
        row.query_id = event.id
        if isinstance(event, QueryStarted):
            row.status = "active"
            row.exception = None
        elif isinstance(event, QueryProgress):
            row.status = "active" if event.num_input_rows or row.status != "idle" else "idle"
            row.batch_id = event.batch_id
            row.input_rps = event.input_rows_per_second
            row.processed_rps = event.processed_rows_per_second
            row.batch_duration_ms = event.batch_duration
            row.num_input_rows = event.num_input_rows
            row.total_input_rows += event.num_input_rows
            row.watermark = event.watermark
        elif isinstance(event, QueryIdle):
            row.status = "idle"
        elif isinstance(event, QueryTerminated):
            row.status = "failed" if event.failed else "stopped"
            row.exception = event.exception
        return row
