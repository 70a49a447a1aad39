"""A checkpoint's batch logs, as read from disk: ``offsets/<batchId>`` (mirrors Spark's
``OffsetSeqLog``: ``OffsetSeq`` v1 / ``OffsetMap`` v2) with each source's offset parsed by kind,
and ``commits/<batchId>`` (mirrors ``CommitLog``/``CommitMetadata``).

Batch N is planned once ``offsets/N`` exists and finished once ``commits/N`` exists.
Watermarks and batch timestamps are epoch milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


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
