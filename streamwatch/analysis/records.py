"""Typed records a checkpoint watch derives (see :mod:`streamwatch.analysis.watch`).

Every record has a ``kind`` (``checkpoint-batch``, ``checkpoint-status``,
``checkpoint-finding``, ``pipeline-edge``, ``source-lag``, ``query-health``) and ``to_dict()`` giving its documented JSONL shape
(camelCase keys). Records about one query carry the query ``id`` (the checkpoint's
``metadata``, the same id the listener reports) and, for batches, the ``batchId``, so a watch
output joins with a listener recording on ``(id, batchId)``. Times are epoch ms, durations ms,
sizes bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:  # health_window judges these records; the verdict type is only annotated here
    from streamwatch.analysis.health_window import Health, HealthVerdict


@dataclass(frozen=True, slots=True)
class SourceInput:
    """What one source read in one batch. ``source`` is the source id in ``offsets/N``
    (``"0"``, ``"1"`` …); ``kind`` as :class:`~streamwatch.model.batchlogs.SourceOffset`
    (``file``, ``kafka``, ``delta``, ``rate``, ``number``, ``raw``).

    ``files``/``bytes``: file source files read (from ``sources/<i>/``) and their size (None
    when a file is gone, e.g. archived by cleanSource); ``paths`` the files' URIs as logged.
    ``offsets``: Kafka offsets advanced per ``topic`` → ``partition`` (next offset minus the
    previous batch's). ``advanced``: a numeric offset's advance (rate, number).
    ``versions``: Delta source table versions ``(from, to)`` read; ``position``: its end
    offset (``reservoirVersion``, ``index``, ``isStartingVersion``), not in the JSON."""

    source: str
    kind: str
    files: int | None = None
    bytes: int | None = None
    paths: tuple[str, ...] = ()
    offsets: Mapping[str, Mapping[str, int]] | None = None
    advanced: int | None = None
    versions: tuple[int, int] | None = None
    offset: str | None = None
    file_mtimes_ms: tuple[int, ...] = ()
    position: tuple[int, int, bool] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"source": self.source, "kind": self.kind}
        if self.files is not None:
            d["files"] = self.files
            d["bytes"] = self.bytes
        if self.offsets is not None:
            d["offsets"] = {t: dict(p) for t, p in self.offsets.items()}
        if self.advanced is not None:
            d["advanced"] = self.advanced
        if self.versions is not None:
            d["versions"] = list(self.versions)
        if self.offset is not None:
            d["offset"] = self.offset
        return d


@dataclass(frozen=True, slots=True)
class BatchOutput:
    """What the sink committed for one batch: ``kind`` ``file`` (``_spark_metadata``: ``files``
    added, ``bytes``) or ``delta`` (``versions`` written, ``files`` added; ``bytes`` None); ``paths``/``sizes``: the
    files added (file sink; not in the JSON)."""

    kind: str
    files: int
    bytes: int | None = None
    versions: tuple[int, ...] = ()
    paths: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "files": self.files, "bytes": self.bytes}
        if self.kind == "delta":
            d["versions"] = list(self.versions)
        return d


@dataclass(frozen=True, slots=True)
class StateUsage:
    """State store files written for ``version`` (= batch id + 1) by one operator: ``files``
    and ``bytes`` across partitions (HDFS ``.delta``/``.snapshot``, RocksDB ``.zip``/
    ``.changelog``; RocksDB SST files are not counted)."""

    operator: int
    version: int
    files: int
    bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "version": self.version, "files": self.files, "bytes": self.bytes}


@dataclass(frozen=True, slots=True)
class ListenerFigures:
    """What only the listener knows about a batch, merged from a recording or event log
    (``watch --recording``): the query's ``run_id``, ``input_rows``, ``input_rows_per_second``,
    ``processed_rows_per_second`` (rows/s), ``output_rows`` (sink; None unknown) and the
    ``durations_ms`` breakdown (``triggerExecution``, ``addBatch``, … in ms)."""

    run_id: str
    input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    output_rows: int | None
    durations_ms: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"runId": self.run_id, "inputRows": self.input_rows, "inputRowsPerSecond": self.input_rows_per_second,
                "processedRowsPerSecond": self.processed_rows_per_second, "outputRows": self.output_rows,
                "durationMs": dict(self.durations_ms)}


@dataclass(frozen=True, slots=True)
class CheckpointBatch:
    """One committed micro-batch as the checkpoint tells it.

    ``planned_at_ms`` is ``batchTimestampMs`` of ``offsets/N``; ``committed_at_ms`` the
    modification time of ``commits/N``; ``duration_ms`` their difference (≈ the listener's
    ``triggerExecution``). ``trigger_interval_ms``: planned-at minus the previous batch's;
    ``idle_gap_ms``: planned-at minus the previous batch's commit (time with no batch running).
    ``watermark_ms``: batchWatermarkMs; ``watermark_delta_ms`` its movement since the previous
    batch. ``origin_ms``: the landing time of the oldest input this batch carries (through
    upstream watched queries); ``end_to_end_ms`` = committed-at minus origin. ``listener``:
    the listener's figures when a recording or event log was merged in (then ``duration_ms``
    is its ``triggerExecution``, ``planned_at_ms`` its timestamp, ``watermark_ms`` its
    watermark: the listener's numbers win)."""

    kind: ClassVar[str] = "checkpoint-batch"
    id: str
    query: str
    checkpoint: str
    batch_id: int
    planned_at_ms: int | None
    committed_at_ms: int
    duration_ms: int | None
    trigger_interval_ms: int | None = None
    idle_gap_ms: int | None = None
    watermark_ms: int | None = None
    watermark_delta_ms: int | None = None
    inputs: tuple[SourceInput, ...] = ()
    output: BatchOutput | None = None
    state: tuple[StateUsage, ...] = ()
    origin_ms: int | None = None
    end_to_end_ms: int | None = None
    listener: ListenerFigures | None = None

    @property
    def input_files(self) -> int | None:
        counts = [s.files for s in self.inputs if s.files is not None]
        return sum(counts) if counts else None

    @property
    def input_bytes(self) -> int | None:
        sizes = [s.bytes for s in self.inputs if s.files is not None]
        return None if not sizes or any(b is None for b in sizes) else sum(b for b in sizes if b is not None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "id": self.id, "query": self.query, "checkpoint": self.checkpoint,
            "batchId": self.batch_id, "plannedAtMs": self.planned_at_ms, "committedAtMs": self.committed_at_ms,
            "durationMs": self.duration_ms, "triggerIntervalMs": self.trigger_interval_ms,
            "idleGapMs": self.idle_gap_ms, "watermarkMs": self.watermark_ms,
            "watermarkDeltaMs": self.watermark_delta_ms, "inputFiles": self.input_files,
            "inputBytes": self.input_bytes, "inputs": [s.to_dict() for s in self.inputs],
            "output": self.output.to_dict() if self.output else None,
            "state": [s.to_dict() for s in self.state],
            "originMs": self.origin_ms, "endToEndMs": self.end_to_end_ms,
            "listener": self.listener.to_dict() if self.listener else None,
        }


@dataclass(frozen=True, slots=True)
class CheckpointStatus:
    """Where a query stands now (emitted when it changes): latest planned and committed batch
    ids, the ``in_flight_batch_id`` (offsets N, no commit N) and ``in_flight_s`` since it was
    planned, the usual ``cadence_ms`` (median of recent trigger intervals), ``stuck`` (in flight
    longer than 5 × cadence) and ``idle`` (nothing planned for longer than 2 × cadence;
    ``idle_s`` since the last commit)."""

    kind: ClassVar[str] = "checkpoint-status"
    id: str
    query: str
    checkpoint: str
    at_ms: int
    last_batch_id: int | None
    last_committed_batch_id: int | None
    in_flight_batch_id: int | None
    in_flight_s: float | None
    cadence_ms: int | None
    stuck: bool
    idle: bool
    idle_s: float | None

    def verdict(self) -> tuple[int | None, int | None, int | None, bool, bool]:
        """What a change is judged on (times excluded)."""
        return (self.last_batch_id, self.last_committed_batch_id, self.in_flight_batch_id, self.stuck, self.idle)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "id": self.id, "query": self.query, "checkpoint": self.checkpoint,
            "atMs": self.at_ms, "lastBatchId": self.last_batch_id,
            "lastCommittedBatchId": self.last_committed_batch_id, "inFlightBatchId": self.in_flight_batch_id,
            "inFlightSeconds": self.in_flight_s, "cadenceMs": self.cadence_ms, "stuck": self.stuck,
            "idle": self.idle, "idleSeconds": self.idle_s,
        }


