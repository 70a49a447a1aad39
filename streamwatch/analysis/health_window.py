"""One definition of a streaming query's health over a sliding window — Burrow's consumer
rules applied to a Structured Streaming query — pure and typed: :func:`judge_health`.

Not to be confused with :mod:`streamwatch.checkpoint.health` (the inspector's findings).

The window is what a checkpoint watch already holds (:class:`HealthWindow`): the recent
committed batches (``commits/N``), the query's :class:`~streamwatch.analysis.records.CheckpointStatus`
(in-flight batch, ``stuck``, ``idle``), the file sources' :class:`~streamwatch.analysis.records.SourceLag`
samples (lag seconds, backlog files) since the planned time of the oldest batch in it, and —
only when a listener recording is followed — the outcome of each run (Spark's
``QueryStartedEvent``/``QueryProgressEvent``/``QueryTerminatedEvent``). No threshold is tuned:
every rule compares the window against itself or reuses the status's stuck/idle limits (which
derive from the query's own cadence). Rules, the first that holds wins:

========  ==============================================================================
FAILING   a batch N is in flight (``offsets/N``, no ``commits/N``) and at least two runs
          failed on it: ended with an exception having last reported batch N−1, or having
          reported nothing and started after ``commits/N−1`` was written. Needs run
          outcomes: a checkpoint alone cannot tell (Spark reruns ``offsets/N`` as written,
          it does not rewrite it on restart).
STOPPED   no commit for longer than the window allows and work waits: the in-flight batch
          is ``stuck``, or nothing was planned for longer than ``idle`` allows while the
          backlog (files landed, unread) is > 0.
IDLE      nothing planned for longer than ``idle`` allows and the backlog is 0 on every
          source.
STALLED   the last two committed batches read no file while every lag sample since the
          earlier was planned has a backlog > 0 (commits, offsets not moving, data waits).
LAGGING   batches committed in the window and a source's lag rose at every one of its
          samples in it (at least three, each strictly above the one before) with a
          backlog > 0 at the last.
OK        a batch committed in the window (or one is in flight within its limit) and none
          of the above holds.
UNKNOWN   not enough evidence; the reason says which is missing (no batch committed yet,
          no cadence to judge idle by, backlog unknown for a source that is not files).
========  ==============================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import pairwise

from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, SourceLag

#: A source's lag must rise at this many consecutive samples to be "rising".
RISING_SAMPLES = 3


class Health(StrEnum):
    """A query's health over the window (values as written in ``query-health`` records)."""

    OK = "ok"
    LAGGING = "lagging"
    STALLED = "stalled"
    STOPPED = "stopped"
    FAILING = "failing"
    IDLE = "idle"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """One run of the query (``runId``) as a listener saw it: ``started_ms`` from
    ``QueryStartedEvent.timestamp`` (epoch ms; None unknown), ``last_batch_id`` the last batch
    id it reported progress for (None: none), ``failed`` True when it terminated with an
    exception not caused by our own stop, ``error`` Spark's exception text."""

    run_id: str
    started_ms: int | None
    last_batch_id: int | None
    failed: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class HealthWindow:
    """The observations judged. ``batches``: recent committed batches, oldest first;
    ``commit_ms``: ``commits/N`` modification time (ms) by batch id; ``lags``: every
    :class:`SourceLag` sample, oldest first (any number of sources); ``runs``: run outcomes
    when a listener recording is followed, None when there is no account of runs."""

    now_ms: int
    status: CheckpointStatus
    batches: tuple[CheckpointBatch, ...] = ()
    lags: tuple[SourceLag, ...] = ()
    runs: tuple[RunOutcome, ...] | None = None
    commit_ms: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class HealthVerdict:
    """The verdict: ``health``, a one-line ``reason``, ``since_ms`` (epoch ms the evidence
    dates the state from; None when it does not) and the evidence: ``batch_id`` (in flight,
    else last committed), ``backlog`` files summed over file sources (None unknown),
    ``lag_s`` the largest latest source lag (s), ``commits`` committed batches in the window,
    ``samples`` lag samples in it, ``failed_runs`` runs failed on the in-flight batch (None:
    no account of runs)."""

    health: Health
    reason: str
    since_ms: int | None
    batch_id: int | None = None
    backlog: int | None = None
    lag_s: float | None = None
    commits: int = 0
    samples: int = 0
    failed_runs: int | None = None


