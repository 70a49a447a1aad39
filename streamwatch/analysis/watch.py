"""Follow one Structured Streaming checkpoint incrementally, from its files alone (no
listener, no Spark): :class:`CheckpointWatcher`.

``open()`` reads the checkpoint once with the inspector (summary read: query id, sink folder,
state operators, findings) and derives the last ``history`` committed batches; every
``poll()`` then looks only past the end of each log — ``offsets/N+1``, ``commits/M+1`` — and,
for each newly committed batch, reads just that batch's source-log, sink-log, Delta and state
files. An idle poll costs two look-ups per checkpoint, whatever the checkpoint's size.

Derived per batch (:class:`~streamwatch.analysis.records.CheckpointBatch`): planned at
(``batchTimestampMs``), committed at (``commits/N`` modification time), duration, trigger
interval, idle gap, watermark movement, input per source, output, state. Per query
(:class:`~streamwatch.analysis.records.CheckpointStatus`): in-flight batch and for how long,
**stuck** (offsets N without commit N for longer than its recent batches make plausible: 5 ×
the slowest, at least two trigger intervals and 10 s) and **idle**
(nothing planned for longer than 2 × the cadence). Inspector findings
(:mod:`streamwatch.checkpoint.health`) are re-checked on the recent window after each change
and emitted once (``in-flight-batch`` — batch N planned, not committed: Spark runs it again on
restart — is left to the status record). The query's health over the sliding window
(:class:`~streamwatch.analysis.records.QueryHealth`, judged by
:func:`~streamwatch.analysis.health_window.judge_health` on the recent batches, the status,
the lag samples and — when :meth:`CheckpointWatcher.observe_run` is fed a recording's run
events — the runs) is emitted when it changes, ahead of the poll's status and lag records.
"""

from __future__ import annotations

import statistics
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any, Protocol

from streamwatch.analysis.batchio import DeltaSinkReader, FileSinkReader, SourceReader, StateReader
from streamwatch.analysis.diagnosis import stuck_limit_ms
from streamwatch.analysis.health_track import HealthTracker, WatchedQuery
from streamwatch.analysis.health_window import Health, HealthWindow
from streamwatch.analysis.lag import FileSourceLag
from streamwatch.analysis.probe import Probe, ProbeError
from streamwatch.analysis.records import CheckpointBatch, CheckpointFinding, CheckpointStatus, QueryHealth, SourceLag
from streamwatch.checkpoint import CheckpointError, health, read_checkpoint
from streamwatch.checkpoint.filelog import read_file_log
from streamwatch.checkpoint.fs import StorageError, open_storage
from streamwatch.checkpoint.logs import parse_offsets
from streamwatch.checkpoint.spark4 import find_repartitions
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.batchlogs import OffsetLogEntry
from streamwatch.model.checkpoint import Checkpoint, SourceLog
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.findings import Finding

IDLE_FACTOR = 2
CADENCE_BATCHES = 20
#: File sources' folders are listed for their lag about this often (s), not every poll: an
#: idle poll stays two look-ups; the listing is one request per file source.
LAG_EVERY_S = 5.0
#: Findings that the status record reports better (they flip with every batch).
TRANSIENT_CODES = frozenset({"in-flight-batch", "no-commits"})

WatchRecord = CheckpointBatch | CheckpointStatus | CheckpointFinding | SourceLag | QueryHealth
#: A Kafka topic-partition: (topic, partition).
TopicPartition = tuple[str, int]
#: First-record timestamps kept (per topic, partition, offset) across polls.
FIRST_RECORD_CACHE = 100_000
#: Kafka lag samples kept per source for the arrival/processed rates.
KAFKA_SAMPLES = 64


