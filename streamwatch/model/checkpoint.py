"""What a checkpoint folder holds, as read from disk (mirrors Spark's HDFSMetadataLog family).

Layout of a checkpoint written by Spark::

    metadata              {"id": "<query id>"}                       (StreamMetadata)
    offsets/<batchId>     OffsetSeqLog: "v1" | "v2", metadata JSON line, one offset per source
    commits/<batchId>     CommitLog: "v1" | "v2", {"nextBatchWatermarkMs": ms, "stateUniqueIds"}
    sources/<i>/<batchId> FileStreamSourceLog (file source), ``N.compact`` every interval
    state/<op>/<part>/…   state store versions (HDFS: N.delta/N.snapshot, RocksDB: N.zip/…)
    <sink>/_spark_metadata/<batchId>   FileStreamSinkLog (lives in the sink's output folder)
    <sink>/_delta_log/<version>.json   Delta transaction log (a Delta sink table)

State store version ``v`` holds the state after batch ``v - 1``.

The parts live in their own modules and are re-exported here: the offsets and commit logs in
:mod:`streamwatch.model.batchlogs`, the file source/sink logs in
:mod:`streamwatch.model.filelogs`, the Delta log in :mod:`streamwatch.model.deltalog` and the
state stores in :mod:`streamwatch.model.statestore`. This module holds the aggregate
(:class:`Checkpoint`) and the per-batch view of it (:class:`BatchRow`).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamwatch.model.batchlogs import CommitLogEntry, OffsetLogEntry, SourceOffset
from streamwatch.model.deltalog import DeltaCommit, DeltaLog
from streamwatch.model.filelogs import CompactibleLog, FileEntry, SinkFileEntry, SinkLog, SourceLog
from streamwatch.model.findings import Finding
from streamwatch.model.sourcebatches import FilesByBatch, SourceBatches
from streamwatch.model.statestore import StateOperator, StatePartition, StateStoreInfo, StateVariable

__all__ = [
    "BatchRow",
    "Repartition",
    "UniqueIdMatch",
    "Checkpoint",
    "CommitLogEntry",
    "CompactibleLog",
    "DeltaCommit",
    "DeltaLog",
    "FileEntry",
    "FilesByBatch",
    "OffsetLogEntry",
    "SinkFileEntry",
    "SinkLog",
    "SourceBatches",
    "SourceLog",
    "SourceOffset",
    "StateOperator",
    "StatePartition",
    "StateStoreInfo",
    "StateVariable",
]


@dataclass(frozen=True, slots=True)
class Repartition:
    """A batch written by offline state repartition (Spark 4.2
    ``StreamingCheckpointManager.repartition``): ``offsets/<batch_id>`` repeats the previous
    batch's source offsets and trigger time (it reads no input) with
    ``spark.sql.shuffle.partitions`` changed from ``from_partitions`` to ``to_partitions``,
    and the state is rewritten into ``to_partitions`` partitions as version ``batch_id + 1``."""

    batch_id: int
    from_partitions: int
    to_partitions: int


@dataclass(frozen=True, slots=True)
class UniqueIdMatch:
    """Checkpoint format v2: the state files ``commits/<batch_id>`` names (its
    ``stateUniqueIds``, operator → partition → store unique ids, for state version
    ``batch_id + 1``) matched to the ``<version>_<uniqueId>.zip/.changelog`` files present.
    ``named`` ids in the commit, ``found`` of them with a file, ``missing`` as (operator id,
    partition id, unique id); ``checked`` False when the version is older than every file
    left in those folders (removed by state maintenance, nothing to match)."""

    batch_id: int
    named: int
    found: int
    missing: tuple[tuple[int, int, str], ...] = ()
    checked: bool = True


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One batch in :func:`streamwatch.checkpoint.batch_timeline`: whether ``offsets/N`` and
    ``commits/N`` exist, whether every state operator has state version N+1 (None when the
    query has no state), whether the file sink's log holds batch N (None when no sink log is
    known), the batch's watermark and trigger time (epoch ms, from ``offsets/N``),
    ``files_read`` (files the file sources read in this batch, through the offsets'
    ``logOffset``; None when not known: log entries not read, or ``offsets/N`` or
    ``offsets/N-1`` gone) and
    ``delta_versions`` (Delta sink versions written by this batch; None when no Delta log),
    ``repartition`` when the batch was written by offline state repartition, and
    ``unique_ids`` (checkpoint format v2: the commit's state unique ids matched to files)."""

    batch_id: int
    has_offsets: bool
    has_commit: bool
    state_version: bool | None
    sink_entry: bool | None
    watermark_ms: int | None
    timestamp_ms: int | None
    files_read: int | None = None
    delta_versions: tuple[int, ...] | None = None
    repartition: Repartition | None = None
    unique_ids: UniqueIdMatch | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint folder: ``query_id`` from ``metadata`` (None when absent), offsets and
    commit log entries sorted by batch id, file-source logs (``sources``), the file sink's
    log (``sink``) or Delta sink log (``delta_sink``) when known, state operators
    (``state``) and health ``findings``.

    ``offset_batch_ids`` / ``commit_batch_ids`` list every batch file present; when the read
    was a summary (``complete`` False) only the most recent entries are parsed into
    ``offsets``/``commits``."""

    path: str
    query_id: str | None
    offsets: tuple[OffsetLogEntry, ...] = ()
    commits: tuple[CommitLogEntry, ...] = ()
    sources: tuple[SourceLog, ...] = ()
    sink: SinkLog | None = None
    delta_sink: DeltaLog | None = None
    state: tuple[StateOperator, ...] = ()
    findings: tuple[Finding, ...] = ()
    offset_batch_ids: tuple[int, ...] = ()
    commit_batch_ids: tuple[int, ...] = ()
    sink_path: str | None = None
    complete: bool = True
    repartitions: tuple[Repartition, ...] = ()
    unique_ids: tuple[UniqueIdMatch, ...] = ()

    def partitions_for_version(self, version: int) -> int | None:
        """How many state partitions state version ``version`` has in the layout in effect
        for it: the target of the last offline repartition at or before batch
        ``version - 1``, else the source of the first later one; None without a repartition
        (every partition folder then counts)."""
        if not self.repartitions:
            return None
        done = [r for r in self.repartitions if r.batch_id + 1 <= version]
        return done[-1].to_partitions if done else self.repartitions[0].from_partitions

    def state_versions(self, op: StateOperator) -> tuple[int, ...]:
        """Versions of ``op`` present in every partition of the layout in effect for each
        version (:meth:`partitions_for_version`); without a repartition the same as
        ``op.versions``."""
        if not self.repartitions:
            return op.versions
        out = []
        sets = {id(p): set(p.versions) for p in op.partitions}
        for v in op.any_versions:
            n = self.partitions_for_version(v)
            rows = [p for p in op.partitions if n is None or p.partition_id < n]
            if rows and all(v in sets[id(p)] for p in rows) and (n is None or len({p.partition_id for p in rows}) == n):
                out.append(v)
        return tuple(out)

    @property
    def latest_batch_id(self) -> int | None:
        """Highest batch id in the offsets log (planned batches)."""
        if self.offset_batch_ids:
            return self.offset_batch_ids[-1]
        return self.offsets[-1].batch_id if self.offsets else None

    @property
    def last_committed_batch_id(self) -> int | None:
        """Highest batch id in the commit log (finished batches)."""
        if self.commit_batch_ids:
            return self.commit_batch_ids[-1]
        return self.commits[-1].batch_id if self.commits else None

    @property
    def in_flight_batch_id(self) -> int | None:
        """The latest planned batch when it has no commit (re-run on restart), else None."""
        latest, done = self.latest_batch_id, self.last_committed_batch_id
        if latest is not None and (done is None or latest > done):
            return latest
        return None

    @property
    def latest_offsets(self) -> OffsetLogEntry | None:
        return self.offsets[-1] if self.offsets else None

    @property
    def watermark_ms(self) -> int | None:
        """Event-time watermark (epoch ms) of the latest planned batch."""
        return self.offsets[-1].watermark_ms if self.offsets else None

    def offsets_for(self, batch_id: int) -> OffsetLogEntry | None:
        for e in self.offsets:
            if e.batch_id == batch_id:
                return e
        return None

    def files_by_batch(self) -> FilesByBatch:
        """The file sources' log batches mapped onto the query's batches through each
        ``offsets/N``'s ``{"logOffset": n}`` (a file source's log has its own batch ids:
        query batch N read the source-log batches after batch N-1's logOffset up to N's).
        Build once and ask it per batch."""
        return FilesByBatch.build(self.sources, self.offsets)

    def commit_for(self, batch_id: int) -> CommitLogEntry | None:
        for e in self.commits:
            if e.batch_id == batch_id:
                return e
        return None