def _latest_per_source(lags: tuple[SourceLag, ...]) -> dict[str, SourceLag]:
    out: dict[str, SourceLag] = {}
    for lag in lags:
        out[lag.source] = lag
    return out


def backlog_of(lags: tuple[SourceLag, ...]) -> tuple[int | None, str | None]:
    """What waits on every source, from each source's latest sample — files on a file source,
    records on a Kafka source: (sum, None) when every source's backlog is known, (None, why)
    when one is not or there is no sample. The sum only says whether work waits; the
    reasons name each kind's count (:func:`backlog_text`)."""
    latest = _latest_per_source(lags)
    if not latest:
        return None, "no file or Kafka source to count a backlog on"
    unknown = [s for s in latest.values() if s.backlog is None]
    if unknown:
        return None, f"source {unknown[0].source}'s backlog is unknown ({unknown[0].reason or 'not listed'})"
    return sum(s.backlog or 0 for s in latest.values()), None


#: The unit of a source's backlog by its ``source_kind``.
_BACKLOG_UNIT = {"file": "file(s)", "kafka": "Kafka record(s)"}


def backlog_text(lags: tuple[SourceLag, ...]) -> str:
    """The backlog of each source's latest sample summed per kind with its unit: ``3 file(s)``,
    ``120 Kafka record(s)``, ``3 file(s) and 120 Kafka record(s)``."""
    per_kind: dict[str, int] = {}
    for lag in _latest_per_source(lags).values():
        per_kind[lag.source_kind] = per_kind.get(lag.source_kind, 0) + (lag.backlog or 0)
    return " and ".join(f"{n} {_BACKLOG_UNIT.get(k, k + ' item(s)')}" for k, n in sorted(per_kind.items())) or "0"


def failed_on(window: HealthWindow, batch_id: int) -> list[RunOutcome] | None:
    """The runs that failed on ``batch_id`` (see the FAILING rule), None without run outcomes."""
    if window.runs is None:
        return None
    prev_commit = dict(window.commit_ms).get(batch_id - 1)
    out = []
    for r in window.runs:
        if not r.failed:
            continue
        if r.last_batch_id == batch_id - 1 and batch_id > 0 or r.last_batch_id is None and r.started_ms is not None and (prev_commit is None or r.started_ms >= prev_commit):
            out.append(r)
    return out


def _rising(lags: tuple[SourceLag, ...]) -> SourceLag | None:
    """The first sample of a source whose lag rose at each of its last :data:`RISING_SAMPLES` samples."""
    by_source: dict[str, list[SourceLag]] = {}
    for lag in lags:
        by_source.setdefault(lag.source, []).append(lag)
    for samples in by_source.values():
        tail = samples[-RISING_SAMPLES:]
        values = [s.lag_s for s in tail if s.lag_s is not None]
        if len(values) == RISING_SAMPLES and (tail[-1].backlog or 0) > 0 and all(b > a for a, b in pairwise(values)):
            return tail[0]
    return None


def judge_health(window: HealthWindow) -> HealthVerdict:
    """The :class:`HealthVerdict` of ``window`` by the rules of the module docstring."""
    s = window.status
    backlog, why_backlog = backlog_of(window.lags)
    lag_values = [v.lag_s for v in _latest_per_source(window.lags).values() if v.lag_s is not None]
    failures = failed_on(window, s.in_flight_batch_id) if s.in_flight_batch_id is not None else None
    base = HealthVerdict(Health.UNKNOWN, "", None,
                         batch_id=s.in_flight_batch_id if s.in_flight_batch_id is not None else s.last_committed_batch_id,
                         backlog=backlog, lag_s=max(lag_values) if lag_values else None, commits=len(window.batches),
                         samples=len(window.lags), failed_runs=None if failures is None else len(failures))
    if failures is not None and len(failures) >= 2:
        first = min((r.started_ms for r in failures if r.started_ms is not None), default=None)
        return replace(base, health=Health.FAILING, since_ms=first,
                       reason=f"batch {s.in_flight_batch_id} failed in {len(failures)} runs, never committed: "
                              f"{_one_line(failures[-1].error)}")
    return _judge_progress(window, base, why_backlog)


