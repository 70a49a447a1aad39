"""The health verdict the dashboard shows (:class:`DashboardHealth`): the same
:func:`~streamwatch.analysis.health_window.judge_health` that ``streamwatch watch`` applies,
over a :class:`~streamwatch.analysis.health_window.HealthWindow` built from what the dashboard
already holds — pure, no file read:

* the checkpoint scan's batch timeline (:class:`~streamwatch.model.checkpoint.BatchRow`:
  ``offsets/N`` and ``commits/N`` present, ``batchTimestampMs``, files read) gives the
  in-flight batch, the cadence (median interval of consecutive ``batchTimestampMs``) and the
  committed batches;
* the listener's ``QueryProgressEvent`` of each batch gives when it committed (its
  ``timestamp`` + ``durationMs.triggerExecution``, epoch ms) — the scan does not stat
  ``commits/N``; a committed batch no progress was seen for (committed before the dashboard
  started) has no commit time, and a verdict that needs one is UNKNOWN;
* the landing watcher's files not yet in any source log (:class:`~streamwatch.analysis.journeys.Journey`
  stage ``landed``) give each landing source's backlog (files) and lag (s since the oldest
  waiting one was seen), sampled at most every :data:`~streamwatch.analysis.watch.LAG_EVERY_S`
  seconds as ``watch`` lists folders;
* ``QueryStartedEvent``/``QueryProgressEvent``/``QueryTerminatedEvent`` give the run outcomes
  (:meth:`~streamwatch.analysis.health_track.HealthTracker.observe_run`).

The stuck and idle limits are ``watch``'s (:meth:`~streamwatch.analysis.watch.CheckpointWatcher.judge`)
with its default ``--poll`` of 1 s as the floor.

The dashboard asks for the verdict every frame (10 a second); :meth:`DashboardHealth.verdict_of`
judges again only when an input changed (a checkpoint scan, a listener event, a landed file)
or the clock reached the first moment the verdict could read otherwise (a lag sample due, the
stuck or idle limit crossed, the seconds a stuck/idle reason shows ticking over).
"""

from __future__ import annotations

import math
import statistics
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

from streamwatch.analysis.diagnosis import stuck_limit_ms
from streamwatch.analysis.health_track import HealthTracker
from streamwatch.analysis.health_window import Health, HealthVerdict, HealthWindow, judge_health
from streamwatch.analysis.journeys import Journey
from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, SourceInput, SourceLag
from streamwatch.analysis.watch import CADENCE_BATCHES, IDLE_FACTOR, LAG_EVERY_S
from streamwatch.model.checkpoint import BatchRow
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

if TYPE_CHECKING:  # the dashboard's model holds a DashboardHealth: annotated only
    from streamwatch.analysis.dashboard import DashboardModel

#: The floor of the stuck and idle limits (s): ``watch``'s default ``--poll``.
POLL_S = 1.0
#: Commit times kept per query (by batch id).
COMMITS_KEPT = 2 * CADENCE_BATCHES


@dataclass(frozen=True, slots=True)
class QueryFacts:
    """What the dashboard holds about one query at ``now_ms`` (epoch ms): ``name``, the
    checkpoint's ``query_id`` and ``checkpoint`` path, its scan's ``timeline`` (None: not read;
    ``error`` says why) and the ``journeys`` of the landed files."""

    name: str
    now_ms: int
    timeline: tuple[BatchRow, ...] | None
    journeys: tuple[Journey, ...] = ()
    query_id: str = ""
    checkpoint: str = ""
    error: str | None = None


@dataclass(frozen=True, slots=True)
class _Judged:
    """A verdict and what it was judged from: the model's ``inputs`` (compared by identity),
    the listener ``events`` count, judged at ``at_ms``, holding for any clock before
    ``until_ms`` (epoch ms; None: the clock does not change it)."""

    inputs: tuple[object, ...]
    events: int
    at_ms: int
    until_ms: int | None
    verdict: HealthVerdict


