"""Consumer lag of a Structured Streaming query that reads Kafka, without a consumer group.

Spark's Kafka source commits no consumer-group offsets; its position is the checkpoint's
offsets log. Lag per topic-partition = the broker's latest offset minus the offset the last
committed batch ends at (``offsets/<last committed>``, ``{"topic": {"partition": offset}}``,
mirroring ``KafkaSourceOffset``). A checkpoint offset below the broker's earliest retained
offset means records were deleted by retention before the query read them — what the source's
``failOnDataLoss`` fails on. Works while the query is down (only the checkpoint is read, never
written). Needs ``confluent-kafka``; no pyspark.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from streamwatch.checkpoint.reader import read_checkpoint
from streamwatch.model.findings import Finding


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """One topic-partition: ``committed`` (offset the last committed batch ends at; None when
    the checkpoint has not reached this partition), the broker's ``earliest`` and ``latest``
    offsets, and ``lag`` = latest − committed (records; None when unknown)."""

    topic: str
    partition: int
    committed: int | None
    earliest: int
    latest: int

    @property
    def lag(self) -> int | None:
        return None if self.committed is None else max(0, self.latest - self.committed)

    @property
    def data_lost(self) -> bool:
        """True when the checkpoint points below the broker's earliest retained offset."""
        return self.committed is not None and 0 <= self.committed < self.earliest


def checkpoint_kafka_offsets(path: str | os.PathLike[str]) -> dict[str, dict[int, int]]:
    """Kafka offsets of the last committed batch of the checkpoint at ``path``: topic →
    partition → offset, merged over all its Kafka sources; {} when none."""
    cp = read_checkpoint(path, full=False)
    batch = cp.last_committed_batch_id
    entry = cp.offsets_for(batch) if batch is not None else None
    out: dict[str, dict[int, int]] = {}
    if entry is None:
        return out
    for p in entry.parsed:
        if p is None or p.kind != "kafka":
            continue
        for topic, parts in p.fields.items():
            out.setdefault(topic, {}).update({int(k): int(v) for k, v in parts.items()})
    return out


def kafka_lag(path: str | os.PathLike[str], bootstrap: str, timeout_s: float = 30.0
              ) -> tuple[list[PartitionLag], list[Finding]]:
    """Per-partition lag of the checkpoint at ``path`` against the broker at ``bootstrap``
    (``HOST:PORT``), plus an error finding per partition whose committed offset is older than
    the broker's earliest retained offset. Raises ``confluent_kafka.KafkaException`` when the
    broker does not answer within ``timeout_s`` s."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    committed = checkpoint_kafka_offsets(path)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(timeout=timeout_s)
    tps = [TopicPartition(t, p) for t in committed if t in meta.topics for p in meta.topics[t].partitions]

    def offsets(spec) -> dict[tuple[str, int], int]:
        if not tps:
            return {}
        futs = admin.list_offsets({tp: spec for tp in tps}, request_timeout=timeout_s)
        return {(tp.topic, tp.partition): f.result(timeout_s).offset for tp, f in futs.items()}

    earliest, latest = offsets(OffsetSpec.earliest()), offsets(OffsetSpec.latest())
    lags = sorted((PartitionLag(t, p, committed[t].get(p), earliest[(t, p)], latest[(t, p)])
                   for t, p in earliest), key=lambda x: (x.topic, x.partition))
    findings = [
        Finding("error", "kafka-data-lost",
                f"{x.topic}-{x.partition}: checkpoint offset {x.committed} is older than the broker's earliest "
                f"retained offset {x.earliest}; {x.earliest - (x.committed or 0)} records were deleted before "
                "the query read them (failOnDataLoss=true fails the query)", str(path))
        for x in lags if x.data_lost
    ]
    return lags, findings
