"""Stall diagnosis per query (pure Python): failed, stopped, starting, stuck, slow, waiting
for data, or ok — each judged from Spark's own account (the query's lifecycle events, its
progress, its checkpoint's offsets and commit logs) and the trigger it runs with, never from a
fixed threshold that a busy machine crosses on a healthy query.

* **failed** — the query terminated with an exception;
* **stopped** — it terminated without one (a batch it planned and did not commit is said so:
  Spark runs that batch again on restart);
* **starting** — this run has not finished a batch yet (a planned batch is running, and there
  is nothing of this run to compare its time with);
* **stuck** — the offsets log holds batch N (planned) but the commit log has no N, and N has run
  longer than :data:`STUCK_FACTOR` × the slowest batch of the query's recent window (Burrow's
  way with consumer lag: judged against the query's own recent behaviour, not a fixed number),
  and longer than two trigger intervals and :data:`MIN_STUCK_MS`. Its age counts from the later
  of its ``batchTimestampMs`` and this run's start (a batch the previous run planned is re-run
  by this one, it has not waited since then);
* **slow** — Spark's own signs that the query falls behind its data: a source's outstanding
  work (``numFilesOutstanding``, ``numBytesOutstanding``, ``maxOffsetsBehindLatest``) rose
  across each of the recent batches. Under a ``processingTime`` trigger whose recent batches
  each took longer than the interval the query runs *back to back* (Spark's
  ``ProcessingTimeExecutor`` logs "falling behind" about the cadence): that is said, as **ok**;
* **waiting** — the trigger fires but no source has new data: Spark's ``QueryIdleEvent``
  (checked before the signs above, which speak of past batches) or a last batch that read none.

Real-time mode (``real_time=True``, see :mod:`streamwatch.analysis.realtime`): a batch is a
long-running checkpoint interval, and progress comes once per interval. The rules become:

* **stuck** — offsets/N without commits/N for longer than ``2 × interval + MIN_STUCK_MS``
  (Spark writes ``offsets/N`` of a real-time batch when the interval ends, so a missing
  commit is late only past the next interval);
* **slow** — the source falls behind: its ``maxOffsetsBehindLatest`` rose across each of the
  recent intervals, or the latest interval overran the trigger's by more than half (only when
  the trigger is known);
* otherwise **ok** / **waiting** with the interval's figures (rows in the last interval,
  records behind latest).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from streamwatch.analysis import realtime
from streamwatch.analysis.board import QueryRow
from streamwatch.analysis.fmt import duration
from streamwatch.analysis.triggers import Trigger
from streamwatch.model.events import QueryProgress

#: a planned batch is stuck past this many times the slowest batch of the recent window
STUCK_FACTOR = 5
#: ... and never before this many ms (a GC pause or a busy machine is not a stall)
MIN_STUCK_MS = 10_000
#: progress events of this run a verdict is judged over (the sliding window)
RECENT = 5
#: source metrics (Spark's ``SourceProgress.metrics``) that count work not yet read
BACKLOG_METRICS = ("numFilesOutstanding", "numBytesOutstanding", "maxOffsetsBehindLatest")
_BACKLOG_UNIT = {"numFilesOutstanding": "files outstanding", "numBytesOutstanding": "bytes outstanding",
                 "maxOffsetsBehindLatest": "records behind latest"}


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """``code`` is one of ok, starting, waiting, slow, stuck, failed, stopped; ``text`` a short
    explanation for the screen."""

    code: str
    text: str


@dataclass(frozen=True, slots=True)
class CheckpointHead:
    """The latest planned batch (``offsets/N``, with its batchTimestampMs in epoch ms) and
    the latest committed batch (``commits/N``) of one checkpoint."""

    offsets_batch: int | None
    commit_batch: int | None
    offsets_timestamp_ms: int | None = None

    @property
    def planned(self) -> int | None:
        """The batch planned and not committed (offsets/N without commits/N), else None."""
        if self.offsets_batch is None or (self.commit_batch is not None and self.commit_batch >= self.offsets_batch):
            return None
        return self.offsets_batch


def this_run(row: QueryRow, recent: int = RECENT) -> list[QueryProgress]:
    """The last ``recent`` progress events of the query's current run (a restart starts a
    new window: the previous run's batches say nothing of this one's)."""
    return [p for p in row.recent if p.run_id == row.run_id][-recent:]


def stuck_limit_ms(durations: list[int], interval_ms: int | None) -> int:
    """How long a planned batch may run before it is stuck (ms): :data:`STUCK_FACTOR` × the
    slowest of ``durations`` (the recent batches' ``batchDuration``, ms), at least two trigger
    intervals (``interval_ms``, None when the trigger has none or is unknown) and
    :data:`MIN_STUCK_MS`."""
    return max(STUCK_FACTOR * max(durations, default=0), 2 * (interval_ms or 0), MIN_STUCK_MS)


def diagnose(
    row: QueryRow,
    head: CheckpointHead | None,
    trigger: Trigger | None,
    now_ms: int,
    real_time: bool = False,
    recent: int = RECENT,
) -> Diagnosis:
    """Diagnose one query from its row, its checkpoint head, the trigger it runs with (None:
    unknown) and the clock (``now_ms`` epoch ms, injectable); ``real_time`` switches to the
    real-time rules (module docstring). Never raises."""
    if row.status == "failed":
        first = (row.exception or "").strip().splitlines()[:1]
        batch = f" in batch {row.failed_batch_id}" if row.failed_batch_id is not None else ""
        return Diagnosis("failed", f"failed{batch}: {first[0] if first else 'unknown error'}")
    planned = head.planned if head is not None else None
    if planned is not None and row.batch_id is not None and row.batch_id >= planned:
        planned = None  # its progress came (after commits/N): the checkpoint scan is behind
    if row.status == "stopped":
        if planned is not None:
            return Diagnosis("stopped", f"stopped; batch {planned} planned, not committed (re-run on restart)")
        return Diagnosis("stopped", "stopped")
    if row.status in ("queued", "not run"):
        return Diagnosis("waiting" if row.status == "queued" else "stopped", row.note or row.status)
    window = this_run(row, recent)
    interval = trigger.interval_ms if trigger is not None else None
    if planned is not None and head is not None and head.offsets_timestamp_ms is not None:
        since = max(head.offsets_timestamp_ms, row.started_ms or 0)
        age = max(0, now_ms - since)
        if real_time:
            limit = 2 * (interval or _interval_seen(window)) + MIN_STUCK_MS
        else:
            limit = stuck_limit_ms([p.batch_duration for p in window], interval)
        if not window and not real_time:
            return Diagnosis("starting", f"starting: batch {planned} running {duration(age)}, none finished yet")
        if age > limit:
            return Diagnosis("stuck", f"stuck: batch {planned} running {duration(age)}, "
                                      f"no commit (limit {duration(limit)} from its recent batches)")
    if row.status == "starting" or (not window and row.progress_count == 0):
        return Diagnosis("starting", "starting")
    if real_time:
        return _diagnose_real_time(window, interval if trigger is not None and trigger.real_time else None)
    if row.status == "idle":
        # Spark's own QueryIdleEvent: no new data now, whatever the past batches took
        return Diagnosis("waiting", "waiting for data")
    behind = _falling_behind(window)
    if behind is not None:
        return Diagnosis("slow", behind)
    if trigger is not None and trigger.kind == "processingTime" and interval and len(window) >= 3 \
            and all(p.batch_duration > interval for p in window[-3:]):
        # Spark then starts each batch as the last one ends (its ProcessingTimeExecutor logs
        # "falling behind" about the trigger's cadence): said, but not alarmed — whether the
        # data falls behind is what the backlog signs above tell
        took = min(p.batch_duration for p in window[-3:])
        return Diagnosis("ok", f"back to back: batches ≥ {duration(took)}, over the {duration(interval)} trigger")
    if window and window[-1].num_input_rows == 0:
        return Diagnosis("waiting", "waiting for data")
    return Diagnosis("ok", "ok")


def _backlog(p: QueryProgress, metric: str) -> float | None:
    vals = []
    for s in p.sources:
        try:
            vals.append(float(s.metrics[metric]))
        except (KeyError, TypeError, ValueError):
            continue
    return sum(vals) if vals else None


def _falling_behind(window: list[QueryProgress]) -> str | None:
    """The first backlog metric that rose across each of the last three or more batches
    (text for the screen), else None."""
    if len(window) < 3:
        return None
    for metric in BACKLOG_METRICS:
        values = [_backlog(p, metric) for p in window]
        known = [v for v in values if v is not None]
        if len(known) == len(values) and all(a < b for a, b in pairwise(known)):
            return f"slow: falling behind, {known[-1]:,.0f} {_BACKLOG_UNIT[metric]} (rising)"
    return None


def _interval_seen(window: list[QueryProgress]) -> int:
    """A real-time query's checkpoint interval as run (median batchDuration, ms)."""
    durations = sorted(p.batch_duration for p in window)
    return max(1, durations[len(durations) // 2]) if durations else 1


def _diagnose_real_time(window: list[QueryProgress], trigger_ms: int | None) -> Diagnosis:
    figs = realtime.figures(window, trigger_ms)
    if figs is None:
        return Diagnosis("waiting", "real-time: first interval running")
    behind = f", {figs.behind_latest:,.0f} records behind latest" if figs.behind_latest is not None else ""
    if figs.behind_growing:
        return Diagnosis("slow", f"real-time: falling behind{behind} (growing)")
    if trigger_ms and figs.overrun_ms is not None and figs.overrun_ms > trigger_ms // 2:
        return Diagnosis("slow", f"real-time: interval overran by {figs.overrun_ms / 1000:,.1f} s{behind}")
    interval = f"{figs.interval_ms / 1000:,.0f} s interval"
    if figs.last_rows == 0:
        return Diagnosis("waiting", f"real-time: waiting for data ({interval})")
    return Diagnosis("ok", f"real-time: {figs.last_rows:,} rows in last {interval}{behind}")
