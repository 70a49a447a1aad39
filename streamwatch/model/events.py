"""Query lifecycle events, mirroring ``org.apache.spark.sql.streaming.StreamingQueryListener``.

The field names follow the JSON that Spark writes for ``StreamingQueryProgress.json``
(camelCase there, snake_case here). Every object is frozen; ``to_dict`` gives Spark's own
JSON shape back so a recording can be compared with what Spark printed. Also here: the
listener's own health counters (:class:`ListenerStats`), :class:`UnsupportedEvent` and
:func:`event_from_json`. A progress report's source/state operator/sink parts live in
:mod:`streamwatch.model.progress` (re-exported here), the JSON value parsing in
:mod:`streamwatch.model.sparkjson`.

Units: ``*_ms`` and ``duration_ms`` values are milliseconds; ``*_per_second`` values are
rows/s; ``memory_used_bytes`` is bytes; timestamps are ISO-8601 strings in UTC as Spark
writes them (``2026-11-20T21:57:09.123Z``), with ``timestamp_ms`` giving epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from streamwatch.model.progress import SinkProgress, SourceProgress, StateOperatorProgress
from streamwatch.model.sparkjson import iso_to_epoch_ms, json_int, json_rate, sum_rates

__all__ = [
    "Event",
    "ListenerStats",
    "QueryIdle",
    "QueryProgress",
    "QueryStarted",
    "QueryTerminated",
    "SinkProgress",
    "SourceProgress",
    "StateOperatorProgress",
    "UnsupportedEvent",
    "event_from_json",
    "iso_to_epoch_ms",
]


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every lifecycle event: the query ``id`` (stable across restarts, from the
    checkpoint's ``metadata`` file) and ``run_id`` (new on every start)."""

    kind: ClassVar[str] = "event"
    id: str
    run_id: str
    timestamp: str | None

    @property
    def timestamp_ms(self) -> int | None:
        """Event time as epoch milliseconds (None when Spark gave no timestamp)."""
        return iso_to_epoch_ms(self.timestamp)


@dataclass(frozen=True, slots=True)
class QueryStarted(Event):
    """``QueryStartedEvent``: a query (re)started; ``name`` may be None."""

    kind: ClassVar[str] = "started"
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "runId": self.run_id, "name": self.name, "timestamp": self.timestamp}


@dataclass(frozen=True, slots=True)
class QueryIdle(Event):
    """``QueryIdleEvent`` (Spark ≥ 3.5): the trigger fired but no source had new data."""

    kind: ClassVar[str] = "idle"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "runId": self.run_id, "timestamp": self.timestamp}


@dataclass(frozen=True, slots=True)
class QueryTerminated(Event):
    """``QueryTerminatedEvent``: ``exception`` is Spark's message text (None when the query
    stopped normally); ``error_class`` is ``errorClassOnException`` (Spark ≥ 3.5).
    ``stop_requested`` is streamwatch's own fact: the run ended because we called
    ``StreamingQuery.stop()`` on it, so an exception Spark still reports (a write interrupted
    by the stop, ``TASK_WRITE_FAILED``) is detail of a stop, not a failure (recorded as
    ``stopRequested``)."""

    kind: ClassVar[str] = "terminated"
    exception: str | None = None
    error_class: str | None = None
    stop_requested: bool = False

    @property
    def failed(self) -> bool:
        """True when the query ended with an exception that our own stop did not cause."""
        return self.exception is not None and not self.stop_requested

    @property
    def stopped(self) -> bool:
        """True when the query ended without a failure (a stop, or every batch done)."""
        return not self.failed

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "runId": self.run_id,
            "exception": self.exception,
            "errorClassOnException": self.error_class,
            "timestamp": self.timestamp,
        }
        if self.stop_requested:
            d["stopRequested"] = True
        return d


