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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, NamedTuple

from streamwatch.model.findings import Finding


@dataclass(frozen=True, slots=True)
class SourceOffset:
    """One source's offset in an ``offsets/N`` file, parsed by kind.

    ``kind``: ``"file"`` (FileStreamSourceOffset ``{"logOffset": N}`` or a bare number read as
    one), ``"kafka"`` (KafkaSourceOffset ``{"topic": {"partition": offset}}``), ``"delta"``
    (DeltaSourceOffset: reservoirId, reservoirVersion, index, isStartingVersion), ``"rate"``
    (rate / rate-micro-batch), ``"number"`` (a bare long, e.g. MemoryStream), ``"raw"``
    (anything else: kept as text). ``fields`` is the parsed JSON object (empty when not JSON)."""

    kind: str
    raw: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def log_offset(self) -> int | None:
        """File source: the batch id in ``sources/<i>/`` this offset points at."""
        v = self.fields.get("logOffset") if self.kind == "file" else None
        return v if isinstance(v, int) else None

    @property
    def kafka_partitions(self) -> dict[str, dict[str, int]]:
        """Kafka: topic → partition → next offset to read."""
        return {t: dict(p) for t, p in self.fields.items()} if self.kind == "kafka" else {}

    def summary(self) -> str:
        """A short human text: ``logOffset 7``, ``t1[0:5 1:9]``, ``delta v12 idx -1``…"""
        f = self.fields
        if self.kind == "file":
            return f"logOffset {self.log_offset}"
        if self.kind == "kafka":
            return " ".join(
                f"{t}[" + " ".join(f"{p}:{o}" for p, o in sorted(ps.items(), key=lambda x: x[0])) + "]"
                for t, ps in sorted(self.kafka_partitions.items())
            )
        if self.kind == "delta":
            start = " (starting version)" if f.get("isStartingVersion") else ""
            return f"delta {f.get('reservoirId', '?')} v{f.get('reservoirVersion')} index {f.get('index')}{start}"
        if self.kind == "rate":
            return ", ".join(f"{k} {v}" for k, v in f.items()) or self.raw
        return self.raw


@dataclass(frozen=True, slots=True)
class OffsetLogEntry:
    """``offsets/<batch_id>`` (mirrors ``OffsetSeq`` v1 and ``OffsetMap`` v2): log
    ``version``, ``watermark_ms`` (batchWatermarkMs), ``timestamp_ms`` (batchTimestampMs, epoch
    ms), the session ``conf`` recorded with the batch, and one raw offset text per source (None
    for a source that had no offset yet, written by Spark as ``-``). ``source_ids`` names each
    source (``"0"``, ``"1"``… in v1; the ``sourceId`` before ``:`` in v2) and ``parsed`` holds
    each offset parsed by kind."""

    batch_id: int
    version: int
    watermark_ms: int | None
    timestamp_ms: int | None
    conf: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str | None, ...] = ()
    source_ids: tuple[str, ...] = ()
    parsed: tuple[SourceOffset | None, ...] = ()


@dataclass(frozen=True, slots=True)
class CommitLogEntry:
    """``commits/<batch_id>`` (mirrors ``CommitMetadata``): ``next_watermark_ms`` is
    nextBatchWatermarkMs (None when the file predates it), ``state_unique_ids`` the v2
    checkpoint format's operator id → partition → store unique ids (None when absent)."""

    batch_id: int
    version: int
    next_watermark_ms: int | None
    state_unique_ids: Mapping[str, Any] | None = None