@dataclass(frozen=True, slots=True)
class CheckpointFinding:
    """An inspector finding (:class:`~streamwatch.model.findings.Finding`) the first time it is
    seen on this query."""

    kind: ClassVar[str] = "checkpoint-finding"
    id: str
    query: str
    checkpoint: str
    severity: str
    code: str
    message: str
    path: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "query": self.query, "checkpoint": self.checkpoint,
                "severity": self.severity, "code": self.code, "message": self.message, "path": self.path}


@dataclass(frozen=True, slots=True)
class PipelineEdge:
    """One edge of the pipeline DAG: query ``upstream`` writes ``path`` (its sink), query
    ``downstream`` reads it (a file or Delta source). ``backlog_files``/``backlog_bytes``:
    written upstream, not yet read downstream (Delta: ``backlog_versions``).
    ``layer_latency_ms``: the downstream query's median time from its input being available
    to its commit; ``end_to_end_ms``: the downstream's latest batch's latency from the oldest
    landed file it carries; ``slowest``: the downstream layer has the pipeline's largest
    layer latency; ``slowest_layer`` names the watched query with the largest layer latency
    (possibly a first layer, which has no incoming edge). ``lag_s``: seconds since the oldest
    of the backlog was committed upstream (the ``commits/N`` of the batch that wrote the
    oldest unread file; Delta: the first unread version's commit timestamp); 0.0 with no
    backlog, None when that commit is older than the watch's history (unknown)."""

    kind: ClassVar[str] = "pipeline-edge"
    upstream: str
    downstream: str
    upstream_id: str
    downstream_id: str
    path: str
    backlog_files: int
    backlog_bytes: int | None
    backlog_versions: int | None = None
    layer_latency_ms: int | None = None
    end_to_end_ms: int | None = None
    slowest: bool = False
    at_ms: int = 0
    slowest_layer: str | None = None
    lag_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "upstream": self.upstream, "downstream": self.downstream,
            "upstreamId": self.upstream_id, "downstreamId": self.downstream_id, "path": self.path,
            "backlogFiles": self.backlog_files, "backlogBytes": self.backlog_bytes,
            "backlogVersions": self.backlog_versions, "layerLatencyMs": self.layer_latency_ms,
            "endToEndMs": self.end_to_end_ms, "slowest": self.slowest, "slowestLayer": self.slowest_layer,
            "lagSeconds": self.lag_s, "atMs": self.at_ms,
        }


