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
from collections.abc import Callable
from dataclasses import replace
from itertools import pairwise
from typing import Any

from streamwatch.analysis.batchio import DeltaSinkReader, FileSinkReader, SourceReader, StateReader
from streamwatch.analysis.diagnosis import stuck_limit_ms
from streamwatch.analysis.health_track import HealthTracker, WatchedQuery
from streamwatch.analysis.health_window import Health, HealthWindow
from streamwatch.analysis.lag import FileSourceLag
from streamwatch.analysis.probe import Probe, ProbeError
from streamwatch.analysis.records import CheckpointBatch, CheckpointFinding, CheckpointStatus, QueryHealth, SourceLag
from streamwatch.analysis.watch_findings import new_findings, window_findings
from streamwatch.analysis.watch_kafka import KafkaOffsets, KafkaSourceLags, Pace
from streamwatch.checkpoint import CheckpointError, read_checkpoint
from streamwatch.checkpoint.filelog import read_file_log
from streamwatch.checkpoint.fs import StorageError, open_storage
from streamwatch.checkpoint.logs import parse_offsets
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.batchlogs import OffsetLogEntry
from streamwatch.model.checkpoint import Checkpoint, SourceLog
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

IDLE_FACTOR = 2
CADENCE_BATCHES = 20
#: File sources' folders are listed for their lag about this often (s), not every poll: an
#: idle poll stays two look-ups; the listing is one request per file source.
LAG_EVERY_S = 5.0

WatchRecord = CheckpointBatch | CheckpointStatus | CheckpointFinding | SourceLag | QueryHealth
class WatchError(StreamwatchError):
    """A PATH cannot be watched (missing, unreadable, not a checkpoint, unknown protocol)."""

    exit_code = ExitCode.UNREADABLE


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
        self.kafka = KafkaSourceLags(kafka) if kafka is not None else None
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
        out: list[WatchRecord] = list(new_findings(cp.findings, self._seen_findings, self._who()))
        window = [b for b in coms if b >= (coms[-1] - self.history + 1)] if coms else []
        self.last_commit_id = (window[0] - 1) if window else (coms[-1] if coms else None)
        for b in window:
            rec = self._commit(b)
            if rec is not None:
                out.append(rec)
        if self.last_offset_id is not None and self.last_offset_id not in self.offsets:
            self._offsets(self.last_offset_id)
        self.tracker.size_for(len(self.file_lags) + len(self._kafka_ids()))
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
            assert self.probe is not None
            out.extend(new_findings(window_findings(self.url, self.query_id, self.offsets, self.commit_at, self.probe, self.root),
                                    self._seen_findings, self._who()))
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
        if not self.file_lags and not self._kafka_ids():
            return []
        if self._planned_new:
            for lag in self.file_lags:
                lag.poll()
            self._planned_new = False
        recent = [b for b in list(self.batches)[-CADENCE_BATCHES:] if b.planned_at_ms is not None]
        latest = next(reversed(self.offsets.values())) if self.offsets else None
        cadence = self.cadence_ms()
        pace = Pace(min((b.planned_at_ms for b in recent if b.planned_at_ms is not None), default=None),
                     latest.timestamp_ms if latest is not None else None,
                     max(IDLE_FACTOR * cadence, int(2 * self.poll_s * 1000)) if cadence is not None else None)
        out = []
        for lag in self.file_lags:
            counts = [next((i.files for i in b.inputs if i.source == lag.source), None) for b in recent]
            read = None if not recent or any(c is None for c in counts) else sum(c or 0 for c in counts)
            out.append(lag.measure(query_id=self.query_id, query=self.name, checkpoint=self.url, now_ms=now,
                                   window_from_ms=pace.window_from_ms, files_read_in_window=read,
                                   planned_since_ms=pace.planned_since_ms, patience_ms=pace.patience_ms))
        out.extend(self._kafka_lags(now, pace))
        return out

    def _newest_offsets(self) -> OffsetLogEntry | None:
        return next(reversed(self.offsets.values())) if self.offsets else None

    def _kafka_ids(self) -> list[str]:
        """Ids of the Kafka sources in the newest offsets entry (none without ``kafka``)."""
        return [] if self.kafka is None else self.kafka.sources_in(self._newest_offsets())

    def _kafka_lags(self, now_ms: int, pace: Pace) -> list[SourceLag]:
        """Each Kafka source's lag against the offsets of the newest committed batch."""
        if self.kafka is None or not self.offsets:
            return []
        entry = self.offsets.get(self.last_commit_id) if self.last_commit_id is not None else None
        if entry is None and self.last_commit_id is not None:
            entry = self._offsets(self.last_commit_id)
        return self.kafka.measure((self.query_id, self.name, self.url), self._newest_offsets(), entry, now_ms, pace)

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

    def _who(self) -> tuple[str, str, str]:
        return self.query_id, self.name, self.url

    def with_lineage(self, rec: CheckpointBatch, origin_ms: int | None) -> CheckpointBatch:
        """``rec`` with its origin (oldest landing time it carries) and end-to-end latency."""
        if origin_ms is None:
            return rec
        return replace(rec, origin_ms=origin_ms, end_to_end_ms=rec.committed_at_ms - origin_ms)
