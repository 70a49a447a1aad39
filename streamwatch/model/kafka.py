"""Consumer lag of a query that reads Kafka, computed from its checkpoint and the broker
(no consumer group: Spark's Kafka source commits none; its position is the offsets log)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: A Kafka topic-partition: (topic, partition).
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One topic-partition: ``committed`` (offset the last committed batch ends at, from
    ``offsets/<batch>`` as Spark's ``KafkaSourceOffset`` writes it; None when the checkpoint
    has not reached this partition), the broker's ``earliest`` and ``latest`` offsets, and
    ``lag`` = latest − committed (records; None when unknown). ``oldest_unread_ms``: the
    broker's timestamp (the record's CreateTime or LogAppendTime, epoch ms) of the first record
    at or after ``committed`` — the oldest the query has not read; None when the partition is
    caught up or it was not fetched."""

    topic: str
    partition: int
    committed: int | None
    earliest: int
    latest: int
    oldest_unread_ms: int | None = None

    @property
    def lag(self) -> int | None:
        return None if self.committed is None else max(0, self.latest - self.committed)

    @property
    def data_lost(self) -> bool:
        """True when the checkpoint points below the broker's earliest retained offset."""
        return self.committed is not None and 0 <= self.committed < self.earliest


@dataclass(frozen=True, slots=True)
class KafkaLag:
    """One measurement of a live query's consumer lag: ``query_name``, the broker
    (``HOST:PORT``), ``partitions`` sorted by topic and partition, ``at_ms`` (epoch ms of the
    measurement) and ``error`` (one line) when the checkpoint or broker could not be read."""

    query_name: str
    bootstrap: str
    partitions: tuple[PartitionLag, ...] = ()
    at_ms: int = 0
    error: str | None = None

    @property
    def total(self) -> int | None:
        """Records behind over all partitions (None when no partition's lag is known)."""
        lags = [p.lag for p in self.partitions if p.lag is not None]
        return sum(lags) if lags else None

    @property
    def lag_s(self) -> float | None:
        """Seconds behind at ``at_ms``: since the oldest unread record's broker timestamp over
        all partitions; 0.0 when every partition is caught up; None when a partition is behind
        and its oldest unread record's time is unknown."""
        behind = [p for p in self.partitions if p.lag]
        if any(p.oldest_unread_ms is None for p in behind):
            return None
        if not self.partitions or any(p.lag is None for p in self.partitions):
            return None
        oldest = min((p.oldest_unread_ms for p in behind if p.oldest_unread_ms is not None), default=None)
        return 0.0 if oldest is None else max(0.0, (self.at_ms - oldest) / 1000)


@dataclass(frozen=True, slots=True)
class EndOffsets:
    """The broker's answer to one end-offset lookup: ``offsets`` (topic, partition) → the
    offset the next record produced will get (``ListOffsets`` with ``OffsetSpec.latest()``:
    the log end offset); ``error`` (one line) when the broker did not answer at all."""

    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    error: str | None = None