class WatchError(StreamwatchError):
    """A PATH cannot be watched (missing, unreadable, not a checkpoint, unknown protocol)."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class EndOffsets:
    """The broker's answer to one end-offset lookup: ``offsets`` (topic, partition) → the
    offset the next record produced will get (``ListOffsets`` with ``OffsetSpec.latest()``:
    the log end offset); ``error`` (one line) when the broker did not answer at all."""

    offsets: Mapping[TopicPartition, int] = field(default_factory=dict)
    error: str | None = None


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
class _KafkaSample:
    """One measurement of a Kafka source: at ``at_ms``, the records its committed offsets and
    the broker's end offsets sum to over its partitions (for the rates)."""

    at_ms: int
    committed: int
    latest: int
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class _Pace:
    """What a source's catch-up is judged by: ``window_from_ms`` (the planned time of the
    oldest recent committed batch), ``planned_since_ms`` (of the latest planned batch) and
    ``patience_ms`` (how long work may wait with no batch planned; None: unknown)."""

    window_from_ms: int | None
    planned_since_ms: int | None
    patience_ms: int | None


def _catchup(backlog: int, arrival: float | None, processed: float | None, now_ms: int,
             pace: _Pace) -> tuple[float | None, bool | None]:
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
                     kafka: KafkaOffsets, now_ms: int, samples: deque[_KafkaSample], pace: _Pace) -> SourceLag:
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
    sample = _KafkaSample(now_ms, sum(committed.values()), sum(ends.offsets[tp] for tp in committed),
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


def _ids(names: list[str] | None) -> list[int]:
    return sorted(int(n) for n in names or () if n.isdecimal())


class CheckpointWatcher:
    """Watches the checkpoint at ``url`` (local path or fsspec URL) under the display
    ``name``. ``history``: committed batches derived at ``open()`` (and offsets kept);
    ``poll_s``: the poll interval, used as a floor for the stuck/idle thresholds;
    ``clock`` returns epoch seconds. ``sink``: the file-sink folder or Delta table when not
    discoverable from a streamwatch workspace layout. ``kafka``: the broker's offsets shared
    by the watch (None: Kafka sources get no lag).

    Raises :class:`WatchError` from :meth:`open` when ``url`` is not a readable checkpoint."""

    def __init__(self, url: str, name: str | None = None, *, history: int = 100, poll_s: float = 1.0,
                 sink: str | None = None, storage_options: dict[str, Any] | None = None,
                 clock: Callable[[], float] = time.time, file_sizes: bool = True,
                 kafka: KafkaOffsets | None = None) -> None:
        self.url = url
        self.kafka = kafka
        self._kafka_samples: dict[str, deque[_KafkaSample]] = {}
        self.name = name or url.rstrip("/").rsplit("/", 1)[-1]
        self.history = history
        self.poll_s = poll_s
        self.clock = clock
        self._sink_arg = sink
        self._options = storage_options
        self._file_sizes = file_sizes
        self.query_id = ""
        self.sink_url: str | None = None
        self.offsets: OrderedDict[int, OffsetLogEntry] = OrderedDict()
        self.offset_mtime: dict[int, int] = {}
        self.commit_at: OrderedDict[int, int] = OrderedDict()
        self.batches: deque[CheckpointBatch] = deque(maxlen=max(history, CADENCE_BATCHES))
        self.last_offset_id: int | None = None
        self.last_commit_id: int | None = None
        self.status: CheckpointStatus | None = None
        self._seen_findings: set[tuple[str, str]] = set()
        self.probe: Probe | None = None
        self.sink_probe: Probe | None = None
        self.file_sink: FileSinkReader | None = None
        self.delta_sink: DeltaSinkReader | None = None
        self.state: StateReader | None = None
        self.file_lags: list[FileSourceLag] = []
        #: the latest lag of each file source (measured every ``lag_every`` polls)
        self.lags: dict[str, SourceLag] = {}
        self.lag_every = max(1, round(LAG_EVERY_S / poll_s)) if poll_s > 0 else 1
        self._polls = 0
        self._planned_new = False
        #: the health window's lag samples and runs, and the last verdict (sized at open())
        self.tracker = HealthTracker()

    # -- opening -------------------------------------------------------------------------
    def open(self) -> list[WatchRecord]:
        """First read (see module docstring): findings, then the last ``history`` batches."""
        try:
            cp = read_checkpoint(self.url, self._sink_arg, full=False, storage_options=self._options)
            self.probe = Probe(self.url, self._options)
        except (CheckpointError, ProbeError) as e:
            raise WatchError(str(e)) from None
        p = self.probe
        self.root = p.root
        self.query_id = cp.query_id or ""
        self.sink_url = self._sink_arg or cp.sink_path
        if self.sink_url:
            self.sink_probe = Probe(self.sink_url, self._options)
            if cp.sink is not None:
                self.file_sink = FileSinkReader(self.sink_probe, self.sink_probe.root)
            if cp.delta_sink is not None:
                self.delta_sink = DeltaSinkReader(self.sink_probe, self.sink_probe.root, cp.query_id, self.history)
        self.sources = SourceReader(p, self.root, file_sizes=self._file_sizes)
        self.state = StateReader(p, cp.state) if cp.state else None
        self.file_lags = self._open_file_lags(cp)
        offs, coms = list(cp.offset_batch_ids), list(cp.commit_batch_ids)
        self.last_offset_id = offs[-1] if offs else None
        out: list[WatchRecord] = list(self._new_findings(cp.findings))
        window = [b for b in coms if b >= (coms[-1] - self.history + 1)] if coms else []
        self.last_commit_id = (window[0] - 1) if window else (coms[-1] if coms else None)
        for b in window:
            rec = self._commit(b)
            if rec is not None:
                out.append(rec)
        if self.last_offset_id is not None and self.last_offset_id not in self.offsets:
            self._offsets(self.last_offset_id)
        self.tracker.size_for(len(self.file_lags) + len(self._kafka_sources()))
        status, lags = self._status(), self._measure_lags()
        out.extend([*self.health_change(), *status, *lags])  # the verdict first, then its evidence
        return out

    def _open_file_lags(self, cp: Checkpoint) -> list[FileSourceLag]:
        """A :class:`FileSourceLag` per file-source log, seeded with every file it names."""
        if not cp.sources or self.probe is None:
            return []
        try:
            storage, inner = open_storage(self.url, self._options)
        except StorageError:
            return []
        out = []
        for src in cp.sources:
            log, _ = read_file_log(storage, storage.join(inner, "sources", src.name), "source", source=src.name)
            if isinstance(log, SourceLog):
                last = max((e.batch_id for e in log.entries), default=-1)
                out.append(FileSourceLag(self.probe, self.root, src.name,
                                         ((e.path, e.timestamp_ms) for e in log.entries), last))
        return out

    # -- polling -------------------------------------------------------------------------
    def poll(self) -> list[WatchRecord]:
        """Look past the end of the offsets and commit logs; derive what committed; re-judge
        the status. Never raises on a vanished or bad file."""
        assert self.probe is not None, "open() first"
        p = self.probe
        out: list[WatchRecord] = []
        changed = False
        nxt = (self.last_offset_id + 1) if self.last_offset_id is not None else 0
        while p.stat(p.join(self.root, "offsets", str(nxt))) is not None:
            self._offsets(nxt)
            self.last_offset_id = nxt
            nxt += 1
            changed = True
            self._planned_new = True
        nxt = (self.last_commit_id + 1) if self.last_commit_id is not None else 0
        while True:
            rec = self._commit(nxt)
            if rec is None:
                break
            out.append(rec)
            nxt += 1
            changed = True
        if changed:
            out.extend(self._new_findings(self._window_findings()))
        status = self._status()
        self._polls += 1
        lags = self._measure_lags() if self._polls % self.lag_every == 0 else []
        out.extend([*self.health_change(), *status, *lags])  # the verdict first, then its evidence
        return out

    def _offsets(self, batch_id: int) -> OffsetLogEntry | None:
        if batch_id in self.offsets:
            return self.offsets[batch_id]
        p = self.probe
        assert p is not None
        path = p.join(self.root, "offsets", str(batch_id))
        data = p.read(path)
        if data is None:
            return None
        entry, _ = parse_offsets(data, batch_id, path)
        if entry is None:
            return None
        newest = next(reversed(self.offsets)) if self.offsets else None
        self.offsets[batch_id] = entry
        if newest is not None and batch_id < newest:
            self.offsets = OrderedDict(sorted(self.offsets.items()))
        while len(self.offsets) > self.history + 2:
            self.offsets.popitem(last=False)
        return entry

    def _commit(self, batch_id: int) -> CheckpointBatch | None:
        """The batch record when ``commits/<batch_id>`` exists, else None."""
        p = self.probe
        assert p is not None
        cpath = p.join(self.root, "commits", str(batch_id))
        st = p.stat(cpath)
        if st is None:
            return None
        self.last_commit_id = batch_id
        if self.last_offset_id is None or self.last_offset_id < batch_id:
            self.last_offset_id = batch_id
        self.commit_at[batch_id] = st.mtime_ms
        while len(self.commit_at) > self.history + 2:
            self.commit_at.popitem(last=False)
        entry = self._offsets(batch_id)
        prev = self._offsets(batch_id - 1) if batch_id > 0 else None
        planned = entry.timestamp_ms if entry else None
        prev_planned = prev.timestamp_ms if prev else None
        prev_commit = self.commit_at.get(batch_id - 1)
        inputs = self.sources.inputs(entry, prev) if entry is not None else ()
        output = None
        if self.file_sink is not None:
            output = self.file_sink.output(batch_id, planned)
        elif self.delta_sink is not None:
            output = self.delta_sink.output(batch_id)
        state = self.state.batch_usage(batch_id, entry, cpath) if self.state is not None else ()
        wm = entry.watermark_ms if entry else None
        pwm = prev.watermark_ms if prev else None
        rec = CheckpointBatch(
            id=self.query_id, query=self.name, checkpoint=self.url, batch_id=batch_id,
            planned_at_ms=planned, committed_at_ms=st.mtime_ms,
            duration_ms=(st.mtime_ms - planned) if planned is not None else None,
            trigger_interval_ms=(planned - prev_planned) if planned is not None and prev_planned is not None else None,
            idle_gap_ms=(planned - prev_commit) if planned is not None and prev_commit is not None else None,
            watermark_ms=wm, watermark_delta_ms=(wm - pwm) if wm is not None and pwm is not None else None,
            inputs=inputs, output=output, state=state,
        )
        self.batches.append(rec)
        return rec

    # -- judging -------------------------------------------------------------------------
    def cadence_ms(self) -> int | None:
        """Median trigger interval (``batchTimestampMs`` of consecutive ``offsets/N``) over the
        recent batches (ms); the median batch duration when no interval is known yet; None
        before anything is known."""
        recent = list(self.batches)[-CADENCE_BATCHES:]
        planned = [(b, e.timestamp_ms) for b, e in list(self.offsets.items())[-CADENCE_BATCHES - 1:] if e.timestamp_ms]
        gaps = [t2 - t1 for (b1, t1), (b2, t2) in pairwise(planned) if b2 == b1 + 1 and t2 > t1]
        if gaps:
            return int(statistics.median(gaps))
        durs = [b.duration_ms for b in recent if b.duration_ms is not None and b.duration_ms >= 0]
        return int(statistics.median(durs)) if durs else None

    def judge(self, now_ms: int | None = None) -> CheckpointStatus:
        """The query's status at ``now_ms`` (default: the clock). A planned batch is stuck
        once it has waited longer than the query's own recent batches make plausible
        (:func:`~streamwatch.analysis.diagnosis.stuck_limit_ms`: 5 × the slowest of the
        recent committed batches, at least two trigger intervals and 10 s; never before two
        polls) — a checkpoint cannot tell a stuck query from one stopped mid-batch, so the
        verdict says only that the batch has waited that long."""
        now = int(self.clock() * 1000) if now_ms is None else now_ms
        cadence = self.cadence_ms()
        floor = int(2 * self.poll_s * 1000)
        in_flight = self.last_offset_id if self.last_offset_id is not None and (
            self.last_commit_id is None or self.last_offset_id > self.last_commit_id) else None
        in_flight_s = None
        if in_flight is not None:
            e = self.offsets.get(in_flight)
            since = e.timestamp_ms if e is not None and e.timestamp_ms is not None else None
            in_flight_s = max(0.0, (now - since) / 1000) if since is not None else None
        durations = [b.duration_ms for b in list(self.batches)[-CADENCE_BATCHES:]
                     if b.duration_ms is not None and b.duration_ms >= 0]
        stuck = bool(in_flight_s is not None and (durations or cadence is not None)
                     and in_flight_s * 1000 > max(stuck_limit_ms(durations, cadence), floor))
        last_commit = self.commit_at.get(self.last_commit_id) if self.last_commit_id is not None else None
        idle_s = max(0.0, (now - last_commit) / 1000) if last_commit is not None and in_flight is None else None
        idle = bool(idle_s is not None and cadence is not None and idle_s * 1000 > max(IDLE_FACTOR * cadence, floor))
        return CheckpointStatus(self.query_id, self.name, self.url, now, self.last_offset_id, self.last_commit_id,
                                in_flight, in_flight_s, cadence, stuck, idle, idle_s)

    def measure_lags(self, now_ms: int | None = None) -> list[SourceLag]:
        """Every file source's :class:`SourceLag` at ``now_ms`` (default: the clock): the
        source logs read past what was planned since, the source folders listed once each;
        then every Kafka source's (with ``kafka``: see :func:`kafka_source_lag`)."""
        now = int(self.clock() * 1000) if now_ms is None else now_ms
        kafka_sources = self._kafka_sources()
        if not self.file_lags and not kafka_sources:
            return []
        if self._planned_new:
            for lag in self.file_lags:
                lag.poll()
            self._planned_new = False
        recent = [b for b in list(self.batches)[-CADENCE_BATCHES:] if b.planned_at_ms is not None]
        latest = next(reversed(self.offsets.values())) if self.offsets else None
        cadence = self.cadence_ms()
        pace = _Pace(min((b.planned_at_ms for b in recent if b.planned_at_ms is not None), default=None),
                     latest.timestamp_ms if latest is not None else None,
                     max(IDLE_FACTOR * cadence, int(2 * self.poll_s * 1000)) if cadence is not None else None)
        out = []
        for lag in self.file_lags:
            counts = [next((i.files for i in b.inputs if i.source == lag.source), None) for b in recent]
            read = None if not recent or any(c is None for c in counts) else sum(c or 0 for c in counts)
            out.append(lag.measure(query_id=self.query_id, query=self.name, checkpoint=self.url, now_ms=now,
                                   window_from_ms=pace.window_from_ms, files_read_in_window=read,
                                   planned_since_ms=pace.planned_since_ms, patience_ms=pace.patience_ms))
        out.extend(self._kafka_lags(kafka_sources, now, pace))
        return out

    def _kafka_sources(self) -> list[str]:
        """Ids of the Kafka sources in the newest offsets entry (none without ``kafka``)."""
        if self.kafka is None or not self.offsets:
            return []
        entry = next(reversed(self.offsets.values()))
        return [entry.source_id(i) for i, p in enumerate(entry.parsed) if p is not None and p.kind == "kafka"]

    def _kafka_lags(self, sources: list[str], now_ms: int, pace: _Pace) -> list[SourceLag]:
        """Each Kafka source's lag against the offsets of the newest committed batch."""
        if self.kafka is None:
            return []
        entry = self.offsets.get(self.last_commit_id) if self.last_commit_id is not None else None
        if entry is None and self.last_commit_id is not None:
            entry = self._offsets(self.last_commit_id)
        who = (self.query_id, self.name, self.url)
        out = []
        for sid in sources:
            pos = entry.position(sid) if entry is not None else None
            parsed = entry.parsed[pos] if entry is not None and pos is not None and pos < len(entry.parsed) else None
            if parsed is None or parsed.kind != "kafka":
                out.append(SourceLag(*who, sid, "kafka", now_ms, None, None, None,
                                     reason="no committed batch has read this source yet"))
                continue
            committed = {(t, int(p)): int(off) for t, parts in parsed.kafka_partitions.items() for p, off in parts.items()}
            samples = self._kafka_samples.setdefault(sid, deque(maxlen=KAFKA_SAMPLES))
            out.append(kafka_source_lag(who, sid, committed, self.kafka, now_ms, samples, pace))
        return out

    def _measure_lags(self) -> list[SourceLag]:
        """:meth:`measure_lags`, keeping each source's latest; the ones whose verdict changed."""
        changed = []
        measured = self.measure_lags()
        self.tracker.add_lags(measured)
        for lag in measured:
            before = self.lags.get(lag.source)
            self.lags[lag.source] = lag
            if before is None or before.verdict() != lag.verdict():
                changed.append(lag)
        return changed

    def observe_run(self, event: QueryStarted | QueryProgress | QueryTerminated) -> None:
        """Take in one listener event of this query (others are ignored; see
        :meth:`HealthTracker.observe_run`). Once called, the health window has an account of
        runs and can judge FAILING."""
        if self.query_id and event.id != self.query_id:
            return
        self.tracker.observe_run(event)

    def health_window(self, now_ms: int | None = None) -> HealthWindow:
        """What the health verdict is judged on at ``now_ms`` (default: the clock): the
        status then, the recent committed batches, the lag samples, the runs seen."""
        return self.tracker.window(self.judge(now_ms), list(self.batches)[-CADENCE_BATCHES:], self.commit_at.items())

    def health_change(self) -> list[QueryHealth]:
        """The :class:`QueryHealth` record when the verdict's health changed, else nothing."""
        return self.tracker.change(WatchedQuery(self.query_id, self.name, self.url), self.health_window())

    def current_health(self) -> Health | None:
        """The latest verdict's :class:`Health` (None before :meth:`open`)."""
        return self.tracker.current()

    def _status(self, now_ms: int | None = None) -> list[CheckpointStatus]:
        s = self.judge(now_ms)
        changed = self.status is None or s.verdict() != self.status.verdict()
        self.status = s
        return [s] if changed else []

    def _window_findings(self) -> list[Finding]:
        entries = tuple(self.offsets.values())
        offs = tuple(self.offsets)
        cp = Checkpoint(path=self.url, query_id=self.query_id or None, offsets=entries,
                        offset_batch_ids=offs, commit_batch_ids=tuple(b for b in self.commit_at if not offs or b >= offs[0]))
        d = self.root
        p = self.probe
        assert p is not None
        return [*health.log_findings(cp, p.join(d, "offsets"), p.join(d, "commits")),
                *health.conf_findings(entries, p.join(d, "offsets"), find_repartitions(entries)), *health.watermark_findings(cp)]

    def _new_findings(self, findings: Iterable[Finding]) -> list[CheckpointFinding]:
        out = []
        for f in findings:
            key = (f.code, f.message)
            if f.code in TRANSIENT_CODES or key in self._seen_findings:
                continue
            self._seen_findings.add(key)
            out.append(CheckpointFinding(self.query_id, self.name, self.url, f.severity, f.code, f.message, f.path))
        return out

    def with_lineage(self, rec: CheckpointBatch, origin_ms: int | None) -> CheckpointBatch:
        """``rec`` with its origin (oldest landing time it carries) and end-to-end latency."""
        if origin_ms is None:
            return rec
        return replace(rec, origin_ms=origin_ms, end_to_end_ms=rec.committed_at_ms - origin_ms)
