"""The ``streamwatch inspect --json`` documents (schema ``streamwatch.inspect/1``).

Plain dicts of JSON types, keys stable within a schema version (new keys may be added;
removing or renaming one bumps the version). Times are epoch ms plus an ISO-8601 UTC text;
sizes are bytes. A file source is named by its folder ``sources/<id>/``: ``"source"`` is its
index (an int) for a numbered source, its name (text) for one named with
``DataStreamReader.name`` (Spark 4.2+, offsets log v2); the offsets' ``"id"`` is always text. Spark conf values whose key matches ``(?i)secret|password|token|access[.]?key``
are replaced by ``*********``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from streamwatch.model.batchlogs import CommitSink
from streamwatch.model.checkpoint import (
    BatchRow,
    Checkpoint,
    OffsetLogEntry,
    Repartition,
    SinkLog,
    SourceLog,
    SourceOffset,
    StateOperator,
    UniqueIdMatch,
)
from streamwatch.model.findings import worst_severity
from streamwatch.model.sourcebatches import log_at
from streamwatch.model.timefmt import utc_text

if TYPE_CHECKING:
    from streamwatch.checkpoint.fleet import FleetRow

SCHEMA = "streamwatch.inspect/1"
_SECRET = re.compile(r"(?i)secret|password|token|access[.]?key")


def redact(conf: dict[str, str]) -> dict[str, str]:
    """Conf with secret-looking keys' values masked (Spark's redaction pattern)."""
    return {k: ("*********" if _SECRET.search(k) else v) for k, v in sorted(conf.items())}


def iso(ms: int | None) -> str | None:
    """Epoch ms → ``2024-01-02T03:04:05.678Z`` (None stays None, and so does a value outside
    the years 1–9999, e.g. a corrupted watermark)."""
    text = utc_text(ms, "%Y-%m-%dT%H:%M:%S", millis=True)
    return None if text is None else text + "Z"


def _offset(sid: str, p: SourceOffset | None, raw: str | None) -> dict[str, Any]:
    return {
        "id": sid,
        "kind": p.kind if p else None,
        "offset": raw,
        "summary": p.summary() if p else None,
        "fields": dict(p.fields) if p else None,
    }


def _log(log: SourceLog | SinkLog | None) -> dict[str, Any] | None:
    if log is None:
        return None
    return {
        "path": log.path,
        "latest_batch": log.latest_batch_id,
        "entries": log.entry_count,
        "compact_batches": list(log.compact_batch_ids),
        "compact_interval": log.compact_interval,
        "compact_interval_source": log.compact_interval_source,
        "bytes": log.bytes_total,
        "latest_compact_bytes": log.latest_compact_bytes,
    }


def summary_doc(cp: Checkpoint) -> dict[str, Any]:
    """The summary document (see docs/inspect.md, "Inspecting a checkpoint")."""
    latest = cp.latest_offsets
    named = cp.commits[-1].active_sink if cp.commits else None
    return {
        "schema": SCHEMA,
        "path": cp.path,
        "query_id": cp.query_id,
        "batches": {
            "first": cp.offset_batch_ids[0] if cp.offset_batch_ids else None,
            "latest": cp.latest_batch_id,
            "last_committed": cp.last_committed_batch_id,
            "in_flight": cp.in_flight_batch_id,
            "offsets_files": len(cp.offset_batch_ids),
            "commit_files": len(cp.commit_batch_ids),
        },
        "log_version": latest.version if latest else None,
        "watermark_ms": cp.watermark_ms,
        "watermark": iso(cp.watermark_ms) if cp.watermark_ms else None,
        "batch_timestamp_ms": latest.timestamp_ms if latest else None,
        "batch_timestamp": iso(latest.timestamp_ms) if latest else None,
        "conf": redact(dict(latest.conf)) if latest else {},
        "sources": _sources_doc(cp),
        "sink": _sink_doc(cp),
        # the sink named with DataStreamWriter.name (commit log v3, Spark 4.2+): any kind of
        # sink, so apart from "sink", which is only the file or Delta sink found on disk
        "named_sink": _sink(named),
        "state": [_operator_doc(cp, op) for op in cp.state],
        "repartitions": [_repartition(r) for r in cp.repartitions],
        "checkpoint_format": _format(cp),
        "findings": [{"severity": f.severity, "code": f.code, "message": f.message, "path": f.path} for f in cp.findings],
        "worst": worst_severity(cp.findings),
    }


def _sources_doc(cp: Checkpoint) -> list[dict[str, Any]]:
    """Each source of the latest offsets: its offset and its file source's log (None when
    it is no file source)."""
    latest = cp.latest_offsets
    sources = []
    if latest is not None:
        for i, (sid, raw, p) in enumerate(zip(latest.source_ids, latest.sources, latest.parsed, strict=True)):
            d = _offset(sid, p, raw)
            d["file_log"] = _log(log_at(cp.sources, latest, i))
            sources.append(d)
    return sources


def _sink_doc(cp: Checkpoint) -> dict[str, Any] | None:
    """The file sink's log or the Delta sink table's versions and last txn; None for neither."""
    if cp.sink is not None:
        return {"kind": "file", "path": cp.sink_path, "log": _log(cp.sink), "deletes": sum(1 for e in cp.sink.entries if e.action == "delete")}
    if cp.delta_sink is None:
        return None
    delta = cp.delta_sink
    txn = delta.last_txn
    return {
        "kind": "delta",
        "path": cp.sink_path,
        "latest_version": delta.latest_version,
        "versions": len(delta.commits),
        "adds": sum(c.adds for c in delta.commits),
        "removes": sum(c.removes for c in delta.commits),
        "last_txn": {"app_id": txn[0], "version": txn[1]} if txn else None,
        "written_by_this_query": bool(txn and cp.query_id and txn[0] == cp.query_id),
    }


def _operator_doc(cp: Checkpoint, op: StateOperator) -> dict[str, Any]:
    """One state operator: metadata, stores, versions (min, max, in every partition), bytes."""
    return {
        "operator_id": op.operator_id,
        "name": op.name,
        "provider": op.provider,
        "metadata_version": op.metadata_version,
        "stores": list(op.store_names),
        "partitions": op.num_partitions,
        "versions": {"min": op.any_versions[0], "max": op.any_versions[-1], "in_every_partition": len(cp.state_versions(op))} if op.any_versions else None,
        "bytes": op.bytes,
        "files": sum(p.files for p in op.partitions),
        "schema_files": list(op.schema_files),
        "state_variables": [{"name": v.name, "type": v.kind, "ttl": v.ttl_enabled} for v in op.state_variables],
        "time_mode": op.time_mode,
        "output_mode": op.output_mode,
    }


def _sink(s: CommitSink | None) -> dict[str, Any] | None:
    """A named sink of a v3 commit (``sinkMetadataMap`` value)."""
    if s is None:
        return None
    return {"name": s.name, "provider": s.provider, "api_version": s.api_version, "commit_offset": s.commit_offset, "active": s.active}


def _repartition(r: Repartition | None) -> dict[str, Any] | None:
    return None if r is None else {"batch_id": r.batch_id, "from_partitions": r.from_partitions, "to_partitions": r.to_partitions}


def _ids(m: UniqueIdMatch | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {"named": m.named, "found": m.found, "checked": m.checked,
            "missing": [{"operator_id": o, "partition": p, "unique_id": u} for o, p, u in m.missing]}


def _format(cp: Checkpoint) -> dict[str, Any] | None:
    """State checkpoint format (1 or 2, :attr:`CommitLogEntry.checkpoint_format`: the commit log
    version up to v2; a v3 commit is format 2 when it carries ``stateUniqueIds``): the latest,
    and the batch of each switch; ``log_version`` is the latest commit's log version."""
    if not cp.commits:
        return None
    switches = [{"batch_id": c.batch_id, "from": a.checkpoint_format, "to": c.checkpoint_format}
                for a, c in pairwise(cp.commits) if a.checkpoint_format != c.checkpoint_format]
    v2 = [m for m in cp.unique_ids if m.checked]
    return {"version": cp.commits[-1].checkpoint_format, "log_version": cp.commits[-1].version, "switches": switches,
            "unique_ids": {"batches": len(v2), "named": sum(m.named for m in v2), "found": sum(m.found for m in v2)} if v2 else None}


