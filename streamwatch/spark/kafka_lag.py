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
import threading
import time
from collections.abc import Callable, Mapping

from streamwatch.checkpoint.reader import read_checkpoint
from streamwatch.errors import one_line
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.findings import Finding
from streamwatch.model.kafka import KafkaLag, PartitionLag


def checkpoint_kafka_offsets(path: str | os.PathLike[str], cp: Checkpoint | None = None) -> dict[str, dict[int, int]]:
    """Kafka offsets of the last committed batch of the checkpoint at ``path`` (or of ``cp``,
    a :class:`~streamwatch.model.checkpoint.Checkpoint` already read): topic → partition →
    offset, merged over all its Kafka sources; {} when none."""
    cp = cp if cp is not None else read_checkpoint(path, full=False)
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


def oldest_unread_times(bootstrap: str, positions: Mapping[tuple[str, int], int], timeout_s: float = 30.0
                        ) -> dict[tuple[str, int], int]:
    """(topic, partition) → the broker timestamp (epoch ms) of the first record at or after
    the offset in ``positions``: one fetch per partition, by a consumer that joins no group
    and commits nothing. A partition whose record does not arrive within ``timeout_s`` s is
    left out (unknown)."""
    if not positions:
        return {}
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "streamwatch-lag", "enable.auto.commit": False,
                  "enable.partition.eof": False, "max.partition.fetch.bytes": 65536})
    out: dict[tuple[str, int], int] = {}
    try:
        c.assign([TopicPartition(t, p, off) for (t, p), off in positions.items()])
        deadline = time.monotonic() + timeout_s
        while len(out) < len(positions) and time.monotonic() < deadline:
            for m in c.consume(num_messages=len(positions), timeout=max(0.05, min(1.0, deadline - time.monotonic()))):
                topic, partition = m.topic(), m.partition()
                if topic is None or partition is None or m.error() is not None:
                    continue
                key = (topic, partition)
                if key in out or key not in positions:
                    continue
                ts_type, ts = m.timestamp()
                if ts_type != 0 and ts >= 0:  # 0: TIMESTAMP_NOT_AVAILABLE
                    out[key] = ts
                c.pause([TopicPartition(key[0], key[1])])
    finally:
        c.close()
    return out


def broker_lag(committed: Mapping[str, Mapping[int, int]], bootstrap: str, timeout_s: float = 30.0,
               *, times: bool = True) -> list[PartitionLag]:
    """Per-partition lag of ``committed`` offsets (topic → partition → offset) against the
    broker at ``bootstrap`` (``HOST:PORT``): every partition the broker has for those topics,
    sorted; with ``times``, the broker timestamp of each behind partition's oldest unread
    record (:func:`oldest_unread_times`). Raises ``confluent_kafka.KafkaException`` when the
    broker does not answer within ``timeout_s`` s."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]  # not in its __all__

    admin = AdminClient({"bootstrap.servers": bootstrap})
    meta = admin.list_topics(timeout=timeout_s)
    tps = [TopicPartition(t, p) for t in committed if t in meta.topics for p in meta.topics[t].partitions]

    def offsets(spec: OffsetSpec) -> dict[tuple[str, int], int]:
        if not tps:
            return {}
        futs = admin.list_offsets({tp: spec for tp in tps}, request_timeout=timeout_s)
        return {(tp.topic, tp.partition): f.result(timeout_s).offset for tp, f in futs.items()}

    # confluent-kafka leaves OffsetSpec's factory methods unannotated
    earliest = offsets(OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    latest = offsets(OffsetSpec.latest())  # type: ignore[no-untyped-call]
    behind: dict[tuple[str, int], int] = {}
    for (t, p), last in latest.items():
        at = committed[t].get(p)
        if times and at is not None and at < last:
            behind[(t, p)] = max(at, earliest[(t, p)])  # below the earliest: retention deleted them
    stamps = oldest_unread_times(bootstrap, behind, timeout_s)
    return sorted((PartitionLag(t, p, committed[t].get(p), earliest[(t, p)], latest[(t, p)], stamps.get((t, p)))
                   for t, p in earliest), key=lambda x: (x.topic, x.partition))


def data_lost_findings(lags: list[PartitionLag], path: str) -> list[Finding]:
    """An error finding (``kafka-data-lost``) per partition whose committed offset is older
    than the broker's earliest retained offset."""
    return [
        Finding("error", "kafka-data-lost",
                f"{x.topic}-{x.partition}: checkpoint offset {x.committed} is older than the broker's earliest "
                f"retained offset {x.earliest}; {x.earliest - (x.committed or 0)} records were deleted before "
                "the query read them (failOnDataLoss=true fails the query)", path)
        for x in lags if x.data_lost
    ]


def kafka_lag(path: str | os.PathLike[str], bootstrap: str, timeout_s: float = 30.0
              ) -> tuple[list[PartitionLag], list[Finding]]:
    """Per-partition lag of the checkpoint at ``path`` against the broker at ``bootstrap``
    (``HOST:PORT``), plus an error finding per partition whose committed offset is older than
    the broker's earliest retained offset. Raises ``confluent_kafka.KafkaException`` when the
    broker does not answer within ``timeout_s`` s."""
    lags = broker_lag(checkpoint_kafka_offsets(path), bootstrap, timeout_s)
    return lags, data_lost_findings(lags, str(path))


class LagPoller:
    """Measures the consumer lag of live queries every ``every_s`` s on a daemon thread and
    hands each measurement (:class:`~streamwatch.model.kafka.KafkaLag`, one per query; with
    ``error`` set when the checkpoint or broker could not be read) to ``emit``.
    ``checkpoints`` maps query name → checkpoint folder (read-only). ``stop()`` ends it."""

    def __init__(self, checkpoints: Mapping[str, str], bootstrap: str, emit: Callable[[object], None],
                 every_s: float = 2.0, timeout_s: float = 5.0) -> None:
        self.checkpoints = dict(checkpoints)
        self.bootstrap, self.emit = bootstrap, emit
        self.every_s, self.timeout_s = every_s, timeout_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="streamwatch-kafka-lag", daemon=True)

    def measure(self, query_name: str) -> KafkaLag:
        """One measurement of ``query_name`` now (never raises)."""
        now = int(time.time() * 1000)
        try:
            committed = checkpoint_kafka_offsets(self.checkpoints[query_name])
            lags = broker_lag(committed, self.bootstrap, self.timeout_s) if committed else []
        except Exception as e:  # noqa: BLE001 - not written yet, broker away: shown, never fatal
            return KafkaLag(query_name, self.bootstrap, (), now, one_line(e))
        return KafkaLag(query_name, self.bootstrap, tuple(lags), now)

    def _run(self) -> None:
        while not self._stop.is_set():
            for name in self.checkpoints:
                if self._stop.is_set():
                    return
                self.emit(self.measure(name))
            self._stop.wait(self.every_s)

    def start(self) -> LagPoller:
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


__all__ = ["LagPoller", "PartitionLag", "broker_lag", "checkpoint_kafka_offsets", "data_lost_findings", "kafka_lag",
           "oldest_unread_times"]