@dataclass
class _Kept:
    """One query's tracker (runs, lag samples), commit times, last sample time, listener
    events taken and the last verdict :meth:`DashboardHealth.verdict_of` judged."""

    tracker: HealthTracker = field(default_factory=HealthTracker)
    commits: OrderedDict[int, int] = field(default_factory=OrderedDict)
    sampled_ms: int | None = None
    events: int = 0
    judged: _Judged | None = None


class DashboardHealth:
    """Per query name: the run outcomes and commit times the listener told
    (:meth:`observe_run`) and the lag samples taken; :meth:`verdict` judges one query."""

    def __init__(self, poll_s: float = POLL_S) -> None:
        self.poll_s = poll_s
        self._kept: dict[str, _Kept] = {}

    def _of(self, name: str) -> _Kept:
        return self._kept.setdefault(name, _Kept())

    def observe_run(self, name: str, event: QueryStarted | QueryProgress | QueryTerminated) -> None:
        """Take in one listener event of query ``name``: its run outcome and, for a progress
        event, when its batch committed (``timestamp`` + ``durationMs.triggerExecution``, ms)."""
        kept = self._of(name)
        kept.events += 1
        kept.tracker.observe_run(event)
        if isinstance(event, QueryProgress):
            start, took = event.timestamp_ms, event.duration_ms.get("triggerExecution")
            if start is not None and took is not None:
                kept.commits[event.batch_id] = start + took
                kept.commits.move_to_end(event.batch_id)
                while len(kept.commits) > COMMITS_KEPT:
                    kept.commits.popitem(last=False)

    def verdict(self, facts: QueryFacts) -> HealthVerdict:
        """The query's :class:`HealthVerdict` now: :func:`judge_health` over :meth:`window`,
        or UNKNOWN with what evidence is missing."""
        window = self.window(facts)
        return judge_health(window) if isinstance(window, HealthWindow) else HealthVerdict(Health.UNKNOWN, window, None)

    def verdict_of(self, model: DashboardModel, name: str) -> HealthVerdict:
        """:meth:`verdict` of :func:`facts_of` ``(model, name)`` at the model's clock, the same
        object as last time while nothing it reads changed: the query's checkpoint, scanned
        timeline and scan error, the landed files' journeys (each compared by identity: a scan
        or a landed file replaces them), the listener events taken (:meth:`observe_run`), and
        the clock stays before the first moment the verdict could read otherwise
        (:func:`_valid_until`). A clock that went back judges again."""
        kept = self._of(name)
        now = model.clock()
        cp = model.checkpoints.get(name)
        timeline = model.timelines.get(name) if cp is not None else None
        journeys = model.journeys()
        inputs = (cp, timeline, model.cp_errors.get(name), journeys)
        last = kept.judged
        if (last is not None and last.events == kept.events and all(a is b for a, b in zip(last.inputs, inputs, strict=True))
                and last.at_ms <= now and (last.until_ms is None or now < last.until_ms)):
            return last.verdict
        facts = QueryFacts(name, now, timeline, tuple(journeys), (cp.query_id or "") if cp is not None else "",
                           cp.path if cp is not None else "", model.cp_errors.get(name))
        window = self.window(facts)
        verdict = judge_health(window) if isinstance(window, HealthWindow) else HealthVerdict(Health.UNKNOWN, window, None)
        until = _valid_until(window, kept.sampled_ms, self.poll_s) if isinstance(window, HealthWindow) else None
        kept.judged = _Judged(inputs, kept.events, now, until, verdict)
        return verdict

    def window(self, facts: QueryFacts) -> HealthWindow | str:
        """The :class:`HealthWindow` of ``facts`` (a lag sample is added when
        :data:`LAG_EVERY_S` passed since the last), or why none can be built."""
        if facts.timeline is None:
            return f"checkpoint not read: {facts.error}" if facts.error else "checkpoint not read yet"
        kept = self._of(facts.name)
        committed = [r for r in facts.timeline if r.has_commit]
        last = committed[-1].batch_id if committed else None
        if last is not None and not _in_flight(facts.timeline, last) and last not in kept.commits:
            return f"batch {last}'s commit time is unknown: no progress of it was seen (committed before the dashboard started)"
        if kept.sampled_ms is None or facts.now_ms - kept.sampled_ms >= LAG_EVERY_S * 1000:
            kept.tracker.add_lags(landing_lags(facts, _sources_of(facts)))
            kept.sampled_ms = facts.now_ms
        batches = [b for r in committed[-CADENCE_BATCHES:] if (b := _batch(facts, r, kept.commits)) is not None]
        status = checkpoint_status(facts, batches, kept.commits, self.poll_s)
        return kept.tracker.window(status, batches, kept.commits.items())


