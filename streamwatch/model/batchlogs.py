"""A checkpoint's batch logs, as read from disk: ``offsets/<batchId>`` (mirrors Spark's
``OffsetSeqLog``: ``OffsetSeq`` v1 / ``OffsetMap`` v2) with each source's offset parsed by kind,
and ``commits/<batchId>`` (mirrors ``CommitLog``: ``CommitMetadata`` v1/v2, ``CommitMetadataV3``
v3 with the named sinks of Spark 4.2+).

Batch N is planned once ``offsets/N`` exists and finished once ``commits/N`` exists.
Watermarks and batch timestamps are epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


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

    @property
    def delta_position(self) -> tuple[str, int, int, bool] | None:
        """Delta: (``reservoirId``, ``reservoirVersion``, ``index``, ``isStartingVersion``);
        None for another kind or a malformed offset."""
        f = self.fields
        rv, idx = f.get("reservoirVersion"), f.get("index", -1)
        if self.kind != "delta" or not isinstance(rv, int) or not isinstance(idx, int):
            return None
        return str(f.get("reservoirId") or ""), rv, idx, bool(f.get("isStartingVersion"))

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
    source (``"0"``, ``"1"``… in v1; the ``sourceId`` before ``:`` in v2 — ``"0"``… for an
    unnamed source, the name given with ``DataStreamReader.name`` for a named one) and is the
    name of its folder ``sources/<id>/`` when it is a file source; ``parsed`` holds each offset
    parsed by kind. In v2 the lines follow Spark's map order, not the order of the query's
    sources: look a source up by its id (:meth:`position`), never by position across logs."""

    batch_id: int
    version: int
    watermark_ms: int | None
    timestamp_ms: int | None
    conf: Mapping[str, str] = field(default_factory=dict)
    sources: tuple[str | None, ...] = ()
    source_ids: tuple[str, ...] = ()
    parsed: tuple[SourceOffset | None, ...] = ()

    def source_id(self, position: int) -> str:
        """The id of the source on line ``position``: its ``sources/<id>/`` folder name
        (``str(position)`` when the entry was built without ids)."""
        return self.source_ids[position] if position < len(self.source_ids) else str(position)

    def position(self, source_id: str | int) -> int | None:
        """The line of source ``source_id`` (a folder name; an int is a v1 index) in this
        entry; None when the entry has no such source."""
        sid = str(source_id)
        if self.source_ids:
            return next((i for i, s in enumerate(self.source_ids) if s == sid), None)
        if self.version < 2 and sid.isdecimal() and int(sid) < len(self.sources):
            return int(sid)
        return None


@dataclass(frozen=True, slots=True)
class CommitSink:
    """One sink of a v3 commit (mirrors a value of ``CommitMetadataV3.sinkMetadataMap``,
    Spark 4.2+ with ``DataStreamWriter.name``): ``name`` (sinkName; the map key when absent),
    ``commit_offset`` (commitOffset as written; None for Spark's ``-``: no offset, as for a
    sink that keeps none), ``provider`` (providerName: the sink's class name, e.g.
    ``org.apache.spark.sql.execution.datasources.noop.NoopTable$``), ``api_version``
    (apiVersion: ``DSv1``/``DSv2``) and ``active`` (isActive: the sink the query writes to;
    an earlier sink of an evolved query stays listed, inactive)."""

    name: str
    commit_offset: str | None = None
    provider: str | None = None
    api_version: str | None = None
    active: bool = False

    @property
    def provider_short(self) -> str | None:
        """The provider's class name without its package and Scala's ``$`` (``NoopTable``)."""
        return None if not self.provider else self.provider.rsplit(".", 1)[-1].rstrip("$") or self.provider


@dataclass(frozen=True, slots=True)
class CommitLogEntry:
    """``commits/<batch_id>`` (mirrors ``CommitMetadata`` v1/v2 and ``CommitMetadataV3``):
    ``next_watermark_ms`` is nextBatchWatermarkMs (None when the file predates it),
    ``state_unique_ids`` the v2 checkpoint format's operator id → partition → store unique ids
    (None when absent; v2 and v3), ``sinks`` the v3 ``sinkMetadataMap`` values in file order
    (empty before v3)."""

    batch_id: int
    version: int
    next_watermark_ms: int | None
    state_unique_ids: Mapping[str, Any] | None = None
    sinks: tuple[CommitSink, ...] = ()

    @property
    def checkpoint_format(self) -> int:
        """The state checkpoint format the batch was committed with: 1, or 2 (state files named
        ``<version>_<uniqueId>``, ids in ``stateUniqueIds``). Commit log v1/v2 *is* the format;
        a v3 commit (a named sink) carries ``stateUniqueIds`` only in format v2, so one without
        them is format v1 (or a stateless query's, where the format changes nothing)."""
        if self.version <= 2:
            return self.version
        return 2 if self.state_unique_ids is not None else 1

    @property
    def active_sink(self) -> CommitSink | None:
        """The sink this batch committed to (``isActive``); None before v3 or when none is
        marked active."""
        return next((s for s in self.sinks if s.active), None)
