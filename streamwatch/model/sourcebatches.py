"""Which query batch read which of a file source's own log batches.

A file source numbers its log (``sources/<i>/<n>``, mirrors ``FileStreamSourceLog``) with its
own counter, advanced only when ``FileStreamSource.fetchMaxOffset`` finds new files; the
query's ``offsets/K`` records the counter it reached as ``{"logOffset": n}``
(``FileStreamSourceOffset``). So query batch K read the source-log batches
``(logOffset of K-1, logOffset of K]`` — none when the two are equal (a no-data batch of a
stateful query with a watermark, or a batch where only another source had data) — and the
source-log batch id is *not* the query's batch id.

Where ``offsets/K`` or ``offsets/K-1`` is missing (deleted by retention, never parsed, torn),
the files of batch K are unknown: said as None, never guessed. Batch 0 starts from -1.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from streamwatch.model.batchlogs import OffsetLogEntry
from streamwatch.model.filelogs import FileEntry, SourceLog


def offset_position(entry: OffsetLogEntry, index: int) -> int | None:
    """Where file source ``index`` (``sources/<index>/``) sits in ``entry``'s offsets: the
    position in an ``OffsetSeq`` (v1), the line whose ``sourceId`` is ``index`` in an
    ``OffsetMap`` (v2); None when the entry has no such source."""
    if entry.version >= 2:
        sid = str(index)
        return next((i for i, s in enumerate(entry.source_ids) if s == sid), None)
    return index if index < len(entry.sources) else None


def log_offset_of(entry: OffsetLogEntry, index: int) -> int | None:
    """The ``logOffset`` file source ``index`` had reached in ``entry`` (-1 when the source
    had no offset yet, written ``-``); None when the entry does not say (no such source, or
    its offset is not a file source's)."""
    pos = offset_position(entry, index)
    if pos is None:
        return None
    p = entry.parsed[pos] if pos < len(entry.parsed) else None
    if p is None:
        return -1 if pos < len(entry.sources) and entry.sources[pos] is None else None
    return p.log_offset


@dataclass(frozen=True, slots=True)
class SourceBatches:
    """One file source's log batches mapped onto the query's batches. ``index``: the
    source's folder ``sources/<index>/``; ``log_offsets``: query batch id → the ``logOffset``
    in ``offsets/<batch id>`` (-1: nothing read yet), for every offsets entry read."""

    index: int
    log_offsets: Mapping[int, int] = field(default_factory=dict)
    _ids: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    _ends: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ids = tuple(sorted(self.log_offsets))
        object.__setattr__(self, "_ids", ids)
        object.__setattr__(self, "_ends", tuple(self.log_offsets[b] for b in ids))

    @classmethod
    def from_offsets(cls, index: int, offsets: Iterable[OffsetLogEntry]) -> SourceBatches:
        out: dict[int, int] = {}
        for e in offsets:
            lo = log_offset_of(e, index)
            if lo is not None:
                out[e.batch_id] = lo
        return cls(index, out)

    def log_batches(self, batch_id: int) -> range | None:
        """Source-log batch ids query batch ``batch_id`` read: ``range(prev + 1, cur + 1)``
        (empty when it read none); None when ``offsets/<batch_id>`` or, after batch 0,
        ``offsets/<batch_id - 1>`` is not known."""
        cur = self.log_offsets.get(batch_id)
        if cur is None:
            return None
        prev = -1 if batch_id == 0 else self.log_offsets.get(batch_id - 1)
        if prev is None:
            return None
        return range(prev + 1, max(prev, cur) + 1)

    def query_batch(self, log_batch_id: int) -> int | None:
        """The query batch that read source-log batch ``log_batch_id``; None when not known
        (the offsets that would tell are gone, or no planned batch has reached it yet).
        O(log batches)."""
        ids, ends = self._ids, self._ends
        if any(a > b for a, b in zip(ends, ends[1:])):  # logOffset went back (odd log): only a sole hit
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
    (``sources/<i>/`` log, its :class:`SourceBatches`) pair per file source."""

    sources: tuple[tuple[SourceLog, SourceBatches], ...] = ()

    @classmethod
    def build(cls, logs: Iterable[SourceLog], offsets: Iterable[OffsetLogEntry]) -> FilesByBatch:
        offs = tuple(offsets)
        return cls(tuple((log, SourceBatches.from_offsets(log.index, offs)) for log in logs))

    @property
    def entries_loaded(self) -> bool:
        return all(log.entries_loaded for log, _ in self.sources)

    def known(self, batch_id: int) -> bool:
        """True when every file source's log batches of query batch ``batch_id`` are known."""
        return all(m.log_batches(batch_id) is not None for _, m in self.sources)

    def files_read(self, batch_id: int, index: int | None = None) -> tuple[FileEntry, ...] | None:
        """Files query batch ``batch_id`` read from every file source (or from
        ``sources/<index>/`` only), in log order; None when not known for one of them (see
        :meth:`SourceBatches.log_batches`) or the log entries were not read."""
        out: list[FileEntry] = []
        for log, m in self.sources:
            if index is not None and log.index != index:
                continue
            r = m.log_batches(batch_id)
            if r is None or not log.entries_loaded:
                return None
            if len(r):
                out.extend(e for e in log.entries if e.batch_id in r)
        return tuple(out)

    def query_batches(self) -> list[tuple[int, FileEntry, int | None]]:
        """(source index, entry, the query batch that read it — None when not known) for every
        entry of every file-source log, in log order. O(entries × log(query batches))."""
        out: list[tuple[int, FileEntry, int | None]] = []
        for log, m in self.sources:
            memo: dict[int, int | None] = {}
            for e in log.entries:
                if e.batch_id not in memo:
                    memo[e.batch_id] = m.query_batch(e.batch_id)
                out.append((log.index, e, memo[e.batch_id]))
        return out

    def counts(self) -> dict[int, int]:
        """Query batch id → files read (batches that read none are absent; see :meth:`known`)."""
        out: dict[int, int] = {}
        for _, _, b in self.query_batches():
            if b is not None:
                out[b] = out.get(b, 0) + 1
        return out

    def batches_of(self, index: int) -> SourceBatches | None:
        """The :class:`SourceBatches` of ``sources/<index>/`` (None: no such log)."""
        return next((m for log, m in self.sources if log.index == index), None)