def _judge_progress(window: HealthWindow, base: HealthVerdict, why_backlog: str | None) -> HealthVerdict:
    """The rules after FAILING, on ``base`` (the evidence already gathered)."""
    s, backlog = window.status, base.backlog
    last_commit = dict(window.commit_ms).get(s.last_committed_batch_id) if s.last_committed_batch_id is not None else None
    if s.stuck:
        return replace(base, health=Health.STOPPED, since_ms=window.now_ms - int((s.in_flight_s or 0) * 1000),
                       reason=f"batch {s.in_flight_batch_id} planned {s.in_flight_s or 0:.0f} s ago, not committed "
                              "(longer than its recent batches allow)")
    if s.idle:
        if backlog is None:
            return replace(base, reason=f"no batch for {s.idle_s or 0:.0f} s; {why_backlog}", since_ms=last_commit)
        if backlog > 0:
            return replace(base, health=Health.STOPPED, since_ms=last_commit,
                           reason=f"no batch for {s.idle_s or 0:.0f} s while {backlog_text(window.lags)} wait")
        return replace(base, health=Health.IDLE, since_ms=last_commit,
                       reason=f"no batch for {s.idle_s or 0:.0f} s and nothing waiting")
    if not window.batches and s.in_flight_batch_id is None:
        return replace(base, reason="no batch committed yet")
    if s.in_flight_batch_id is None and s.cadence_ms is None:
        return replace(base, reason="one batch only: no cadence to judge idle by")
    stalled = _stalled(window)
    if stalled is not None:
        return replace(base, health=stalled.health, reason=stalled.reason, since_ms=stalled.since_ms)
    rising = _rising(window.lags)
    if rising is not None and window.batches:
        return replace(base, health=Health.LAGGING, since_ms=rising.at_ms,
                       reason=f"source {rising.source}'s lag rose at each of its last {RISING_SAMPLES} samples "
                              "while batches commit")
    return replace(base, health=Health.OK,
                   reason="batches commit" + ("" if backlog is None else f"; backlog {backlog_text(window.lags)}"))


def _stalled(window: HealthWindow) -> HealthVerdict | None:
    """STALLED when the last two committed batches read no file while files wait throughout."""
    last2 = window.batches[-2:]
    if len(last2) < 2 or any(b.input_files != 0 for b in last2):
        return None
    since = last2[0].planned_at_ms
    if since is None:
        return None
    samples = [lag for lag in window.lags if lag.at_ms >= since]
    if not samples or any(lag.backlog is None or lag.backlog == 0 for lag in samples):
        return None
    return HealthVerdict(Health.STALLED, f"batches {last2[0].batch_id} and {last2[1].batch_id} committed reading no "
                         f"file while {backlog_text((samples[-1],))} wait", since)


#: An error line of an exception text (``ValueError: …``, ``org.apache.….SparkException: …``).
_ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w$]*\.)*[A-Za-z_]\w*(?:Error|Exception): \S")
_JVM_PREFIXES = ("org.", "java.", "scala.", "py4j.", "com.", "io.")


def _one_line(text: str | None) -> str:
    """The most telling line of Spark's exception text: the innermost non-JVM error line (a
    Python UDF's ``ValueError: …`` under Spark's ``PythonException`` wrapper), else the first
    error line, else the first line; at most 200 characters."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    errors = [ln for ln in lines if _ERROR_LINE.match(ln)]
    own = [ln for ln in errors if not ln.startswith(_JVM_PREFIXES)]
    best = own[-1] if own else errors[0] if errors else lines[0] if lines else "no exception text"
    return best[:200]
