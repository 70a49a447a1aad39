"""A recording or Spark event log merged into a checkpoint watch (``streamwatch watch PATH…
--recording FILE``): per query id + batch id the listener's numbers win where both exist.

:class:`ListenerNumbers` reads the progress updates of a streamwatch JSONL recording or a Spark
event log (local or fsspec URL; followed while it is written) keyed by ``(id, batchId)``.
:class:`MergedRecords` merges them into the watch's :class:`CheckpointBatch` records: the
batch's ``durationMs`` becomes the listener's ``triggerExecution``, ``plannedAtMs`` the
progress ``timestamp``, ``watermarkMs`` the ``eventTime.watermark``, and
:class:`ListenerFigures` carries what only the listener knows (rows, rates, run id). A batch
committed before its progress update was read waits up to ``grace_s`` for it, then goes out
as the checkpoint tells it.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from streamwatch.analysis.records import CheckpointBatch, ListenerFigures, WatchRecord
from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.sparkjson import iso_to_epoch_ms

#: Progress updates kept (the oldest are forgotten first).
KEEP = 200_000

__all__ = ["KEEP", "ListenerFigures", "ListenerNumbers", "MergedRecords", "merge_batch"]


def merge_batch(rec: CheckpointBatch, p: QueryProgress) -> CheckpointBatch:
    """``rec`` with the listener's numbers where both know them (see the module docstring)."""
    duration = p.duration_ms.get("triggerExecution", p.batch_duration)
    planned = iso_to_epoch_ms(p.timestamp) if p.timestamp else None
    return replace(
        rec, duration_ms=duration, planned_at_ms=planned if planned is not None else rec.planned_at_ms,
        watermark_ms=p.watermark_ms if p.watermark else rec.watermark_ms,
        listener=ListenerFigures(p.run_id, p.num_input_rows, p.input_rows_per_second, p.processed_rows_per_second,
                                 p.num_output_rows if p.sink is not None else None,
                                 {k: int(v) for k, v in p.duration_ms.items()}))


class ListenerNumbers:
    """The progress updates of the recording or event log at ``path`` by ``(query id,
    batch id)``. :meth:`load` reads what is there now; :meth:`follow` keeps reading in a
    thread as the file grows (until :meth:`close`). Raises :class:`EventSourceError` (one
    line) when ``path`` cannot be read or is neither a recording nor an event log."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.report = ReadReport()
        self.progress: OrderedDict[tuple[str, int], QueryProgress] = OrderedDict()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: str | None = None
        #: run events (started, progress, terminated) not yet taken: the watch's health window
        self.run_events: list[QueryStarted | QueryProgress | QueryTerminated] = []

    def _take(self, obj: Any) -> None:
        if isinstance(obj, QueryProgress):
            with self._lock:
                self.progress[(obj.id, obj.batch_id)] = obj
                while len(self.progress) > KEEP:
                    self.progress.popitem(last=False)
        if isinstance(obj, (QueryStarted, QueryProgress, QueryTerminated)):
            with self._lock:
                self.run_events.append(obj)
                if len(self.run_events) > KEEP:  # nobody takes them (a merge without a watch)
                    del self.run_events[: len(self.run_events) - KEEP]

    def take_run_events(self) -> list[QueryStarted | QueryProgress | QueryTerminated]:
        """The run events read since the last call, in file order."""
        with self._lock:
            out, self.run_events = self.run_events, []
        return out

    def load(self) -> ListenerNumbers:
        """Read the whole file now (no following)."""
        for obj in read_events(self.path, self.report):
            self._take(obj)
        return self

    def follow(self, poll_s: float = 0.2) -> ListenerNumbers:
        """Read the file and what is appended to it in a daemon thread; a file that cannot be
        followed (a compressed event log) is read once. Errors go to :attr:`error`."""
        try:
            events = read_events(self.path, self.report, follow=True, stop=self._stop, poll_s=poll_s)
        except EventSourceError:
            events = read_events(self.path, self.report)

        def run() -> None:
            try:
                for obj in events:
                    self._take(obj)
            except Exception as e:  # reported, never raised into the watch
                self.error = str(e)

        self._thread = threading.Thread(target=run, name="streamwatch-watch-recording", daemon=True)
        self._thread.start()
        return self

    @property
    def following(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def get(self, query_id: str, batch_id: int) -> QueryProgress | None:
        with self._lock:
            return self.progress.get((query_id, batch_id))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)


@dataclass
class _Held:
    rec: CheckpointBatch
    since: float


class MergedRecords:
    """Merges ``numbers`` into watch records: :meth:`take` returns the records ready now
    (batches merged, or held past ``grace_s`` seconds while the file is being followed);
    :meth:`flush` the held ones, unmerged where nothing arrived."""

    def __init__(self, numbers: ListenerNumbers, grace_s: float = 3.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.numbers = numbers
        self.grace_s = grace_s
        self.clock = clock
        self._held: list[_Held] = []
        self.merged = 0

    def _merged(self, rec: CheckpointBatch) -> CheckpointBatch | None:
        p = self.numbers.get(rec.id, rec.batch_id)
        if p is None:
            return None
        self.merged += 1
        return merge_batch(rec, p)

    def take(self, records: list[WatchRecord]) -> list[WatchRecord]:
        now = self.clock()
        out: list[WatchRecord] = []
        still: list[_Held] = []
        for h in self._held:
            m = self._merged(h.rec)
            if m is not None:
                out.append(m)
            elif now - h.since >= self.grace_s or not self.numbers.following:
                out.append(h.rec)
            else:
                still.append(h)
        for r in records:
            if not isinstance(r, CheckpointBatch):
                out.append(r)
                continue
            m = self._merged(r)
            if m is not None:
                out.append(m)
            elif self.numbers.following and self.grace_s > 0:
                still.append(_Held(r, now))
            else:
                out.append(r)
        self._held = still
        return out

    def flush(self) -> list[WatchRecord]:
        out: list[WatchRecord] = []
        for h in self._held:
            out.append(self._merged(h.rec) or h.rec)
        self._held = []
        return out