class FileEntry(NamedTuple):
    """One file the file source read (mirrors ``FileStreamSource.FileEntry``): ``path`` (URI
    text as Spark wrote it), ``timestamp_ms`` (file modification time, epoch ms), ``batch_id``
    (the batch that read it)."""

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
    ``compact_batch_ids`` (``N.compact`` files), the detected ``compact_interval`` (batches
    per compaction: compactions happen at batch ids ``k*interval - 1``; None when unknown),
    ``entry_count`` (lines in the files a reader needs: latest compact + later deltas),
    ``bytes_total`` and ``latest_compact_bytes`` (bytes), and whether ``entries`` were parsed
    (``entries_loaded``; a summary read only counts lines)."""

    path: str
    batch_ids: tuple[int, ...] = ()
    compact_batch_ids: tuple[int, ...] = ()
    compact_interval: int | None = None
    entry_count: int = 0
    bytes_total: int = 0
    latest_compact_bytes: int | None = None
    entries_loaded: bool = True

    @property
    def latest_batch_id(self) -> int | None:
        return self.batch_ids[-1] if self.batch_ids else None


@dataclass(frozen=True, slots=True)
class SourceLog(CompactibleLog):
    """``sources/<index>/`` of a file source (mirrors ``FileStreamSourceLog``): every file
    the source has read, in log order."""

    index: int = 0
    entries: tuple[FileEntry, ...] = ()

    def files_for_batch(self, batch_id: int) -> tuple[FileEntry, ...]:
        return tuple(e for e in self.entries if e.batch_id == batch_id)


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


@dataclass(frozen=True, slots=True)
class DeltaCommit:
    """One ``_delta_log/<version>.json`` commit: ``adds``/``removes`` file action counts,
    the streaming ``txn`` (appId = query id, ``txn_version`` = batch id) when present, the
    ``operation`` and ``query_id``/``epoch_id`` from commitInfo, ``timestamp_ms`` epoch ms."""

    version: int
    adds: int = 0
    removes: int = 0
    txn_app_id: str | None = None
    txn_version: int | None = None
    operation: str | None = None
    query_id: str | None = None
    epoch_id: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DeltaLog:
    """A Delta table's ``_delta_log``: commits by version, ``checkpoint_versions`` (parquet
    checkpoints present) and the last streaming ``txn`` seen (appId, version)."""

    path: str
    commits: tuple[DeltaCommit, ...] = ()
    checkpoint_versions: tuple[int, ...] = ()

    @property
    def latest_version(self) -> int | None:
        return self.commits[-1].version if self.commits else None

    @property
    def last_txn(self) -> tuple[str, int] | None:
        for c in reversed(self.commits):
            if c.txn_app_id is not None and c.txn_version is not None:
                return c.txn_app_id, c.txn_version
        return None

    def versions_for_batch(self, batch_id: int, query_id: str | None) -> tuple[int, ...]:
        return tuple(
            c.version
            for c in self.commits
            if c.txn_version == batch_id and (query_id is None or c.txn_app_id in (None, query_id))
        )


@dataclass(frozen=True, slots=True)
class StateStoreInfo:
    """One store of a state operator as recorded in operator metadata (mirrors
    ``StateStoreMetadataV1/V2``): ``name`` (``default``, or e.g. ``left-keyToNumValues``),
    ``num_partitions``, ``num_cols_prefix_key``, ``schema_path`` (v2)."""

    name: str
    num_partitions: int | None = None
    num_cols_prefix_key: int | None = None
    schema_path: str | None = None


@dataclass(frozen=True, slots=True)
class StateVariable:
    """A transformWithState state variable (``stateName``, ``stateVariableType``, ttl)."""

    name: str
    kind: str
    ttl_enabled: bool = False


@dataclass(frozen=True, slots=True)
class StatePartition:
    """One state store folder ``state/<op>/<partition>[/<store>]``: ``versions`` present
    (sorted; version v = state after batch v-1), ``snapshot_versions`` (HDFS ``.snapshot``
    or RocksDB ``.zip``), file count and ``bytes`` (including ``SSTs/``)."""

    partition_id: int
    store_name: str
    versions: tuple[int, ...] = ()
    snapshot_versions: tuple[int, ...] = ()
    files: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class StateOperator:
    """``state/<operator_id>/``: ``name`` (e.g. ``stateStoreSave``, ``symmetricHashJoin``,
    ``dedupe``, ``transformWithStateExec``; None without operator metadata),
    ``metadata_version`` (1 for ``_metadata/metadata``, 2 for ``_metadata/v2/N``),
    ``provider`` (``"hdfs"``, ``"rocksdb"`` or ``"unknown"``, from the files), ``stores``
    from the metadata, ``partitions`` (one row per partition and store), ``schema_files``
    (paths relative to the operator folder), transformWithState ``state_variables``,
    ``time_mode`` and ``output_mode``, ``bytes`` (total)."""

    operator_id: int
    path: str
    name: str | None = None
    metadata_version: int | None = None
    provider: str = "unknown"
    stores: tuple[StateStoreInfo, ...] = ()
    partitions: tuple[StatePartition, ...] = ()
    schema_files: tuple[str, ...] = ()
    state_variables: tuple[StateVariable, ...] = ()
    time_mode: str | None = None
    output_mode: str | None = None
    bytes: int = 0

    @property
    def num_partitions(self) -> int:
        ids = {p.partition_id for p in self.partitions}
        if ids:
            return len(ids)
        return max((s.num_partitions or 0 for s in self.stores), default=0)

    @property
    def store_names(self) -> tuple[str, ...]:
        names = {p.store_name for p in self.partitions} | {s.name for s in self.stores}
        return tuple(sorted(names))

    @property
    def versions(self) -> tuple[int, ...]:
        """Versions present in every partition folder (sorted)."""
        if not self.partitions:
            return ()
        common = set(self.partitions[0].versions)
        for p in self.partitions[1:]:
            common &= set(p.versions)
        return tuple(sorted(common))

    @property
    def any_versions(self) -> tuple[int, ...]:
        """Versions present in at least one partition folder (sorted)."""
        out: set[int] = set()
        for p in self.partitions:
            out.update(p.versions)
        return tuple(sorted(out))


@dataclass(frozen=True, slots=True)
class BatchRow:
    """One batch in :func:`streamwatch.checkpoint.batch_timeline`: whether ``offsets/N`` and
    ``commits/N`` exist, whether every state operator has state version N+1 (None when the
    query has no state), whether the file sink's log holds batch N (None when no sink log is
    known), the batch's watermark and trigger time (epoch ms, from ``offsets/N``),
    ``files_read`` (file-source entries with this batch id; None when not known) and
    ``delta_versions`` (Delta sink versions written by this batch; None when no Delta log)."""

    batch_id: int
    has_offsets: bool
    has_commit: bool
    state_version: bool | None
    sink_entry: bool | None
    watermark_ms: int | None
    timestamp_ms: int | None
    files_read: int | None = None
    delta_versions: tuple[int, ...] | None = None


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

    def commit_for(self, batch_id: int) -> CommitLogEntry | None:
        for e in self.commits:
            if e.batch_id == batch_id:
                return e
        return None