def row_doc(r: BatchRow) -> dict[str, Any]:
    return {
        "batch_id": r.batch_id,
        "offsets": r.has_offsets,
        "commit": r.has_commit,
        "state_version": r.state_version,
        "sink_entry": r.sink_entry,
        "watermark_ms": r.watermark_ms,
        "timestamp_ms": r.timestamp_ms,
        "files_read": r.files_read,
        "delta_versions": list(r.delta_versions) if r.delta_versions is not None else None,
        "repartition": _repartition(r.repartition),
        "unique_ids": _ids(r.unique_ids),
    }


def timeline_doc(cp: Checkpoint, rows: tuple[BatchRow, ...]) -> dict[str, Any]:
    return {"schema": SCHEMA, "path": cp.path, "query_id": cp.query_id, "timeline": [row_doc(r) for r in rows]}


def batch_doc(cp: Checkpoint, batch_id: int) -> dict[str, Any]:
    """One batch in detail: offsets, commit, files read, state versions, sink entries.

    ``files_read``: the files the file sources read in this batch — each source's log
    batches (``source_log_batches``: ``[first, last]`` inclusive, ``[]`` for none) after
    ``offsets/N-1``'s ``logOffset`` up to ``offsets/N``'s (mirrors ``FileStreamSourceOffset``;
    the source log numbers its batches itself); None when not known (either offsets entry
    gone: ``log_batches`` None)."""
    off = cp.offsets_for(batch_id)
    com = cp.commit_for(batch_id)
    logs, files = _files_read(cp, batch_id)
    sink_entries = None
    if cp.sink is not None:
        sink_entries = [
            {"path": e.path, "size": e.size, "action": e.action}
            for e in cp.sink.entries
            if e.batch_id == batch_id
        ]
    delta = None
    if cp.delta_sink is not None:
        delta = list(cp.delta_sink.versions_for_batch(batch_id, cp.query_id))
    return {
        "schema": SCHEMA,
        "path": cp.path,
        "query_id": cp.query_id,
        "batch": {
            "batch_id": batch_id,
            "offsets": None if off is None else _offsets_doc(off),
            "commit": None
            if com is None
            else {"version": com.version, "next_watermark_ms": com.next_watermark_ms, "state_unique_ids": com.state_unique_ids,
                  "unique_ids_matched": _ids(next((m for m in cp.unique_ids if m.batch_id == batch_id), None)),
                  "sinks": [_sink(x) for x in com.sinks]},
            "repartition": _repartition(next((r for r in cp.repartitions if r.batch_id == batch_id), None)),
            "files_read": files,
            "source_log_batches": logs,
            "state": _state_at(cp, batch_id),
            "sink_entries": sink_entries,
            "delta_versions": delta,
        },
    }


