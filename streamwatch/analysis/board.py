"""Per-query state the dashboard shows, folded from lifecycle events (pure Python, no textual).

Each query keeps its latest facts (:class:`QueryRow`), the latest full
:class:`~streamwatch.model.events.QueryProgress` (for state operators, sources and sink) and a
bounded :class:`~streamwatch.analysis.samples.SampleHistory` of compact :class:`Sample` records
(default 10,000 per query, at most :data:`HISTORY_BUDGET` over all queries) for the charts.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from streamwatch.analysis.samples import OPERATIONS, Sample, SampleHistory
from streamwatch.model.events import Event, QueryIdle, QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.progress import OffsetsBehindLatest
from streamwatch.model.runtime import QueryNotRun, QueryQueued

__all__ = ["OPERATIONS", "QueryBoard", "QueryRow", "Sample", "SampleHistory", "sample_of"]

DEFAULT_HISTORY = 10_000
#: chart samples kept over all queries together (152 bytes a sample in a :class:`SampleHistory`:
#: ~15 MiB at most);
#: with many queries each keeps ``HISTORY_BUDGET // queries``, so a dashboard of 100 queries
#: stops growing after 1,000 progress events per query
HISTORY_BUDGET = 100_000
#: the fewest samples a query keeps however many queries share the budget
MIN_HISTORY = 100
RECENT_PROGRESS = 5


def sample_of(p: QueryProgress) -> Sample:
    """The chartable numbers of one progress event."""
    from streamwatch.model.events import iso_to_epoch_ms

    gap = None
    wm = p.watermark_ms
    mx = iso_to_epoch_ms(p.event_time.get("max"))
    if wm and mx is not None:  # a watermark of 0 means none yet: no gap to show
        gap = mx - wm
    ops = p.state_operators
    return Sample(
        p.batch_id,
        p.timestamp_ms,
        p.input_rows_per_second,
        p.processed_rows_per_second,
        p.batch_duration,
        tuple(int(p.duration_ms.get(op, 0)) for op in OPERATIONS),
        gap,
        p.num_input_rows,
        p.num_output_rows,
        sum(o.num_rows_total for o in ops) if ops else None,
        sum(o.memory_used_bytes for o in ops) if ops else None,
        OffsetsBehindLatest.over([b for s in p.sources if (b := s.offsets_behind_latest) is not None]),
    )


@dataclass
class QueryRow:
    """The latest facts about one query: ``status`` is starting, queued (waiting for its
    upstream queries under ``availableNow``/``once``), not run, active, idle, stopped or
    failed; ``note`` says why a query is queued or not run (one line); ``stop_requested``
    marks a run that ended because it was asked to stop (an ``exception`` is then detail of
    the stop, not a failure); rates are rows/s; ``batch_duration_ms`` is ms; ``last_progress_ms`` the epoch ms
    of the latest progress event; ``history`` the bounded chart samples (oldest dropped)."""

    name: str
    status: str = "starting"
    query_id: str | None = None
    run_id: str | None = None
    batch_id: int | None = None
    input_rps: float | None = None
    processed_rps: float | None = None
    batch_duration_ms: int | None = None
    num_input_rows: int = 0
    total_input_rows: int = 0
    #: rows the sink wrote this session; None once a batch's sink reported -1 (Spark: unknown,
    #: e.g. a Delta or foreachBatch sink), so a total is never shown short
    total_output_rows: int | None = 0
    watermark: str | None = None
    exception: str | None = None
    error_class: str | None = None
    failed_batch_id: int | None = None
    note: str | None = None
    stop_requested: bool = False
    last_progress: QueryProgress | None = None
    last_event_ms: int | None = None
    #: epoch ms of this run's ``QueryStarted`` (None before one arrived)
    started_ms: int | None = None
    progress_count: int = 0
    history: SampleHistory = field(default_factory=lambda: SampleHistory(DEFAULT_HISTORY))
    #: the last :data:`RECENT_PROGRESS` progress events in full (sources' offsets and metrics:
    #: what real-time mode is recognised from, see :mod:`streamwatch.analysis.realtime`)
    recent: deque[QueryProgress] = field(default_factory=lambda: deque(maxlen=RECENT_PROGRESS))


class QueryBoard:
    """Query rows keyed by query name (plan order first); ``apply(event)`` returns the row
    it changed (None when the event belongs to no known query and carries no name).

    ``history`` is the number of progress samples kept per query (≥ 1); ``budget`` the
    samples kept over all queries together: with more than ``budget // history`` queries each
    keeps :attr:`per_query` (the newest ones), so memory is bounded however many queries
    report. Raises ValueError for ``history`` < 1."""

    def __init__(self, names: list[str], history: int = DEFAULT_HISTORY, budget: int = HISTORY_BUDGET) -> None:
        if history < 1:
            raise ValueError("history must be >= 1")
        self.history = history
        self.budget = budget
        self.rows: dict[str, QueryRow] = {}
        self._name_by_id: dict[str, str] = {}
        for n in names:
            self._add(n)

    @property
    def per_query(self) -> int:
        """Samples each query keeps now: ``history``, or its share of ``budget`` (≥ :data:`MIN_HISTORY`)."""
        return min(self.history, max(MIN_HISTORY, self.budget // max(1, len(self.rows))))

    def _add(self, name: str) -> QueryRow:
        """A new row; when the budget's share shrinks, every row keeps only its newest samples."""
        row = QueryRow(name, history=SampleHistory(self.history))
        self.rows[name] = row
        keep = self.per_query
        for r in self.rows.values():
            if r.history.maxlen != keep:
                r.history = r.history.resized(keep)
        return row

    def name_of(self, query_id: str) -> str | None:
        return self._name_by_id.get(query_id)

    def _row(self, event: Event, name: str | None) -> QueryRow | None:
        name = name or self._name_by_id.get(event.id)
        if name is None:
            return None
        self._name_by_id[event.id] = name
        if name not in self.rows:
            self._add(name)
        return self.rows[name]

    def apply_plan(self, obj: QueryQueued | QueryNotRun) -> QueryRow:
        """Fold a runner's :class:`QueryQueued`/:class:`QueryNotRun` (keyed by query name:
        Spark has no id for a query that has not started); the next ``QueryStarted`` for the
        name makes it active."""
        name = obj.query_name
        if name not in self.rows:
            self._add(name)
        row = self.rows[name]
        if isinstance(obj, QueryQueued):
            row.status = "queued"
            row.note = "waits for " + ", ".join(obj.waiting_for) if obj.waiting_for else "queued"
        else:
            row.status = "not run"
            row.note = obj.reason
        return row

    def apply(self, event: Event) -> QueryRow | None:
        row = self._row(event, event.name if isinstance(event, (QueryStarted, QueryProgress)) else None)
        if row is None:
            return None
        row.query_id = event.id
        row.run_id = event.run_id
        if event.timestamp_ms is not None:
            row.last_event_ms = event.timestamp_ms
        if isinstance(event, QueryStarted):
            row.status = "active"
            row.started_ms = event.timestamp_ms
            row.exception = None
            row.error_class = None
            row.failed_batch_id = None
            row.note = None
            row.stop_requested = False
        elif isinstance(event, QueryProgress):
            row.status = "active" if event.num_input_rows or row.status != "idle" else "idle"
            row.batch_id = event.batch_id
            row.input_rps = event.input_rows_per_second
            row.processed_rps = event.processed_rows_per_second
            row.batch_duration_ms = event.batch_duration
            row.num_input_rows = event.num_input_rows
            row.total_input_rows += event.num_input_rows
            if row.total_output_rows is not None:
                row.total_output_rows = None if event.num_output_rows < 0 else row.total_output_rows + event.num_output_rows
            row.watermark = event.watermark
            row.last_progress = event
            row.progress_count += 1
            row.history.append(sample_of(event))
            row.recent.append(event)
        elif isinstance(event, QueryIdle):
            row.status = "idle"
        elif isinstance(event, QueryTerminated):
            row.status = "failed" if event.failed else "stopped"
            row.exception = event.exception
            row.error_class = event.error_class
            row.stop_requested = event.stop_requested
            if event.failed:
                # the batch that failed is the one after the last finished one
                row.failed_batch_id = 0 if row.batch_id is None else row.batch_id + 1
        return row
