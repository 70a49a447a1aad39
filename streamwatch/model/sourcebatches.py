"""Which query batch read which of a file source's own log batches.

A file source numbers its log (``sources/<id>/<n>``, mirrors ``FileStreamSourceLog``) with its
own counter, advanced only when ``FileStreamSource.fetchMaxOffset`` finds new files; the
query's ``offsets/K`` records the counter it reached as ``{"logOffset": n}``
(``FileStreamSourceOffset``). So query batch K read the source-log batches
``(logOffset of K-1, logOffset of K]`` — none when the two are equal (a no-data batch of a
stateful query with a watermark, or a batch where only another source had data) — and the
source-log batch id is *not* the query's batch id.

A source is known by its folder name ``<id>`` (:attr:`SourceLog.name`): its index ``0``,
``1``… — its line in an ``OffsetSeq`` (offsets v1), its ``sourceId`` in an ``OffsetMap``
(v2) — or, for a source named with ``DataStreamReader.name`` (Spark 4.2+, offsets v2), that
name, which is also its ``sourceId``.

Where ``offsets/K`` or ``offsets/K-1`` is missing (deleted by retention, never parsed, torn),
the files of batch K are unknown: said as None, never guessed. Batch 0 starts from -1.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

from streamwatch.model.batchlogs import OffsetLogEntry
from streamwatch.model.filelogs import FileEntry, SourceLog


def offset_position(entry: OffsetLogEntry, source: str | int) -> int | None:
    """Where file source ``source`` (its ``sources/<source>/`` folder name; an int is a
    numbered source's index) sits in ``entry``'s offsets: the position in an ``OffsetSeq``
    (v1), the line whose ``sourceId`` is ``source`` in an ``OffsetMap`` (v2); None when the
    entry has no such source."""
    return entry.position(source)


def log_offset_of(entry: OffsetLogEntry, source: str | int) -> int | None:
    """The ``logOffset`` file source ``source`` had reached in ``entry`` (-1 when the source
    had no offset yet, written ``-``); None when the entry does not say (no such source, or
    its offset is not a file source's)."""
    pos = offset_position(entry, source)
    if pos is None:
        return None
    p = entry.parsed[pos] if pos < len(entry.parsed) else None
    if p is None:
        return -1 if pos < len(entry.sources) and entry.sources[pos] is None else None
    return p.log_offset


def log_at(logs: Iterable[SourceLog], entry: OffsetLogEntry, position: int) -> SourceLog | None:
    """The file-source log of the source on line ``position`` of ``entry`` (matched by its id,
    so a named source's ``sources/<name>/`` is found whatever line Spark wrote it on); None
    when that source has no log (not a file source, or its folder is gone)."""
    sid = entry.source_id(position)
    return next((log for log in logs if log.name == sid), None)


@dataclass(frozen=True, slots=True)
class SourceBatches:
    """One file source's log batches mapped onto the query's batches. ``name``: the
    source's folder ``sources/<name>/`` (see :class:`SourceLog`); ``log_offsets``: query
    batch id → the ``logOffset`` in ``offsets/<batch id>`` (-1: nothing read yet), for every
    offsets entry read; ``absent``: batches whose ``OffsetMap`` (v2) has no line for the
    source — with source evolution (Spark 4.2+) a named source can be added or dropped, so
    it read nothing then, and a source added at batch K starts its log afresh."""

    name: str
    log_offsets: Mapping[int, int] = field(default_factory=dict)
    absent: frozenset[int] = frozenset()
    _ids: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    _ends: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = tuple(sorted(self.log_offsets))
        object.__setattr__(self, "_ids", ids)
        object.__setattr__(self, "_ends", tuple(self.log_offsets[b] for b in ids))

    @property
    def index(self) -> int | None:
        """The source's index when its folder is numbered; None for a named source."""
        return int(self.name) if self.name.isdecimal() else None

    @classmethod
    def from_offsets(cls, source: str | int, offsets: Iterable[OffsetLogEntry]) -> SourceBatches:
        """``source``: the folder name (an int: a numbered source's index)."""
        name = str(source)
        out: dict[int, int] = {}
        absent: set[int] = set()
        for e in offsets:
            lo = log_offset_of(e, name)
            if lo is not None:
                out[e.batch_id] = lo
            elif e.version >= 2 and e.position(name) is None:
                absent.add(e.batch_id)  # v1 has no names: a missing line there stays unknown
        return cls(name, out, frozenset(absent))

    def log_batches(self, batch_id: int) -> range | None:
        """Source-log batch ids query batch ``batch_id`` read: ``range(prev + 1, cur + 1)``
        (empty when it read none, or the source was not in the query then); None when
        ``offsets/<batch_id>`` or, after batch 0, ``offsets/<batch_id - 1>`` is not known."""
        cur = self.log_offsets.get(batch_id)
        if cur is None:
            return range(0) if batch_id in self.absent else None
        prev = -1 if batch_id == 0 or batch_id - 1 in self.absent else self.log_offsets.get(batch_id - 1)
        if prev is None:
            return None
        return range(prev + 1, max(prev, cur) + 1)

    def query_batch(self, log_batch_id: int) -> int | None:
        """The query batch that read source-log batch ``log_batch_id``; None when not known
        (the offsets that would tell are gone, or no planned batch has reached it yet).
        O(log batches)."""
        ids, ends = self._ids, self._ends
        if any(a > b for a, b in pairwise(ends)):  # logOffset went back (odd log): only a sole hit
            hits = [b for b in ids if (r := self.log_batches(b)) is not None and log_batch_id in r]
            return hits[0] if len(hits) == 1 else None
        k = bisect_left(ends, log_batch_id)
        if k < len(ids):
            r = self.log_batches(ids[k])
            if r is not None and log_batch_id in r:
                return ids[k]
        return None

    def read_up_to(self, batch_id: int) -> int | None:
        """The highest source-log batch id read by query batch ``batch_id`` or earlier (-1:
        none); None when ``offsets/<batch_id>`` is not known."""
        return self.log_offsets.get(batch_id)


@dataclass(frozen=True, slots=True)
class FilesByBatch:
    """Every file source of a checkpoint mapped onto the query's batches: one
    (``sources/<name>/`` log, its :class:`SourceBatches`) pair per file source."""

    sources: tuple[tuple[SourceLog, SourceBatches], ...] = ()

    @classmethod
    def build(cls, logs: Iterable[SourceLog], offsets: Iterable[OffsetLogEntry]) -> FilesByBatch:
        offs = tuple(offsets)
        return cls(tuple((log, SourceBatches.from_offsets(log.name, offs)) for log in logs))

    @property
    def entries_loaded(self) -> bool:
        return all(log.entries_loaded for log, _ in self.sources)

    def known(self, batch_id: int) -> bool:
        """True when every file source's log batches of query batch ``batch_id`` are known."""
        return all(m.log_batches(batch_id) is not None for _, m in self.sources)

    def files_read(self, batch_id: int, source: str | int | None = None) -> tuple[FileEntry, ...] | None:
        """Files query batch ``batch_id`` read from every file source (or from
        ``sources/<source>/`` only: a folder name, or a numbered source's index), in log
        order; None when not known for one of them (see :meth:`SourceBatches.log_batches`)
        or the log entries were not read."""
        out: list[FileEntry] = []
        for log, m in self.sources:
            if source is not None and log.name != str(source):
                continue
            r = m.log_batches(batch_id)
            if r is None or not log.entries_loaded:
                return None
            if len(r):
                out.extend(e for e in log.entries if e.batch_id in r)
        return tuple(out)

    def query_batches(self) -> list[tuple[str, FileEntry, int | None]]:
        """(source folder name, entry, the query batch that read it — None when not known) for
        every entry of every file-source log, in log order. O(entries × log(query batches))."""
        out: list[tuple[str, FileEntry, int | None]] = []
        for log, m in self.sources:
            memo: dict[int, int | None] = {}
            for e in log.entries:
                if e.batch_id not in memo:
                    memo[e.batch_id] = m.query_batch(e.batch_id)
                out.append((log.name, e, memo[e.batch_id]))
        return out

    def counts(self) -> dict[int, int]:
        """Query batch id → files read (batches that read none are absent; see :meth:`known`)."""
        out: dict[int, int] = {}
        for _, _, b in self.query_batches():
            if b is not None:
                out[b] = out.get(b, 0) + 1
        return out

    def batches_of(self, source: str | int) -> SourceBatches | None:
        """The :class:`SourceBatches` of ``sources/<source>/`` (a folder name, or a numbered
        source's index; None: no such log)."""
        return next((m for log, m in self.sources if log.name == str(source)), None)
