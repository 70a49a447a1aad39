"""A Kafka source's backlog on the broker, for ``advise-max-offsets-per-trigger``
(:mod:`streamwatch.analysis.advice_offsets`): records behind now (the broker's latest
offsets − the last committed batch's end offsets) and when a recent batch was planned (the
broker's offsets at its ``batchTimestampMs``, Kafka ``ListOffsets`` by timestamp: the first
offset whose record timestamp is at or after it). Two ``ListOffsets`` requests per source; no
consumer group, nothing written. Needs ``confluent-kafka``; no pyspark.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from streamwatch.analysis.advice_offsets import LIMIT_BATCHES, KafkaBacklog, KafkaReads
from streamwatch.errors import one_line


def _list(admin: object, tps: Sequence[tuple[str, int]], spec: object, timeout_s: float) -> dict[tuple[str, int], int]:
    from confluent_kafka import TopicPartition

    futs = admin.list_offsets({TopicPartition(t, p): spec for t, p in tps},  # type: ignore[attr-defined]
                              request_timeout=timeout_s)
    return {(tp.topic, tp.partition): f.result(timeout_s).offset for tp, f in futs.items()}


def kafka_backlogs(bootstrap: str, reads: Sequence[KafkaReads], timeout_s: float = 15.0) -> dict[str, KafkaBacklog]:
    """Each Kafka source of ``reads`` (by source id) → its :class:`KafkaBacklog` on the broker at
    ``bootstrap`` (``HOST:PORT``); the window batch is the :data:`LIMIT_BATCHES`-th most recent
    (its start: the end offsets of the batch before it). A broker that does not answer within
    ``timeout_s`` s gives a backlog with ``error`` set (never raises)."""
    from confluent_kafka.admin import AdminClient

    out: dict[str, KafkaBacklog] = {}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for r in reads:
        if not r.batches:
            continue
        now = int(time.time() * 1000)
        try:
            out[r.source] = _measure(admin, r, now, timeout_s)
        except Exception as e:  # noqa: BLE001 - KafkaException and timeouts: one line, the rule says unknown
            out[r.source] = KafkaBacklog(r.source, now, error=f"Kafka broker {bootstrap} did not answer: {one_line(e)}")
    return out


def _measure(admin: object, r: KafkaReads, now: int, timeout_s: float) -> KafkaBacklog:
    from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # not in its __all__

    last = r.batches[-1]
    tps = [(t, int(p)) for t, parts in last.end.items() for p in parts]
    latest = _list(admin, tps, OffsetSpec.latest(), timeout_s)  # type: ignore[no-untyped-call]
    behind = sum(max(0, latest[(t, p)] - int(last.end[t][str(p)])) for t, p in tps if (t, p) in latest)
    if len(r.batches) <= LIMIT_BATCHES:
        return KafkaBacklog(r.source, now, behind)
    window, before = r.batches[-LIMIT_BATCHES], r.batches[-LIMIT_BATCHES - 1]
    if window.planned_ms is None:
        return KafkaBacklog(r.source, now, behind)
    at = _list(admin, tps, OffsetSpec.for_timestamp(window.planned_ms), timeout_s)
    # -1: no record at or after that time: every record the partition holds now was there then
    then = {tp: latest[tp] if o < 0 else o for tp, o in at.items() if tp in latest}
    start: Mapping[str, Mapping[str, int]] = before.end
    behind_then = sum(max(0, o - int(start.get(t, {}).get(str(p), 0))) for (t, p), o in then.items())
    landed = sum(max(0, latest[tp] - o) for tp, o in then.items())
    return KafkaBacklog(r.source, now, behind, window.batch_id, window.planned_ms, behind_then, landed)
