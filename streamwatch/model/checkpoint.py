"""What a checkpoint folder holds, as read from disk (mirrors Spark's HDFSMetadataLog family).

Layout of a checkpoint written by Spark::

    metadata              {"id": "<query id>"}
    offsets/<batchId>     OffsetSeqLog: "v1", metadata JSON line, one offset line per source
    commits/<batchId>     CommitLog: "v1", {"nextBatchWatermarkMs": ms}
    sources/<i>/<batchId> file-source logs;  state/<operator>/<partition>/… state stores
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True, slots=True)
class OffsetLogEntry:
    """``offsets/<batch_id>`` (mirrors ``OffsetSeq``): log ``version`` (1 or 2),
    ``watermark_ms`` (batchWatermarkMs), ``timestamp_ms`` (batchTimestampMs), the session
    ``conf`` recorded with the batch, and one raw offset text per source (None for a source
    that had no offset yet, written by Spark as ``-``)."""

    batch_id: int
    version: int
    watermark_ms: int | None
    timestamp_ms: int | None
    conf: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str | None, ...] = ()


@dataclass(frozen=True, slots=True)
class CommitLogEntry:
    """``commits/<batch_id>`` (mirrors ``CommitMetadata``): ``next_watermark_ms`` is
    nextBatchWatermarkMs (None when the file predates it)."""

    batch_id: int
    version: int
    next_watermark_ms: int | None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint folder: ``query_id`` from ``metadata`` (None when absent), offsets and
    commit log entries sorted by batch id."""

    path: str
    query_id: str | None
    offsets: tuple[OffsetLogEntry, ...] = ()
    commits: tuple[CommitLogEntry, ...] = ()

    @property
    def latest_batch_id(self) -> int | None:
        """Highest batch id in the offsets log (planned batches)."""
        return self.offsets[-1].batch_id if self.offsets else None

    @property
    def last_committed_batch_id(self) -> int | None:
        """Highest batch id in the commit log (finished batches)."""
        return self.commits[-1].batch_id if self.commits else None
