"""One comparable picture of a checkpoint, built either from a folder read by
:func:`streamwatch.checkpoint.read_checkpoint` or from an ``inspect --json`` summary document
(schema ``streamwatch.inspect/1``) saved earlier. :mod:`streamwatch.checkpoint.ops.diff`
compares two of them.

A saved summary lacks per-partition state and per-file log entries: those fields are None
and the diff says "not known" instead of guessing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streamwatch.checkpoint.jsonout import SCHEMA as INSPECT_SCHEMA
from streamwatch.checkpoint.jsonout import redact
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.checkpoint import Checkpoint, SourceOffset
from streamwatch.model.sourcebatches import log_at


class SnapshotError(StreamwatchError, ValueError):
    """A JSON document that is not an ``inspect --json`` summary (wrong schema, not an object,
    or a ``--batches``/``--batch`` document). Exit 4 (unreadable input)."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class SourceState:
    """One source's offset at the snapshot's latest planned batch: ``kind`` as
    :class:`~streamwatch.model.batchlogs.SourceOffset`, ``fields`` its parsed JSON, ``raw``
    the text, ``files`` the file-source log's entries as (path, source-log batch id — the
    log's own counter, compared with ``logOffset``, not a query batch id) when known."""

    source_id: str
    kind: str | None
    raw: str | None
    fields: Mapping[str, Any] = field(default_factory=dict)
    files: tuple[tuple[str, int], ...] | None = None
    log_entries: int | None = None


@dataclass(frozen=True, slots=True)
class OperatorState:
    """One state operator: ``versions`` (min, max) over all partitions, ``bytes`` total (None when not known),
    ``partitions`` (partition id, store name) → (latest version or None, bytes) when known."""

    operator_id: int
    name: str | None
    provider: str | None
    versions: tuple[int, int] | None
    bytes: int | None
    partitions: Mapping[tuple[int, str], tuple[int | None, int | None]] | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What :func:`streamwatch.checkpoint.ops.diff.diff` compares. Batch ids are ranges
    (``first``…``latest`` planned, ``last_committed``); ``watermark_ms`` epoch ms; ``conf``
    redacted; ``sink_files`` the file sink's live files as (path, batch id) when known
    (None from a saved summary), ``sink_entries`` the lines of its log a reader needs; ``delta_version`` the Delta sink
    table's latest version; ``findings`` (severity, code, message, path); ``sink_path`` the sink
folder the reader used (None when not known), so findings about it compare by their place in it."""

    origin: str
    path: str
    query_id: str | None
    first: int | None
    latest: int | None
    last_committed: int | None
    watermark_ms: int | None
    conf: Mapping[str, str]
    sources: tuple[SourceState, ...]
    state: tuple[OperatorState, ...]
    sink_kind: str | None
    sink_entries: int | None
    sink_files: tuple[tuple[str, int], ...] | None
    delta_version: int | None
    findings: tuple[tuple[str, str, str, str | None], ...]
    sink_path: str | None = None


def _src(sid: str, raw: str | None, p: SourceOffset | None) -> SourceState:
    return SourceState(sid, p.kind if p else None, raw, dict(p.fields) if p else {})


def from_checkpoint(cp: Checkpoint) -> Snapshot:
    """A snapshot of a checkpoint read with ``full=True`` (file log entries parsed)."""
    latest = cp.latest_offsets
    sources: list[SourceState] = []
    if latest is not None:
        parsed = tuple(latest.parsed) + (None,) * (len(latest.sources) - len(latest.parsed))
        for i, (sid, raw, p) in enumerate(zip(latest.source_ids, latest.sources, parsed, strict=True)):
            s = _src(sid, raw, p)
            log = log_at(cp.sources, latest, i)
            if log is not None:
                files = tuple((e.path, e.batch_id) for e in log.entries) if log.entries_loaded else None
                s = SourceState(s.source_id, s.kind, s.raw, s.fields, files, log.entry_count)
            sources.append(s)
    ops = []
    for op in cp.state:
        parts = {(p.partition_id, p.store_name): (p.versions[-1] if p.versions else None, p.bytes) for p in op.partitions}
        av = op.any_versions
        ops.append(OperatorState(op.operator_id, op.name, op.provider, (av[0], av[-1]) if av else None, op.bytes, parts))
    sink_kind = sink_entries = sink_files = delta_version = None
    if cp.sink is not None:
        sink_kind = "file"
        sink_entries = cp.sink.entry_count
        sink_files = tuple((e.path, e.batch_id) for e in cp.sink.live_files) if cp.sink.entries_loaded else None
    elif cp.delta_sink is not None:
        sink_kind, delta_version = "delta", cp.delta_sink.latest_version
    return Snapshot(
        origin="folder",
        path=cp.path,
        query_id=cp.query_id,
        first=cp.offset_batch_ids[0] if cp.offset_batch_ids else None,
        latest=cp.latest_batch_id,
        last_committed=cp.last_committed_batch_id,
        watermark_ms=cp.watermark_ms,
        conf=redact(dict(latest.conf)) if latest else {},
        sources=tuple(sources),
        state=tuple(ops),
        sink_kind=sink_kind,
        sink_entries=sink_entries,
        sink_files=sink_files,
        delta_version=delta_version,
        findings=tuple((f.severity, f.code, f.message, f.path) for f in cp.findings),
        sink_path=cp.sink_path,
    )


def from_inspect_json(doc: Any) -> Snapshot:
    """A snapshot from a saved ``streamwatch inspect --json`` summary document.

    Raises :class:`SnapshotError` when ``doc`` is not such a document."""
    if not isinstance(doc, dict) or doc.get("schema") != INSPECT_SCHEMA:
        raise SnapshotError(f"not a streamwatch inspect --json document (expected schema {INSPECT_SCHEMA})")
    if "batches" not in doc or "sources" not in doc:
        raise SnapshotError("an inspect --json document without --batches/--batch is needed (the summary)")
    b = doc.get("batches") or {}
    sources = []
    for s in doc.get("sources") or []:
        log = s.get("file_log") or {}
        sources.append(SourceState(str(s.get("id")), s.get("kind"), s.get("offset"), s.get("fields") or {}, None, log.get("entries")))
    ops = []
    for op in doc.get("state") or []:
        v = op.get("versions")
        ops.append(OperatorState(int(op["operator_id"]), op.get("name"), op.get("provider"), (v["min"], v["max"]) if v else None, int(op.get("bytes") or 0)))
    sink = doc.get("sink") or {}
    sink_kind = sink.get("kind")
    entries = (sink.get("log") or {}).get("entries") if sink_kind == "file" else None
    return Snapshot(
        origin="inspect-json",
        path=str(doc.get("path")),
        query_id=doc.get("query_id"),
        first=b.get("first"),
        latest=b.get("latest"),
        last_committed=b.get("last_committed"),
        watermark_ms=doc.get("watermark_ms"),
        conf=dict(doc.get("conf") or {}),
        sources=tuple(sources),
        state=tuple(ops),
        sink_kind=sink_kind,
        sink_entries=entries,
        sink_files=None,
        delta_version=sink.get("latest_version") if sink_kind == "delta" else None,
        findings=tuple((f["severity"], f["code"], f["message"], f.get("path")) for f in doc.get("findings") or []),
        sink_path=sink.get("path"),
    )