@dataclass(frozen=True, slots=True)
class SourceLag:
    """How far one source of a query is behind, in time, at ``at_ms`` (see
    :mod:`streamwatch.analysis.lag`). ``source`` is its id in ``offsets/N`` (``"0"`` or its
    name), ``source_kind`` ``file`` or ``kafka``. ``backlog`` files landed and not yet read
    (Kafka: records behind, the broker's end offsets − the committed offsets, summed over
    partitions); ``oldest_unread_ms`` the oldest one's modification time (Kafka: the broker
    timestamp of the first unread record) and ``lag_s`` seconds since then (0.0 with no
    backlog; None when the source's folder or broker cannot be read: unknown).
    ``arrival_per_s``/``processed_per_s``: files (records) landed / read per second since
    ``window_from_ms`` (the planned time of the oldest of the recent committed batches);
    ``catchup_s`` backlog ÷ (processed − arrival) in seconds when that is positive, else None;
    ``catching_up`` True when caught up or draining, False when not, None when unknown (no
    committed batch to measure by). ``reason`` says why a figure is unknown."""

    kind: ClassVar[str] = "source-lag"
    id: str
    query: str
    checkpoint: str
    source: str
    source_kind: str
    at_ms: int
    backlog: int | None
    oldest_unread_ms: int | None
    lag_s: float | None
    arrival_per_s: float | None = None
    processed_per_s: float | None = None
    window_from_ms: int | None = None
    catchup_s: float | None = None
    catching_up: bool | None = None
    reason: str | None = None

    def verdict(self) -> tuple[int | None, bool | None, str | None]:
        """What a change is judged on (times excluded)."""
        return (self.backlog, self.catching_up, self.reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "id": self.id, "query": self.query, "checkpoint": self.checkpoint,
            "source": self.source, "sourceKind": self.source_kind, "atMs": self.at_ms, "backlog": self.backlog,
            "oldestUnreadMs": self.oldest_unread_ms, "lagSeconds": self.lag_s, "arrivalPerSecond": self.arrival_per_s,
            "processedPerSecond": self.processed_per_s, "windowFromMs": self.window_from_ms,
            "catchupSeconds": self.catchup_s, "catchingUp": self.catching_up, "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class QueryHealth:
    """A query's health over the watch's sliding window, emitted when it changes: the
    ``verdict`` (:class:`~streamwatch.analysis.health_window.HealthVerdict` — health, one-line
    reason and its evidence: batch id, backlog files, lag s, commits and lag samples in the
    window, runs failed on the in-flight batch), judged at ``at_ms`` (epoch ms), and the
    ``previous`` :class:`~streamwatch.analysis.health_window.Health` (None on the first)."""

    kind: ClassVar[str] = "query-health"
    id: str
    query: str
    checkpoint: str
    at_ms: int
    verdict: HealthVerdict
    previous: Health | None = None

    @property
    def health(self) -> Health:
        return self.verdict.health

    @property
    def since_ms(self) -> int:
        """Epoch ms the state dates from: the verdict's evidence, else when it was judged."""
        return self.verdict.since_ms if self.verdict.since_ms is not None else self.at_ms

    def to_dict(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "kind": self.kind, "id": self.id, "query": self.query, "checkpoint": self.checkpoint,
            "atMs": self.at_ms, "health": v.health.value,
            "previous": self.previous.value if self.previous is not None else None, "reason": v.reason,
            "sinceMs": self.since_ms, "batchId": v.batch_id, "backlog": v.backlog, "lagSeconds": v.lag_s,
            "commits": v.commits, "samples": v.samples, "failedRuns": v.failed_runs,
        }


WatchRecord = CheckpointBatch | CheckpointStatus | CheckpointFinding | PipelineEdge | SourceLag | QueryHealth
__all__ = ["BatchOutput", "CheckpointBatch", "ListenerFigures", "CheckpointFinding", "CheckpointStatus", "PipelineEdge",
           "QueryHealth", "SourceInput", "SourceLag", "StateUsage", "WatchRecord"]