@dataclass(frozen=True, slots=True)
class QueryProgress(Event):
    """``QueryProgressEvent``: one finished micro-batch (mirrors ``StreamingQueryProgress``).

    ``batch_duration`` and every ``duration_ms`` value are ms; ``event_time`` holds Spark's
    ``eventTime`` map (``min``/``max``/``avg``/``watermark``, ISO strings); ``raw`` is the
    progress JSON as received, so nothing Spark reported is lost.
    """

    kind: ClassVar[str] = "progress"
    name: str | None = None
    batch_id: int = 0
    batch_duration: int = 0
    num_input_rows: int = 0
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    duration_ms: Mapping[str, int] = field(default_factory=dict)
    event_time: Mapping[str, str] = field(default_factory=dict)
    state_operators: tuple[StateOperatorProgress, ...] = ()
    sources: tuple[SourceProgress, ...] = ()
    sink: SinkProgress | None = None
    observed_metrics: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def watermark(self) -> str | None:
        """The watermark used by this batch (ISO string), None without a watermark — also
        before there is one: Spark reports ``1970-01-01T00:00:00.000Z`` (its watermark starts
        at 0, ``WatermarkTracker``) until a batch has seen an event time."""
        wm = self.event_time.get("watermark")
        return None if wm is None or iso_to_epoch_ms(wm) == 0 else wm

    @property
    def watermark_ms(self) -> int | None:
        return iso_to_epoch_ms(self.watermark)

    @property
    def num_output_rows(self) -> int:
        return self.sink.num_output_rows if self.sink else -1

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> QueryProgress:
        """Build from the dict of ``StreamingQueryProgress.json``. Missing fields default
        (0, None, empty); unknown fields are kept in ``raw``. Raises ``KeyError`` only when
        ``id`` or ``runId`` is missing.

        Spark event logs serialise the progress with Jackson, which leaves out the derived
        top-level ``numInputRows``/``inputRowsPerSecond``/``processedRowsPerSecond``; they are
        then computed as Spark does (the sum over ``sources``; NaN/absent when any is)."""
        sink = d.get("sink")
        sources = tuple(SourceProgress.from_dict(s) for s in d.get("sources") or ())
        return cls(
            id=str(d["id"]),
            run_id=str(d["runId"]),
            timestamp=d.get("timestamp"),
            name=d.get("name"),
            batch_id=json_int(d.get("batchId")),
            batch_duration=json_int(d.get("batchDuration")),
            num_input_rows=json_int(d["numInputRows"]) if "numInputRows" in d else sum(s.num_input_rows for s in sources),
            input_rows_per_second=json_rate(d["inputRowsPerSecond"]) if "inputRowsPerSecond" in d
            else sum_rates(s.input_rows_per_second for s in sources),
            processed_rows_per_second=json_rate(d["processedRowsPerSecond"]) if "processedRowsPerSecond" in d
            else sum_rates(s.processed_rows_per_second for s in sources),
            duration_ms={str(k): json_int(v) for k, v in (d.get("durationMs") or {}).items()},
            event_time={str(k): str(v) for k, v in (d.get("eventTime") or {}).items()},
            state_operators=tuple(
                StateOperatorProgress.from_dict(s) for s in d.get("stateOperators") or ()
            ),
            sources=sources,
            sink=SinkProgress.from_dict(sink) if isinstance(sink, Mapping) else None,
            observed_metrics=dict(d.get("observedMetrics") or {}),
            raw=dict(d),
        )

    def to_dict(self) -> dict[str, Any]:
        """Spark's progress JSON shape (the received JSON when available)."""
        if self.raw:
            return dict(self.raw)
        return {
            "id": self.id,
            "runId": self.run_id,
            "name": self.name,
            "timestamp": self.timestamp,
            "batchId": self.batch_id,
            "batchDuration": self.batch_duration,
            "numInputRows": self.num_input_rows,
            "inputRowsPerSecond": self.input_rows_per_second,
            "processedRowsPerSecond": self.processed_rows_per_second,
            "durationMs": dict(self.duration_ms),
            "eventTime": dict(self.event_time),
            "stateOperators": [o.to_dict() for o in self.state_operators],
            "sources": [s.to_dict() for s in self.sources],
            "sink": self.sink.to_dict() if self.sink else None,
            "observedMetrics": dict(self.observed_metrics),
        }


@dataclass(frozen=True, slots=True)
class ListenerStats:
    """Health of the listener → sink hand-off (mirrors :class:`~streamwatch.events.bus.EventBusStats`
    plus the listener's own counters): events ``published`` by the listener, ``delivered`` to
    every sink, ``dropped`` (oldest first when the bounded queue was full), ``sink_errors``
    (exceptions raised by sinks, swallowed), ``conversion_errors`` (Spark events that could not
    be converted), and ``max_callback_ms``, the longest time a Spark listener callback spent in
    streamwatch (ms)."""

    kind: ClassVar[str] = "stats"
    published: int = 0
    delivered: int = 0
    dropped: int = 0
    sink_errors: int = 0
    conversion_errors: int = 0
    max_callback_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "published": self.published,
            "delivered": self.delivered,
            "dropped": self.dropped,
            "sinkErrors": self.sink_errors,
            "conversionErrors": self.conversion_errors,
            "maxCallbackMs": self.max_callback_ms,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ListenerStats:
        return cls(
            published=json_int(d.get("published")),
            delivered=json_int(d.get("delivered")),
            dropped=json_int(d.get("dropped")),
            sink_errors=json_int(d.get("sinkErrors")),
            conversion_errors=json_int(d.get("conversionErrors")),
            max_callback_ms=json_rate(d.get("maxCallbackMs")) or 0.0,
        )


@dataclass(frozen=True, slots=True)
class UnsupportedEvent:
    """A streaming listener event streamwatch recognises but cannot model, e.g. the Spark
    2.0.0/2.0.1 ``StreamingQueryListener$QueryProgress`` lines (classes renamed in 2.1; Spark's
    own ``ReplayListenerBus`` skips them too). ``event_class`` is the JSON ``Event`` value,
    ``reason`` says why, ``line`` is the 1-based line number in its file (0 when unknown)."""

    kind: ClassVar[str] = "unsupported"
    event_class: str
    reason: str
    line: int = 0


def event_from_json(kind: str, d: Mapping[str, Any]) -> Event | ListenerStats:
    """The model object for a streamwatch ``kind`` (started/progress/idle/terminated/stats) and
    its Spark-shaped dict (the ``to_dict`` shape). Raises ``KeyError`` for an unknown kind or a
    missing ``id``/``runId``."""
    if kind == "progress":
        return QueryProgress.from_dict(d)
    if kind == "started":
        return QueryStarted(id=str(d["id"]), run_id=str(d["runId"]), timestamp=d.get("timestamp"), name=d.get("name"))
    if kind == "idle":
        return QueryIdle(id=str(d["id"]), run_id=str(d["runId"]), timestamp=d.get("timestamp"))
    if kind == "terminated":
        return QueryTerminated(
            id=str(d["id"]),
            run_id=str(d["runId"]),
            timestamp=d.get("timestamp"),
            exception=d.get("exception"),
            error_class=d.get("errorClassOnException"),
            stop_requested=d.get("stopRequested") is True,
        )
    if kind == "stats":
        return ListenerStats.from_dict(d)
    raise KeyError(f"unknown event kind {kind!r}")
