"""A checkpoint's compactible file logs, as read from disk (mirrors Spark's
``CompactibleFileStreamLog`` family): the file source's ``sources/<id>/``
(``FileStreamSourceLog``; ``<id>`` is the source's index ``0``, ``1``… or, for a source named
with ``DataStreamReader.name`` in Spark 4.2+, its name) and the file sink's
``<sink>/_spark_metadata/`` (``FileStreamSinkLog``), with ``N.compact`` files every
compaction interval.

Sizes are bytes; times are epoch milliseconds; paths are URI text as Spark wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class FileEntry(NamedTuple):
    """One file the file source read (mirrors ``FileStreamSource.FileEntry``): ``path`` (URI
    text as Spark wrote it), ``timestamp_ms`` (file modification time, epoch ms), ``batch_id``
    (the ``batchId`` of the source's own log: its own counter, advanced only when it adds
    files — not the query's batch id; :class:`~streamwatch.model.sourcebatches.FilesByBatch`
    maps it through the offsets' ``logOffset``)."""

    path: str
    timestamp_ms: int
    batch_id: int


class SinkFileEntry(NamedTuple):
    """One file in a file sink's ``_spark_metadata`` log (mirrors ``SinkFileStatus``): sizes
    in bytes, ``modification_time_ms`` epoch ms, ``action`` ``"add"`` or ``"delete"``;
    ``batch_id`` is the log file it came from (for a ``.compact`` file: that compaction's
    batch id, since compaction drops the original batch)."""

    path: str
    size: int
    is_dir: bool
    modification_time_ms: int
    block_replication: int
    block_size: int
    action: str
    batch_id: int


@dataclass(frozen=True, slots=True)
class CompactibleLog:
    """What both compactible logs (mirrors ``CompactibleFileStreamLog``) share: ``path`` of
    the log folder, ``batch_ids`` with a file present (plain or ``.compact``),
    ``compact_batch_ids`` (``N.compact`` files), the ``compact_interval`` (batches per
    compaction: compactions happen at batch ids ``k*interval - 1``; None when the ``.compact``
    files fit no interval) and where it comes from, ``compact_interval_source``: ``detected``
    (the ``.compact`` files), ``conf`` (the offsets log's
    ``spark.sql.streaming.{fileSource,fileSink}.log.compactInterval``) or ``default`` (Spark's 10),
    ``entry_count`` (lines in the files a reader needs: latest compact + later deltas),
    ``bytes_total`` and ``latest_compact_bytes`` (bytes), and whether ``entries`` were parsed
    (``entries_loaded``; a summary read only counts lines)."""

    path: str
    batch_ids: tuple[int, ...] = ()
    compact_batch_ids: tuple[int, ...] = ()
    compact_interval: int | None = None
    compact_interval_source: str = "detected"
    entry_count: int = 0
    bytes_total: int = 0
    latest_compact_bytes: int | None = None
    entries_loaded: bool = True

    @property
    def latest_batch_id(self) -> int | None:
        return self.batch_ids[-1] if self.batch_ids else None


@dataclass(frozen=True, slots=True)
class SourceLog(CompactibleLog):
    """``sources/<name>/`` of a file source (mirrors ``FileStreamSourceLog``): every file
    the source has read, in log order. ``name`` is the folder's name and the source's
    identity: the id its offsets carry (``OffsetLogEntry.source_ids``) — ``"0"``, ``"1"``…
    for an unnamed source (its index), the given name for a named one (offsets log v2)."""

    name: str = "0"
    entries: tuple[FileEntry, ...] = ()

    @property
    def index(self) -> int | None:
        """The source's index when its folder is numbered (``sources/0/``); None for a named
        source, which has no index (its offsets line is found by name)."""
        return int(self.name) if self.name.isdecimal() else None

    @property
    def ref(self) -> int | str:
        """How the JSON documents name the source: its index (an int) when numbered, as they
        always have, else its name."""
        return self.name if self.index is None else self.index

    def files_for_log_batch(self, log_batch_id: int) -> tuple[FileEntry, ...]:
        """Entries of the source log's own batch ``log_batch_id`` (``sources/<name>/<n>``): not the
        query's batch (see :meth:`~streamwatch.model.checkpoint.Checkpoint.files_by_batch`)."""
        return tuple(e for e in self.entries if e.batch_id == log_batch_id)


@dataclass(frozen=True, slots=True)
class SinkLog(CompactibleLog):
    """``<sink folder>/_spark_metadata/`` (mirrors ``FileStreamSinkLog``): files the sink
    committed, every line as written (``delete`` actions stay visible); ``live_files``
    applies the deletes."""

    entries: tuple[SinkFileEntry, ...] = ()

    @property
    def live_files(self) -> tuple[SinkFileEntry, ...]:
        """Entries after applying ``delete`` actions (mirrors ``FileStreamSinkLog.allFiles``)."""
        deleted = {e.path for e in self.entries if e.action == "delete"}
        return tuple(e for e in self.entries if e.action != "delete" and e.path not in deleted)

    def has_batch(self, batch_id: int) -> bool:
        """True when the log holds batch ``batch_id``'s files (its own file, or folded into a
        later ``.compact`` file)."""
        if not self.batch_ids or batch_id > self.batch_ids[-1] or batch_id < 0:
            return False
        return (self.compact_batch_ids and batch_id <= self.compact_batch_ids[-1]) or batch_id in set(self.batch_ids)