def _valid_until(window: HealthWindow, sampled_ms: int | None, poll_s: float) -> int | None:
    """The first clock reading (epoch ms) at which ``window``'s verdict could read otherwise
    with the same inputs (None: never): the next lag sample due (every :data:`LAG_EVERY_S`),
    the in-flight batch crossing the stuck limit, the last commit crossing the idle limit, or —
    once stuck or idle — the whole seconds the reason shows ticking over. Never later than the
    change (with a clock behind the evidence, elapsed counts as 0: earlier)."""
    s, now = window.status, window.now_ms
    ends = [] if sampled_ms is None else [sampled_ms + math.ceil(LAG_EVERY_S * 1000)]
    stuck_ms, idle_ms = _limits(list(window.batches), s.cadence_ms, poll_s)
    for elapsed_s, crossed, limit in ((s.in_flight_s, s.stuck, stuck_ms), (s.idle_s, s.idle, idle_ms)):
        if elapsed_s is None:
            continue
        elapsed = round(elapsed_s * 1000)  # 0 for a clock behind the evidence: only ever earlier
        if crossed:
            ends.append(now + _next_shown_second(elapsed) - elapsed)
        elif limit is not None:  # crossed at the first elapsed ms checkpoint_status finds past it
            crossing = limit if limit / 1000 * 1000 > limit else limit + 1
            ends.append(now + max(1, crossing - elapsed))
    return min(ends, default=None)


def _next_shown_second(elapsed_ms: int) -> int:
    """The first elapsed ms after ``elapsed_ms`` whose whole seconds, as a reason shows them
    (``f"{s:.0f}"``, half to even), differ from ``elapsed_ms``'s."""
    shown = f"{elapsed_ms / 1000:.0f}"
    half = int(shown) * 1000 + 500
    return next(c for c in (half, half + 1) if c > elapsed_ms and f"{c / 1000:.0f}" != shown)


def _limits(batches: list[CheckpointBatch], cadence: int | None, poll_s: float) -> tuple[int | None, int | None]:
    """(stuck limit, idle limit) in ms, as :func:`checkpoint_status` applies them: an in-flight
    batch older than the first is stuck (None: no batch duration nor cadence to judge by), no
    batch for longer than the second is idle (None: no cadence); both at least 2 × ``poll_s``."""
    floor = int(2 * poll_s * 1000)
    durations = [b.duration_ms for b in batches if b.duration_ms is not None and b.duration_ms >= 0]
    stuck = max(stuck_limit_ms(durations, cadence), floor) if durations or cadence is not None else None
    return stuck, None if cadence is None else max(IDLE_FACTOR * cadence, floor)


def _in_flight(timeline: Iterable[BatchRow], last_commit: int) -> bool:
    return any(r.has_offsets and r.batch_id > last_commit for r in timeline)


def _batch(facts: QueryFacts, row: BatchRow, commits: dict[int, int]) -> CheckpointBatch | None:
    """A committed batch as the window needs it (None without its commit time): planned at
    ``batchTimestampMs``, committed when its progress says, the files its file sources read."""
    at = commits.get(row.batch_id)
    if at is None:
        return None
    inputs = () if row.files_read is None else (SourceInput("files", "file", files=row.files_read),)
    return CheckpointBatch(facts.query_id, facts.name, facts.checkpoint, row.batch_id, row.timestamp_ms, at,
                           None if row.timestamp_ms is None else at - row.timestamp_ms, inputs=inputs)


