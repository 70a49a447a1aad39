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
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING

from streamwatch.checkpoint.reader import read_checkpoint
from streamwatch.errors import one_line
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.findings import Finding
from streamwatch.model.kafka import EndOffsets, KafkaLag, PartitionLag, TopicPartition

if TYPE_CHECKING:
    from confluent_kafka import Consumer


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


def _fetch_consumer(bootstrap: str, extra: Mapping[str, object] | None = None) -> Consumer:
    """A consumer that joins no group and commits nothing, for :func:`first_records`."""
    from confluent_kafka import Consumer

    return Consumer({"bootstrap.servers": bootstrap, "group.id": "streamwatch-lag", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "enable.partition.eof": False,
                     "max.partition.fetch.bytes": 65536, "fetch.wait.max.ms": 50, **(extra or {})})


#: Records already queued by the consumer taken at once (their timestamps are kept too).
BATCH_RECORDS = 1000


def first_records(c: Consumer, positions: Mapping[tuple[str, int], int], timeout_s: float
                  ) -> dict[tuple[str, int, int], int]:
    """Broker timestamps (epoch ms) by (topic, partition, offset), read by consumer ``c``
    assigned ``positions`` ((topic, partition) → offset): for each asked offset, the first
    record at or after it (an offset below the earliest retained one starts at the earliest);
    and for every further record the same fetches returned (up to ``max.partition.fetch.bytes``
    per partition), its own offset — no extra request, and a later look-up of an offset a few
    records on needs none. Each partition is paused once its first record came and all are
    unassigned at the end: nothing is fetched between calls. A partition whose record does not
    arrive within ``timeout_s`` s is left out (unknown)."""
    from confluent_kafka import TopicPartition

    out: dict[tuple[str, int, int], int] = {}
    first: set[tuple[str, int]] = set()
    tps = [TopicPartition(t, p, off) for (t, p), off in positions.items()]
    c.assign(tps)
    try:
        c.resume(tps)  # a pause left from an earlier call on the same partition
        deadline = time.monotonic() + timeout_s
        while len(first) < len(positions) and time.monotonic() < deadline:
            wait = max(0.05, min(1.0, deadline - time.monotonic()))
            # returns once as many records as partitions still wait are queued; then the rest queued, at once
            got = c.consume(num_messages=len(positions) - len(first), timeout=wait)
            for m in [*got, *c.consume(num_messages=BATCH_RECORDS, timeout=0)]:
                topic, partition, offset = m.topic(), m.partition(), m.offset()
                ts_type, ts = m.timestamp()
                if topic is None or partition is None or offset is None or m.error() is not None \
                        or (topic, partition) not in positions or ts_type == 0 or ts < 0:  # 0: TIMESTAMP_NOT_AVAILABLE
                    continue
                if offset < positions[(topic, partition)]:  # reset to the earliest for another cause than retention
                    continue
                out[(topic, partition, offset)] = ts
                if (topic, partition) not in first:
                    first.add((topic, partition))
                    out[(topic, partition, positions[(topic, partition)])] = ts
                    c.pause([TopicPartition(topic, partition)])
    finally:
        c.unassign()
    return out


def oldest_unread_times(bootstrap: str, positions: Mapping[tuple[str, int], int], timeout_s: float = 30.0
                        ) -> dict[tuple[str, int], int]:
    """(topic, partition) → the broker timestamp (epoch ms) of the first record at or after
    the offset in ``positions`` (:func:`first_records`, by a consumer of its own, closed
    after)."""
    if not positions:
        return {}
    c = _fetch_consumer(bootstrap)
    try:
        got = first_records(c, positions, timeout_s)
    finally:
        c.close()
    return {(t, p): got[(t, p, off)] for (t, p), off in positions.items() if (t, p, off) in got}


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


class BrokerOffsets:
    """The one door of ``streamwatch watch --bootstrap`` to the broker at ``bootstrap``
    (``HOST:PORT``), implementing :class:`streamwatch.analysis.watch.KafkaBroker`: one admin
    and one consumer kept across polls; :meth:`end_offsets` is one ``ListOffsets`` lookup
    (latest) for any number of partitions, :meth:`first_record_ms` one fetch round for the
    partitions asked (:func:`first_records`). ``timeout_s`` bounds each. Neither raises: a
    broker that does not answer is an :class:`~streamwatch.analysis.watch.EndOffsets`
    ``error``, a record that does not come back is left out. ``stats_cb``: librdkafka's
    statistics JSON of both clients every ``stats_ms`` ms, served by :meth:`serve_stats`
    (per-broker request counts, ``brokers.*.req``: how the benchmark counts requests)."""

    def __init__(self, bootstrap: str, timeout_s: float = 5.0, stats_cb: Callable[[str], None] | None = None,
                 stats_ms: int = 100) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap, self.timeout_s = bootstrap, timeout_s
        self._stats: dict[str, object] = {"stats_cb": stats_cb, "statistics.interval.ms": stats_ms} if stats_cb else {}
        # the stub types conf values as str/int/float/bool; librdkafka's stats_cb is a callable
        self.admin = AdminClient({"bootstrap.servers": bootstrap, **self._stats})  # type: ignore[dict-item]
        self._consumer: Consumer | None = None

    def serve_stats(self) -> None:
        """Run the clients' pending callbacks (``stats_cb``) now."""
        self.admin.poll(0)
        if self._consumer is not None:
            self._consumer.poll(0)  # unassigned between calls: serves callbacks, reads nothing

    def close(self) -> None:
        """Close the fetch consumer (the admin client closes when collected)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def end_offsets(self, partitions: Collection[TopicPartition]) -> EndOffsets:
        """(topic, partition) → the broker's log end offset, for all ``partitions`` in one lookup;
        a partition the broker does not know is left out."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KafkaPartition
        from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # not in its __all__

        if not partitions:
            return EndOffsets()
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # unannotated factory
        try:
            futs = self.admin.list_offsets({KafkaPartition(t, p): latest for t, p in partitions},
                                           request_timeout=self.timeout_s)
        except (KafkaException, ValueError) as e:
            return EndOffsets(error=one_line(e))
        out: dict[TopicPartition, int] = {}
        errors: list[str] = []
        for tp, f in futs.items():
            try:
                out[(tp.topic, tp.partition)] = f.result(self.timeout_s).offset
            except Exception as e:  # noqa: BLE001 - KafkaException, a timeout: this partition unknown
                errors.append(one_line(e))
        if not out and errors:  # nothing answered: the broker, not a partition
            return EndOffsets(error=errors[0])
        return EndOffsets(out)

    def first_record_ms(self, positions: Mapping[TopicPartition, int]) -> dict[tuple[str, int, int], int]:
        """Broker timestamps (epoch ms) by (topic, partition, offset): of the record at or
        after each offset in ``positions`` and of the further records the same fetches
        returned (:func:`first_records`); partitions without one within ``timeout_s`` left out."""
        if not positions:
            return {}
        try:
            if self._consumer is None:
                self._consumer = _fetch_consumer(self.bootstrap, self._stats)
            return first_records(self._consumer, positions, self.timeout_s)
        except Exception:  # noqa: BLE001 - KafkaException: unknown this poll, asked again the next
            return {}


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


__all__ = ["BrokerOffsets", "LagPoller", "PartitionLag", "broker_lag", "checkpoint_kafka_offsets", "data_lost_findings", "kafka_lag",
           "oldest_unread_times"]
