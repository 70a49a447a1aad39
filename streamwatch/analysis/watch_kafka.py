"""Kafka sources' lag for ``streamwatch watch --bootstrap``: one broker shared by every watcher
of a watch (:class:`KafkaOffsets`: one end-offset lookup a poll for all partitions, first
records fetched once per (topic, partition, offset)) and each source's :class:`SourceLag`
from its committed offsets (:func:`kafka_source_lag`). The broker is asked through the
:class:`KafkaBroker` protocol (the adapter: :class:`streamwatch.spark.kafka_lag.BrokerOffsets`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

from streamwatch.analysis.records import SourceLag
from streamwatch.model.batchlogs import OffsetLogEntry
from streamwatch.model.kafka import EndOffsets, TopicPartition

#: First-record timestamps kept (per topic, partition, offset) across polls.
FIRST_RECORD_CACHE = 100_000
#: Kafka lag samples kept per source for the arrival/processed rates.
KAFKA_SAMPLES = 64



class KafkaBroker(Protocol):
    """What the watch asks a Kafka broker (implemented by
    :class:`streamwatch.spark.kafka_lag.BrokerOffsets`, the adapter): the end offsets of many
    partitions in one lookup, and broker timestamps (epoch ms: CreateTime or LogAppendTime) by
    (topic, partition, offset) — of the record at or after each given offset, keyed by that
    offset, and of any further record the same fetch returned, keyed by its own; partitions
    whose record did not come back are left out. Neither raises. ``close`` lets go of the
    connections."""

    bootstrap: str

    def end_offsets(self, partitions: Collection[TopicPartition]) -> EndOffsets: ...

    def first_record_ms(self, positions: Mapping[TopicPartition, int]) -> Mapping[tuple[str, int, int], int]: ...

    def close(self) -> None: ...


class KafkaOffsets:
    """One broker's offsets shared by every watcher of a watch, so a poll costs one end-offset
    lookup for all partitions of all watched queries, and a first-record fetch only for a
    (topic, partition, offset) never fetched before (the committed offset moved). Call
    :meth:`next_poll` before each poll: the first watcher to ask then refreshes the end offsets
    of every partition asked so far in one lookup; a partition first asked later in the same
    poll costs one more lookup (for those alone)."""

    def __init__(self, broker: KafkaBroker) -> None:
        self.broker = broker
        self.bootstrap = broker.bootstrap
        self.known: set[TopicPartition] = set()
        self._latest: dict[TopicPartition, int] = {}
        self._asked: set[TopicPartition] = set()
        self._error: str | None = None
        self._first: OrderedDict[tuple[str, int, int], int] = OrderedDict()

    def close(self) -> None:
        """Close the broker's clients."""
        self.broker.close()

    def next_poll(self) -> None:
        """Forget this poll's end offsets (the next :meth:`end_offsets` asks the broker)."""
        self._latest, self._asked, self._error = {}, set(), None

    def end_offsets(self, partitions: Collection[TopicPartition]) -> EndOffsets:
        """End offsets of ``partitions`` as of this poll (see the class)."""
        missing = set(partitions) - self._asked
        if missing and self._error is None:
            ask = (self.known | missing) if not self._asked else missing
            got = self.broker.end_offsets(sorted(ask))
            self._asked |= ask
            self._latest.update(got.offsets)
            self._error = got.error
        self.known |= set(partitions)
        return EndOffsets({tp: self._latest[tp] for tp in partitions if tp in self._latest}, self._error)

    def first_record_ms(self, positions: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Broker timestamp (epoch ms) of the record at or after each offset; a
        (topic, partition, offset) is fetched once and kept with the timestamps of the records
        the same fetch returned after it (the newest :data:`FIRST_RECORD_CACHE`)."""
        misses = {tp: off for tp, off in positions.items() if (*tp, off) not in self._first}
        if misses:
            self._first.update(self.broker.first_record_ms(misses))
            while len(self._first) > FIRST_RECORD_CACHE:
                self._first.popitem(last=False)
        out = {}
        for tp, off in positions.items():
            if (stamp := self._first.get((*tp, off))) is not None:
                self._first.move_to_end((*tp, off))
                out[tp] = stamp
        return out


@dataclass(frozen=True, slots=True)
class KafkaSample:
    """One measurement of a Kafka source: at ``at_ms``, the records its committed offsets and
    the broker's end offsets sum to over its partitions (for the rates)."""

    at_ms: int
    committed: int
    latest: int
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class Pace:
    """What a source's catch-up is judged by: ``window_from_ms`` (the planned time of the
    oldest recent committed batch), ``planned_since_ms`` (of the latest planned batch) and
    ``patience_ms`` (how long work may wait with no batch planned; None: unknown)."""

    window_from_ms: int | None
    planned_since_ms: int | None
    patience_ms: int | None


def _catchup(backlog: int, arrival: float | None, processed: float | None, now_ms: int,
             pace: Pace) -> tuple[float | None, bool | None]:
    """(catchupSeconds, catchingUp) by the rules of :mod:`streamwatch.analysis.lag`."""
    if backlog == 0:
        return 0.0, True
    if pace.planned_since_ms is not None and pace.patience_ms is not None and \
            now_ms - pace.planned_since_ms > pace.patience_ms:
        return None, False  # records wait and no batch was planned for longer than the cadence allows
    if arrival is None or processed is None:
        return None, None
    if processed > arrival:
        return backlog / (processed - arrival), True
    return None, False


def kafka_source_lag(who: tuple[str, str, str], source: str, committed: Mapping[TopicPartition, int],
                     kafka: KafkaOffsets, now_ms: int, samples: deque[KafkaSample], pace: Pace) -> SourceLag:
    """The :class:`SourceLag` of Kafka source ``source`` of query ``who`` (id, name,
    checkpoint) whose newest committed batch ends at ``committed`` (``offsets/N``,
    ``KafkaSourceOffset``: the next offset to read per partition). ``backlog``: records behind
    (broker end offset − committed, summed); ``oldestUnreadMs``: the broker timestamp of the
    first record after the committed offset, oldest over the partitions behind; ``lagSeconds``
    = now − that (0.0 with none behind). Rates (records/s) from ``samples`` — this source's
    earlier measurements, appended to — since the oldest taken at or after
    ``pace.window_from_ms``: arrival = end offsets' advance, processed = committed offsets'
    advance. Unknown, with a ``reason``, when the broker cannot tell."""
    qid, query, checkpoint = who

    def unknown(reason: str) -> SourceLag:
        return SourceLag(qid, query, checkpoint, source, "kafka", now_ms, None, None, None, reason=reason)

    ends = kafka.end_offsets(committed.keys())
    if ends.error is not None:
        return unknown(f"the Kafka broker {kafka.bootstrap} did not answer: {ends.error}")
    gone = sorted(tp for tp in committed if tp not in ends.offsets)
    if gone:
        return unknown(f"the Kafka broker {kafka.bootstrap} has no end offset for {gone[0][0]}-{gone[0][1]}")
    behind = {tp: off for tp, off in committed.items() if off < ends.offsets[tp]}
    backlog = sum(ends.offsets[tp] - off for tp, off in behind.items())
    stamps = kafka.first_record_ms(behind)
    late = sorted(tp for tp in behind if tp not in stamps)
    sample = KafkaSample(now_ms, sum(committed.values()), sum(ends.offsets[tp] for tp in committed),
                          frozenset(committed))
    if samples and samples[-1].partitions != sample.partitions:
        samples.clear()  # partitions added or removed: the sums no longer compare
    first = next((s for s in samples if pace.window_from_ms is None or s.at_ms >= pace.window_from_ms), None)
    samples.append(sample)
    arrival = processed = None
    if first is not None and now_ms > first.at_ms:
        span_s = (now_ms - first.at_ms) / 1000
        arrival, processed = (sample.latest - first.latest) / span_s, (sample.committed - first.committed) / span_s
    catchup_s, catching_up = _catchup(backlog, arrival, processed, now_ms, pace)
    oldest = min(stamps.values()) if behind and not late else None
    lag_s = 0.0 if not behind else None if oldest is None else max(0.0, (now_ms - oldest) / 1000)
    reason = None
    if late:
        t, p = late[0]
        reason = (f"the Kafka broker {kafka.bootstrap} returned no timestamped record at offset {behind[late[0]]} "
                  f"of {t}-{p}")
    return SourceLag(qid, query, checkpoint, source, "kafka", now_ms, backlog, oldest, lag_s, arrival, processed,
                     first.at_ms if arrival is not None and first is not None else None, catchup_s, catching_up,
                     reason)


class KafkaSourceLags:
    """One watcher's Kafka sources measured against the watch's shared :class:`KafkaOffsets`,
    each source's earlier samples kept for its rates."""

    def __init__(self, offsets: KafkaOffsets) -> None:
        self.offsets = offsets
        self._samples: dict[str, deque[KafkaSample]] = {}

    @staticmethod
    def sources_in(entry: OffsetLogEntry | None) -> list[str]:
        """Ids of the Kafka sources of ``entry`` (the newest ``offsets/N``; none without one)."""
        if entry is None:
            return []
        return [entry.source_id(i) for i, p in enumerate(entry.parsed) if p is not None and p.kind == "kafka"]

    def measure(self, who: tuple[str, str, str], newest: OffsetLogEntry | None, committed: OffsetLogEntry | None,
                now_ms: int, pace: Pace) -> list[SourceLag]:
        """The :class:`SourceLag` of each Kafka source of ``newest`` (query ``who``: id, name,
        checkpoint) against its offsets in ``committed`` (``offsets/N`` of the newest committed
        batch; None before the first commit: unknown, with the reason)."""
        out = []
        for sid in self.sources_in(newest):
            pos = committed.position(sid) if committed is not None else None
            parsed = committed.parsed[pos] if committed is not None and pos is not None and pos < len(committed.parsed) else None
            if parsed is None or parsed.kind != "kafka":
                out.append(SourceLag(*who, sid, "kafka", now_ms, None, None, None,
                                     reason="no committed batch has read this source yet"))
                continue
            ends = {(t, int(p)): int(off) for t, parts in parsed.kafka_partitions.items() for p, off in parts.items()}
            samples = self._samples.setdefault(sid, deque(maxlen=KAFKA_SAMPLES))
            out.append(kafka_source_lag(who, sid, ends, self.offsets, now_ms, samples, pace))
        return out