def _offsets_doc(off: OffsetLogEntry) -> dict[str, Any]:
    """``offsets/N``: log version, watermark and trigger time (epoch ms and ISO), each
    source's offset, the conf recorded (secrets redacted)."""
    return {
        "version": off.version,
        "watermark_ms": off.watermark_ms,
        "watermark": iso(off.watermark_ms) if off.watermark_ms else None,
        "timestamp_ms": off.timestamp_ms,
        "timestamp": iso(off.timestamp_ms),
        "sources": [_offset(sid, p, raw) for sid, raw, p in zip(off.source_ids, off.sources, off.parsed, strict=True)],
        "conf": redact(dict(off.conf)),
    }


def _files_read(cp: Checkpoint, batch_id: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """(each file source's log batches read by batch ``batch_id``, the files they hold — None
    when any source's are not known), as :func:`batch_doc` describes them."""
    by_batch = cp.files_by_batch()
    logs: list[dict[str, Any]] = []
    files: list[dict[str, Any]] | None = []
    for s, m in by_batch.sources:
        r = m.log_batches(batch_id)
        logs.append({"source": s.ref, "log_batches": None if r is None else ([r[0], r[-1]] if len(r) else [])})
        got = by_batch.files_read(batch_id, s.name)
        if got is None or files is None:
            files = None
            continue
        files += [{"source": s.ref, "path": e.path, "timestamp_ms": e.timestamp_ms, "log_batch": e.batch_id} for e in got]
    return logs, files


def _state_at(cp: Checkpoint, batch_id: int) -> list[dict[str, Any]]:
    """Per state operator: how many partitions (of the layout the batch ran with) hold state
    version ``batch_id + 1``, the state after the batch."""
    state = []
    n = cp.partitions_for_version(batch_id + 1)
    for op in cp.state:
        have = [p for p in op.partitions if batch_id + 1 in p.versions and (n is None or p.partition_id < n)]
        state.append({"operator_id": op.operator_id, "name": op.name, "version": batch_id + 1, "partitions_with_version": len(have), "partitions": len(op.partitions) if n is None else len([p for p in op.partitions if p.partition_id < n])})
    return state


FLEET_SCHEMA = "streamwatch.inspect.fleet/1"


def fleet_doc(root: str, rows: Iterable[FleetRow]) -> dict[str, Any]:
    """``inspect --recursive --json``: one object per checkpoint (``FleetRow``), worst first."""
    return {
        "schema": FLEET_SCHEMA,
        "root": root,
        "checkpoints": [
            {
                "path": r.path,
                "name": r.name,
                "query_id": r.query_id,
                "latest_batch": r.latest_batch,
                "last_committed": r.last_committed,
                "in_flight": r.in_flight,
                "last_commit_ms": r.last_commit_ms,
                "last_commit": iso(r.last_commit_ms),
                "state_bytes": r.state_bytes,
                "worst": "unreadable" if r.error else r.worst,
                "finding": None if r.finding is None else {"severity": r.finding.severity, "code": r.finding.code, "message": r.finding.message},
                "error": r.error,
            }
            for r in rows
        ],
    }
