"""The parts of a micro-batch's progress report, mirroring ``SourceProgress``,
``StateOperatorProgress`` and ``SinkProgress`` of ``org.apache.spark.sql.streaming``.

They make up :class:`streamwatch.model.events.QueryProgress` (``sources``,
``state_operators``, ``sink``). Field names follow the JSON of ``StreamingQueryProgress.json``
(camelCase there, snake_case here); every object is frozen and ``to_dict`` gives Spark's JSON
shape back.

Units: ``*_time_ms`` values are milliseconds; ``*_per_second`` values are rows/s;
``memory_used_bytes`` is bytes; offsets are the JSON text Spark reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streamwatch.model.sparkjson import json_int, json_rate, offset_text


@dataclass(frozen=True, slots=True)
class OffsetsBehindLatest:
    """Spark's Kafka source metrics (``KafkaMicroBatchStream.metrics``, in
    ``sources[].metrics``): per topic-partition, the latest offset the broker had when the
    batch was planned minus the batch's end offset — the ``min``, ``avg`` and ``max`` over the
    partitions (records; ``minOffsetsBehindLatest``/``avgOffsetsBehindLatest``/
    ``maxOffsetsBehindLatest``)."""

    min: int
    avg: float
    max: int

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, str]) -> OffsetsBehindLatest | None:
        """The three metrics, or None when a source does not report them (not Kafka, or one
        that is not a number)."""
        try:
            return cls(int(float(metrics["minOffsetsBehindLatest"])), float(metrics["avgOffsetsBehindLatest"]),
                       int(float(metrics["maxOffsetsBehindLatest"])))
        except (KeyError, ValueError, OverflowError):
            return None

    @classmethod
    def over(cls, each: list[OffsetsBehindLatest]) -> OffsetsBehindLatest | None:
        """Several Kafka sources of one query as one: the lowest min, mean avg, highest max."""
        if not each:
            return None
        return cls(min(b.min for b in each), sum(b.avg for b in each) / len(each), max(b.max for b in each))


@dataclass(frozen=True, slots=True)
class SourceProgress:
    """One entry of ``progress.sources`` (mirrors ``SourceProgress``). Offsets are kept as the
    JSON text Spark reported: ``{"logOffset":3}`` for files, topic→partition→offset for Kafka."""

    description: str
    start_offset: str | None
    end_offset: str | None
    latest_offset: str | None
    num_input_rows: int
    input_rows_per_second: float | None
    processed_rows_per_second: float | None
    metrics: Mapping[str, str] = field(default_factory=dict)

    @property
    def offsets_behind_latest(self) -> OffsetsBehindLatest | None:
        """A Kafka source's offsets behind latest (see :class:`OffsetsBehindLatest`); None
        for other sources."""
        return OffsetsBehindLatest.from_metrics(self.metrics)

    def to_dict(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "startOffset": self.start_offset,
            "endOffset": self.end_offset,
            "latestOffset": self.latest_offset,
            "numInputRows": self.num_input_rows,
            "inputRowsPerSecond": self.input_rows_per_second,
            "processedRowsPerSecond": self.processed_rows_per_second,
            "metrics": dict(self.metrics),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SourceProgress:
        return cls(
            description=str(d.get("description", "")),
            start_offset=offset_text(d.get("startOffset")),
            end_offset=offset_text(d.get("endOffset")),
            latest_offset=offset_text(d.get("latestOffset")),
            num_input_rows=json_int(d.get("numInputRows")),
            input_rows_per_second=json_rate(d.get("inputRowsPerSecond")),
            processed_rows_per_second=json_rate(d.get("processedRowsPerSecond")),
            metrics={str(k): str(v) for k, v in (d.get("metrics") or {}).items()},
        )


@dataclass(frozen=True, slots=True)
class StateOperatorProgress:
    """One entry of ``progress.stateOperators`` (mirrors ``StateOperatorProgress``)."""

    operator_name: str
    num_rows_total: int
    num_rows_updated: int
    num_rows_removed: int
    num_rows_dropped_by_watermark: int
    all_updates_time_ms: int
    all_removals_time_ms: int
    commit_time_ms: int
    memory_used_bytes: int
    num_shuffle_partitions: int
    num_state_store_instances: int
    custom_metrics: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operatorName": self.operator_name,
            "numRowsTotal": self.num_rows_total,
            "numRowsUpdated": self.num_rows_updated,
            "allUpdatesTimeMs": self.all_updates_time_ms,
            "numRowsRemoved": self.num_rows_removed,
            "allRemovalsTimeMs": self.all_removals_time_ms,
            "commitTimeMs": self.commit_time_ms,
            "memoryUsedBytes": self.memory_used_bytes,
            "numRowsDroppedByWatermark": self.num_rows_dropped_by_watermark,
            "numShufflePartitions": self.num_shuffle_partitions,
            "numStateStoreInstances": self.num_state_store_instances,
            "customMetrics": dict(self.custom_metrics),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StateOperatorProgress:
        return cls(
            operator_name=str(d.get("operatorName", "")),
            num_rows_total=json_int(d.get("numRowsTotal")),
            num_rows_updated=json_int(d.get("numRowsUpdated")),
            num_rows_removed=json_int(d.get("numRowsRemoved")),
            num_rows_dropped_by_watermark=json_int(d.get("numRowsDroppedByWatermark")),
            all_updates_time_ms=json_int(d.get("allUpdatesTimeMs")),
            all_removals_time_ms=json_int(d.get("allRemovalsTimeMs")),
            commit_time_ms=json_int(d.get("commitTimeMs")),
            memory_used_bytes=json_int(d.get("memoryUsedBytes")),
            num_shuffle_partitions=json_int(d.get("numShufflePartitions")),
            num_state_store_instances=json_int(d.get("numStateStoreInstances")),
            custom_metrics={str(k): json_int(v) for k, v in (d.get("customMetrics") or {}).items()},
        )


@dataclass(frozen=True, slots=True)
class SinkProgress:
    """``progress.sink`` (mirrors ``SinkProgress``); ``num_output_rows`` is -1 when the sink
    cannot count (Spark's own convention)."""

    description: str
    num_output_rows: int
    metrics: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"description": self.description, "numOutputRows": self.num_output_rows, "metrics": dict(self.metrics)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SinkProgress:
        return cls(
            description=str(d.get("description", "")),
            num_output_rows=json_int(d.get("numOutputRows"), default=-1),
            metrics={str(k): str(v) for k, v in (d.get("metrics") or {}).items()},
        )
