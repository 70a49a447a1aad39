"""Per-query summary of an event stream (``streamwatch events`` without ``--json``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from streamwatch.model.events import Event, QueryProgress, QueryStarted, QueryTerminated, UnsupportedEvent


@dataclass
class QuerySummary:
    """One query (by query id): its last ``name``, ``runs`` (distinct run ids), ``batches``
    (progress events), ``input_rows`` (sum of numInputRows), first and last event time (epoch
    ms), ``failures`` (terminations with an exception) and the last exception text."""

    id: str
    name: str | None = None
    runs: set[str] = field(default_factory=set)
    batches: int = 0
    input_rows: int = 0
    first_ms: int | None = None
    last_ms: int | None = None
    failures: int = 0
    last_exception: str | None = None

    @property
    def span_s(self) -> float | None:
        """Seconds between the first and the last timestamped event (None without any)."""
        if self.first_ms is None or self.last_ms is None:
            return None
        return (self.last_ms - self.first_ms) / 1000


@dataclass
class Summary:
    queries: dict[str, QuerySummary] = field(default_factory=dict)
    events: int = 0
    unsupported: int = 0

    def add(self, obj: Any) -> None:
        if isinstance(obj, UnsupportedEvent):
            self.unsupported += 1
            return
        if not isinstance(obj, Event):
            return
        self.events += 1
        q = self.queries.setdefault(obj.id, QuerySummary(obj.id))
        q.runs.add(obj.run_id)
        if isinstance(obj, (QueryStarted, QueryProgress)) and obj.name:
            q.name = obj.name
        if isinstance(obj, QueryProgress):
            q.batches += 1
            q.input_rows += obj.num_input_rows
        if isinstance(obj, QueryTerminated) and obj.failed:
            q.failures += 1
            q.last_exception = obj.exception
        ts = obj.timestamp_ms
        if ts is not None:
            q.first_ms = ts if q.first_ms is None else min(q.first_ms, ts)
            q.last_ms = ts if q.last_ms is None else max(q.last_ms, ts)


def summarize(objs: Iterable[Any]) -> Summary:
    """Fold model objects into a :class:`Summary` (queries in first-seen order)."""
    s = Summary()
    for obj in objs:
        s.add(obj)
    return s