def cadence_ms(timeline: Iterable[BatchRow], batches: Iterable[CheckpointBatch]) -> int | None:
    """Median interval of consecutive ``batchTimestampMs`` over the last
    :data:`CADENCE_BATCHES` planned batches (ms); else the median batch duration; None before
    anything is known (as :meth:`~streamwatch.analysis.watch.CheckpointWatcher.cadence_ms`)."""
    planned = [(r.batch_id, r.timestamp_ms) for r in timeline if r.has_offsets and r.timestamp_ms][-CADENCE_BATCHES - 1:]
    gaps = [t2 - t1 for (b1, t1), (b2, t2) in pairwise(planned) if b2 == b1 + 1 and t2 > t1]
    if gaps:
        return int(statistics.median(gaps))
    durs = [b.duration_ms for b in batches if b.duration_ms is not None and b.duration_ms >= 0]
    return int(statistics.median(durs)) if durs else None


def checkpoint_status(facts: QueryFacts, batches: list[CheckpointBatch], commits: dict[int, int],
                      poll_s: float = POLL_S) -> CheckpointStatus:
    """The :class:`CheckpointStatus` at ``facts.now_ms`` from the timeline and the commit
    times, by :meth:`~streamwatch.analysis.watch.CheckpointWatcher.judge`'s rules (stuck: in
    flight longer than :func:`stuck_limit_ms`; idle: no batch for over :data:`IDLE_FACTOR` ×
    the cadence; both at least 2 × ``poll_s``)."""
    timeline = facts.timeline or ()
    now = facts.now_ms
    offsets = [r for r in timeline if r.has_offsets]
    last_offset = offsets[-1].batch_id if offsets else None
    last_commit = max((r.batch_id for r in timeline if r.has_commit), default=None)
    in_flight = offsets[-1] if offsets and (last_commit is None or offsets[-1].batch_id > last_commit) else None
    cadence = cadence_ms(timeline, batches)
    stuck_ms, idle_ms = _limits(batches, cadence, poll_s)
    in_flight_s = None
    if in_flight is not None and in_flight.timestamp_ms is not None:
        in_flight_s = max(0.0, (now - in_flight.timestamp_ms) / 1000)
    stuck = bool(in_flight_s is not None and stuck_ms is not None and in_flight_s * 1000 > stuck_ms)
    committed_at = commits.get(last_commit) if last_commit is not None else None
    idle_s = max(0.0, (now - committed_at) / 1000) if committed_at is not None and in_flight is None else None
    idle = bool(idle_s is not None and idle_ms is not None and idle_s * 1000 > idle_ms)
    return CheckpointStatus(facts.query_id, facts.name, facts.checkpoint, now, last_offset, last_commit,
                            in_flight.batch_id if in_flight is not None else None, in_flight_s, cadence, stuck,
                            idle, idle_s)


def _sources_of(facts: QueryFacts) -> set[str]:
    """The landing sources the query reads: those of the landed files its source logs name."""
    return {j.file.source for j in facts.journeys if j.consumed is not None and j.consumed.query == facts.name}


def landing_lags(facts: QueryFacts, sources: Iterable[str]) -> list[SourceLag]:
    """One :class:`SourceLag` per landing source in ``sources``: ``backlog`` its landed files
    no source log names yet, ``oldest_unread_ms`` when the oldest was seen landing, ``lag_s``
    seconds since (0.0 without backlog)."""
    out = []
    for source in sorted(sources):
        waiting = [j.file.landed_at_ms for j in facts.journeys if j.file.source == source and j.consumed is None]
        oldest = min(waiting, default=None)
        lag_s = 0.0 if oldest is None else max(0.0, (facts.now_ms - oldest) / 1000)
        out.append(SourceLag(facts.query_id, facts.name, facts.checkpoint, source, "file", facts.now_ms,
                             len(waiting), oldest, lag_s))
    return out


def facts_of(model: DashboardModel, name: str) -> QueryFacts:
    """The :class:`QueryFacts` of query ``name`` in the dashboard's ``model`` at its clock."""
    cp = model.checkpoints.get(name)
    return QueryFacts(name, model.clock(), model.timelines.get(name) if cp is not None else None,
                      tuple(model.journeys()), (cp.query_id or "") if cp is not None else "",
                      cp.path if cp is not None else "", model.cp_errors.get(name))
