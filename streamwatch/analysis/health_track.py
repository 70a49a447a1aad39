"""The health bookkeeping of one watched checkpoint: :class:`HealthTracker` keeps what the
sliding window (:class:`~streamwatch.analysis.health_window.HealthWindow`) needs beyond the
watcher's own batches and status — every lag sample taken, the run outcomes a followed
listener recording told (``QueryStartedEvent``/``QueryProgressEvent``/
``QueryTerminatedEvent``) — and turns each judgement into a
:class:`~streamwatch.analysis.records.QueryHealth` record when the health changed.

The watcher (:class:`~streamwatch.analysis.watch.CheckpointWatcher`) owns one and hands it
its status, batches and commit times at each judgement; the tracker reads no file.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, replace

from streamwatch.analysis.health_window import Health, HealthWindow, RunOutcome, judge_health
from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, QueryHealth, SourceLag
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.sparkjson import iso_to_epoch_ms

#: Lag samples kept per file source for the health window.
LAG_SAMPLES = 20
#: Runs kept (listener outcomes) for the health window.
RUNS_KEPT = 20


@dataclass(frozen=True, slots=True)
class WatchedQuery:
    """Who a health record is about: the query ``id`` (the checkpoint's ``metadata``), its
    display ``name`` and the checkpoint ``url``."""

    id: str
    name: str
    checkpoint: str


class HealthTracker:
    """The lag samples (oldest first, :data:`LAG_SAMPLES` per file source), the run outcomes
    by run id (None until a listener event was observed: no account of runs) and the last
    :class:`QueryHealth` emitted (:attr:`last`, None before the first judgement)."""

    def __init__(self) -> None:
        self.lag_samples: deque[SourceLag] = deque(maxlen=LAG_SAMPLES)
        self.runs: OrderedDict[str, RunOutcome] | None = None
        self.last: QueryHealth | None = None

    def size_for(self, file_sources: int) -> None:
        """Keep :data:`LAG_SAMPLES` samples per file source (the samples so far are dropped)."""
        self.lag_samples = deque(maxlen=LAG_SAMPLES * max(1, file_sources))

    def add_lags(self, lags: Iterable[SourceLag]) -> None:
        """Keep these lag measurements as the window's samples (the oldest fall out)."""
        self.lag_samples.extend(lags)

    def observe_run(self, event: QueryStarted | QueryProgress | QueryTerminated) -> None:
        """Take in one listener event of the query: the run's start
        (``QueryStartedEvent.timestamp``), its last reported batch id, and whether it
        terminated with an exception (:attr:`QueryTerminated.failed`)."""
        runs = self.runs if self.runs is not None else OrderedDict()
        self.runs = runs
        r = runs.get(event.run_id) or RunOutcome(event.run_id, None, None, False)
        if isinstance(event, QueryStarted):
            r = replace(r, started_ms=iso_to_epoch_ms(event.timestamp))
        elif isinstance(event, QueryProgress):
            r = replace(r, last_batch_id=max(event.batch_id, r.last_batch_id if r.last_batch_id is not None else -1))
        else:
            r = replace(r, failed=event.failed, error=event.exception)
        runs[event.run_id] = r
        while len(runs) > RUNS_KEPT:
            runs.popitem(last=False)

    def window(self, status: CheckpointStatus, batches: Iterable[CheckpointBatch],
               commit_ms: Iterable[tuple[int, int]]) -> HealthWindow:
        """The window judged at ``status.at_ms``: ``status``, the recent committed ``batches``
        (oldest first), ``commit_ms`` (batch id, ``commits/N`` mtime ms) and what is kept here."""
        return HealthWindow(now_ms=status.at_ms, status=status, batches=tuple(batches), lags=tuple(self.lag_samples),
                            runs=tuple(self.runs.values()) if self.runs is not None else None,
                            commit_ms=tuple(commit_ms))

    def change(self, query: WatchedQuery, window: HealthWindow) -> list[QueryHealth]:
        """The :class:`QueryHealth` record of ``window``'s verdict when its health changed
        since :attr:`last`, else nothing."""
        verdict = judge_health(window)
        before = self.last
        if before is not None and before.health is verdict.health:
            return []
        self.last = QueryHealth(query.id, query.name, query.checkpoint, window.now_ms, verdict,
                                before.health if before is not None else None)
        return [self.last]

    def current(self) -> Health | None:
        """The latest verdict's :class:`Health` (None before the first judgement)."""
        return self.last.health if self.last is not None else None
