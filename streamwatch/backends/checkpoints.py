"""The dashboard on checkpoints alone (``streamwatch watch PATH…``; no Spark, no listener).

:class:`CheckpointBackend` is a :class:`~streamwatch.backends.base.Backend` over a
:class:`~streamwatch.analysis.session.CheckpointWatch`: every committed batch becomes a
``QueryProgress`` (batch id, ``triggerExecution`` = commit time − ``batchTimestampMs``,
watermark; row counts are not in a checkpoint and show as 0), every watched query a
``QueryStarted``; stuck/idle verdicts, a file source not catching up and findings arrive as
notices, and after every poll
that saw a commit the pipeline graph (:class:`~streamwatch.analysis.pipeview.PipelineGraph`:
backlog per edge, end-to-end latency, the slowest layer) for the pipeline tab.
It supports no control: the dashboard says in its status line that start/stop/restart,
land, trigger and results need Spark (:meth:`CheckpointBackend.why_not`).
"""

from __future__ import annotations

import dataclasses
import posixpath
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from streamwatch.analysis.fmt import CHECKPOINTS_SOURCE
from streamwatch.analysis.merge import ListenerNumbers, MergedRecords
from streamwatch.analysis.pipeview import graph_of_watch
from streamwatch.analysis.records import CheckpointBatch, CheckpointFinding, CheckpointStatus, SourceLag
from streamwatch.analysis.session import CheckpointWatch
from streamwatch.backends.base import Backend, Control
from streamwatch.model.events import QueryIdle, QueryProgress, QueryStarted
from streamwatch.model.runtime import NoticeLevel, QueryPlan, RecordedSession, RunPlan, RuntimeNotice

RUN_ID = "checkpoint"  # no run id in a checkpoint: every watched query shows this one


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def progress_of(rec: CheckpointBatch) -> QueryProgress:
    """The dashboard's progress event for a checkpoint batch (rows unknown → 0)."""
    event_time = {"watermark": _iso(rec.watermark_ms) or ""} if rec.watermark_ms else {}
    dur = rec.duration_ms or 0
    return QueryProgress(id=rec.id or rec.checkpoint, run_id=RUN_ID, timestamp=_iso(rec.planned_at_ms or rec.committed_at_ms),
                         name=rec.query, batch_id=rec.batch_id, batch_duration=dur,
                         duration_ms={"triggerExecution": dur}, event_time=event_time)


class CheckpointBackend(Backend):
    """Watches ``paths`` (checkpoints, folders of checkpoints, workspaces; local or fsspec
    URLs) every ``poll_s`` seconds. Discovery runs in the constructor, so a bad PATH raises
    :class:`~streamwatch.analysis.watch.WatchError` before the dashboard opens. ``recording``:
    a recording or Spark event log of the same queries, followed while written; a batch it
    has a progress update for is shown with the listener's numbers (that ``QueryProgress``:
    rows, rates, the duration breakdown) instead of the derived ones."""

    emits_pipeline = True

    def __init__(self, paths: list[str], poll_s: float = 1.0, history: int = 100,
                 storage_options: dict[str, Any] | None = None, recording: str | None = None) -> None:
        self.watch = CheckpointWatch(paths, poll_s=poll_s, history=history, storage_options=storage_options)
        found = self.watch.found()
        numbers = f"numbers from {posixpath.basename(recording.rstrip('/'))}" if recording else "no listener"
        self.watching = (f"{len(found)} checkpoint{'s' if len(found) != 1 else ''}, read every {poll_s:g} s"
                         + (f" ({numbers})" if recording else ""))
        self.plan = RunPlan(
            pipeline="watch",
            description=f"{len(found)} checkpoint(s), polled every {poll_s:g} s — {numbers}",
            queries=tuple(QueryPlan(query_name=f.name, layer="", checkpoint=f.url, table="") for f in found),
            landing=(),
            trigger="checkpoint",
        )
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started: set[str] = set()
        self._drawn = False
        self.merger = MergedRecords(ListenerNumbers(recording), grace_s=max(3.0, 2 * poll_s)) if recording else None

    def session(self) -> RecordedSession:
        """The dashboard's header: what is watched, and that no Spark runs (see
        :func:`streamwatch.analysis.fmt.session_line`)."""
        return RecordedSession(source=CHECKPOINTS_SOURCE, app_name=self.watching)

    def start(self, emit: Callable[[object], None]) -> None:
        """Say what is watched (the header), start the polling thread and return at once."""
        emit(self.session())
        self._thread = threading.Thread(target=self._run, args=(emit,), name="streamwatch-watch", daemon=True)
        self._thread.start()

    def _run(self, emit: Callable[[object], None]) -> None:
        try:
            if self.merger is not None:
                self.merger.numbers.follow()
            records = self.watch.open()
        except Exception as e:  # WatchError, EventSourceError: one line on screen
            emit(RuntimeNotice("error", str(e)))
            return
        emit(RuntimeNotice("info", f"watching {len(self.watch.watchers)} checkpoint(s) — controls need Spark"))
        while True:
            if self.merger is not None:
                records = self.merger.take(records)
            for r in records:
                self._emit(r, emit)
            if records or not self._drawn:  # the pipeline tab: after a commit or a status change
                emit(graph_of_watch(self.watch))
                self._drawn = True
            if self._stop.wait(self.poll_s):
                return
            try:
                records = self.watch.poll()
            except Exception as e:  # a storage hiccup: say so, keep polling
                emit(RuntimeNotice("warning", f"poll failed: {e}"))
                records = []

    def _emit(self, r: object, emit: Callable[[object], None]) -> None:
        if isinstance(r, (CheckpointBatch, CheckpointStatus)) and r.checkpoint not in self._started:
            self._started.add(r.checkpoint)
            emit(QueryStarted(id=r.id or r.checkpoint, run_id=RUN_ID, timestamp=None, name=r.query))
        if isinstance(r, CheckpointBatch):
            p = self.merger.numbers.get(r.id, r.batch_id) if self.merger is not None and r.listener else None
            emit(dataclasses.replace(p, name=r.query) if p is not None else progress_of(r))
        elif isinstance(r, CheckpointStatus):
            if r.stuck:
                emit(RuntimeNotice("error", f"{r.query} stuck: batch {r.in_flight_batch_id} planned "
                                            f"{r.in_flight_s:.0f} s ago, no commit (cadence {r.cadence_ms} ms)"))
            elif r.idle:
                emit(QueryIdle(id=r.id or r.checkpoint, run_id=RUN_ID, timestamp=_iso(r.at_ms)))
        elif isinstance(r, SourceLag) and r.catching_up is False and r.lag_s is not None:
            emit(RuntimeNotice("warning", f"{r.query}: source {r.source} is not catching up: {r.backlog} file(s) "
                                          f"waiting, the oldest landed {r.lag_s:.0f} s ago"))
        elif isinstance(r, CheckpointFinding):
            level: NoticeLevel = "error" if r.severity == "error" else "warning" if r.severity == "warning" else "info"
            emit(RuntimeNotice(level, f"{r.query}: {r.code}: {r.message}"))

    def stop(self) -> None:
        """Stop polling (idempotent)."""
        self._stop.set()
        if self.merger is not None:
            self.merger.numbers.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)

    # -- controls: a checkpoint cannot be told anything (CONTROLS is empty) ------------------
    def why_not(self, control: Control) -> str:
        return f"{control.value} needs Spark — `streamwatch watch` only reads checkpoints"
