"""How far a query's file source is behind, in seconds, from the checkpoint and the source's
folder alone (no listener, no Spark): :class:`FileSourceLag`.

A file source records every file it plans into a batch in its own log (``sources/<id>/``,
``FileStreamSourceLog``: path and modification time per file) when the batch is planned. The
files of the source's folder that the log does not name are its backlog; the oldest one's
modification time is how long the query has been behind. Files Spark never reads are not
backlog: names it treats as hidden (``InMemoryFileIndex``: a leading ``_`` without ``=``, a
leading ``.``, a ``._COPYING_`` suffix) and files older than the newest read one by more than
the source's ``maxFileAge`` (Spark's default, 7 days, assumed: the option is not in the
checkpoint).

The catch-up estimate compares, since the planned time of the oldest of the recent committed
batches, the files read per second with the files landed per second: ``backlog ÷ (read −
landed)`` seconds when positive; a backlog with no batch planned since it landed is not
catching up whatever the past rate was: no batch planned for longer than the query's cadence
allows (a stopped query, or an availableNow run that ended) drains nothing.
"""

from __future__ import annotations

import bisect
import posixpath
from collections.abc import Iterable

from streamwatch.analysis.batchio import read_log_file
from streamwatch.analysis.probe import Probe
from streamwatch.analysis.records import SourceLag

#: Spark's ``maxFileAge`` default for file sources (``FileStreamOptions``), ms.
MAX_FILE_AGE_MS = 7 * 24 * 3600 * 1000


def spark_hidden(name: str) -> bool:
    """Whether Spark's file listing leaves ``name`` out (``HadoopFSUtils.shouldFilterOutPathName``)."""
    excluded = (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")
    return excluded and not name.startswith(("_common_metadata", "_metadata"))


class FileSourceLag:
    """The backlog and lag of file source ``source`` (its folder under ``sources/``) of the
    checkpoint under ``probe``'s ``root``. ``entries`` are the source log's files as read at
    start — (URI, modification time ms) — and ``last_log_id`` its latest log batch; :meth:`poll`
    then reads only log files written since (one look-up per poll when nothing was planned) and
    lists the source's folder once (a stat per unread file only)."""

    def __init__(self, probe: Probe, root: str, source: str, entries: Iterable[tuple[str, int]],
                 last_log_id: int) -> None:
        self.probe, self.source = probe, source
        self.log_folder = probe.join(root, "sources", source)
        self.last_log_id = last_log_id
        self.read: set[str] = set()
        self.folders: set[str] = set()
        self._read_mtimes: list[int] = []  # sorted: files landed since a time, by bisection
        self._newest_read_ms = 0
        self._add(entries)

    def _add(self, entries: Iterable[tuple[str, int]]) -> None:
        fresh = []
        for uri, mtime in entries:
            folder, name = posixpath.split(uri)
            self.folders.add(folder)
            if name not in self.read:
                self.read.add(name)
                fresh.append(mtime)
                self._newest_read_ms = max(self._newest_read_ms, mtime)
        if len(fresh) > 64:
            self._read_mtimes = sorted(self._read_mtimes + fresh)
        else:
            for m in fresh:
                bisect.insort(self._read_mtimes, m)

    def poll(self) -> None:
        """Take in the files of the batches planned since the last poll."""
        while True:
            got = read_log_file(self.probe, self.log_folder, self.last_log_id + 1, tail_only=True)
            if got is None:
                return
            rows, _ = got
            self.last_log_id += 1
            self._add((r["path"], int(r.get("timestamp") or 0)) for r in rows if isinstance(r.get("path"), str))

    def measure(self, *, query_id: str, query: str, checkpoint: str, now_ms: int, window_from_ms: int | None,
                files_read_in_window: int | None, planned_since_ms: int | None,
                patience_ms: int | None) -> SourceLag:
        """The :class:`SourceLag` now. ``window_from_ms``: the planned time of the oldest recent
        committed batch, ``files_read_in_window`` the files this source's committed batches read
        since (None: unknown); ``planned_since_ms`` the planned time of the latest batch;
        ``patience_ms`` how long files may wait with no new batch planned before the query is
        judged not catching up (about two trigger intervals; None: unknown, never judged so)."""

        def unknown(reason: str) -> SourceLag:
            return SourceLag(query_id, query, checkpoint, self.source, "file", now_ms, None, None, None, reason=reason)

        if not self.folders:
            return unknown("the source has read no file yet: its folder is not in the checkpoint")
        if len(self.folders) > 1:
            return unknown("the source reads several folders (partitioned or globbed): not listed")
        (folder,) = self.folders
        listing = self.probe.files_of(folder, lambda n: n in self.read or spark_hidden(n))
        if listing is None:
            return unknown(f"{folder} cannot be listed from here")
        if "_spark_metadata" in listing.dirs:  # Spark reads a sink's log there, not the listing
            return unknown(f"{folder} is a file sink's output: its pipeline edge (watch the writing query) carries the lag")
        if [d for d in listing.dirs if not spark_hidden(d)]:
            return unknown(f"{folder} holds sub-folders: not listed")
        floor = self._newest_read_ms - MAX_FILE_AGE_MS if self._newest_read_ms else None
        waiting = sorted(st.mtime_ms for st in listing.files.values() if floor is None or st.mtime_ms >= floor)
        oldest = waiting[0] if waiting else None
        lag_s = max(0.0, (now_ms - oldest) / 1000) if oldest is not None else 0.0
        backlog = len(waiting)
        arrival = processed = catchup = None
        catching_up: bool | None = None
        if window_from_ms is not None and files_read_in_window is not None and now_ms > window_from_ms:
            span_s = (now_ms - window_from_ms) / 1000
            landed = (len(self._read_mtimes) - bisect.bisect_left(self._read_mtimes, window_from_ms)
                      + len(waiting) - bisect.bisect_left(waiting, window_from_ms))
            arrival, processed = landed / span_s, files_read_in_window / span_s
            if backlog == 0:
                catching_up, catchup = True, 0.0
            elif planned_since_ms is not None and patience_ms is not None and now_ms - planned_since_ms > patience_ms:
                catching_up = False  # files wait and no batch was planned for longer than the cadence allows
            elif processed > arrival:
                catching_up, catchup = True, backlog / (processed - arrival)
            else:
                catching_up = False
        elif backlog == 0:
            catching_up, catchup = True, 0.0
        return SourceLag(query_id, query, checkpoint, self.source, "file", now_ms, backlog, oldest, lag_s,
                         arrival, processed, window_from_ms, catchup, catching_up)
