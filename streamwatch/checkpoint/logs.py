"""Parse the text logs of a checkpoint: ``metadata``, ``offsets/N`` and ``commits/N``.

Every parser takes the file's bytes and returns ``(entry or None, findings)``; none raises on
bad content. Formats mirror Spark's ``HDFSMetadataLog`` subclasses: a version line ``vN``,
then JSON lines.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamwatch.checkpoint.offsets import parse_source_offset
from streamwatch.model.checkpoint import CommitLogEntry, OffsetLogEntry
from streamwatch.model.findings import Finding

#: Highest log version each log type understands (Spark 4.2): offsets v2 is ``OffsetMap``.
MAX_OFFSETS_VERSION = 2
MAX_COMMITS_VERSION = 2
MAX_FILE_LOG_VERSION = 1


def split_version(data: bytes, path: str, max_version: int, what: str) -> tuple[int | None, list[bytes], list[Finding]]:
    """Split a log file into (version, remaining lines, findings). Mirrors
    ``HDFSMetadataLog.validateVersion``: an empty file, a missing ``vN`` line or a version
    above ``max_version`` yields a finding and version None."""
    version, rest, findings = split_header(data, path, max_version, what)
    return version, ([] if version is None else rest.split(b"\n")), findings


def split_header(data: bytes, path: str, max_version: int, what: str) -> tuple[int | None, bytes, list[Finding]]:
    """Like :func:`split_version` but returns the bytes after the version line unsplit."""
    if not data.strip():
        return None, b"", [Finding("error", "empty-file", f"{what} is empty (a crash while writing?)", path)]
    if b"\x00" in data[:4096]:
        return None, b"", [Finding("error", "unparsable-file", f"{what} holds binary data, not a text log", path)]
    first, _, rest = data.partition(b"\n")
    head = first.strip()
    if not (head.startswith(b"v") and head[1:].isdigit()):
        return None, b"", [Finding("error", "unparsable-file", f"{what}: no log version line (expected v1…)", path)]
    version = int(head[1:])
    if version > max_version or version < 1:
        return None, b"", [
            Finding(
                "error",
                "unknown-log-version",
                f"{what} is log version v{version}; this reader (like Spark 4.2) supports up to "
                f"v{max_version} — written by a newer Spark?",
                path,
            )
        ]
    return version, rest, []


def _json(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def parse_offsets(data: bytes, batch_id: int, path: str) -> tuple[OffsetLogEntry | None, list[Finding]]:
    """``offsets/N`` (mirrors ``OffsetSeqLog.deserialize``): v1 ``OffsetSeq`` — metadata line
    then one offset per source (``-`` for none); v2 ``OffsetMap`` — ``sourceId:offset`` lines."""
    what = f"offsets/{batch_id}"
    version, lines, findings = split_version(data, path, MAX_OFFSETS_VERSION, what)
    if version is None:
        return None, findings
    meta: dict[str, Any] = {}
    if lines and lines[0].strip():
        parsed = _json(lines[0])
        if not isinstance(parsed, dict):
            return None, [Finding("error", "unparsable-file", f"{what}: metadata line is not JSON (truncated?)", path)]
        meta = parsed
    raw_offsets = [ln.decode("utf-8", "replace").strip() for ln in lines[1:]]
    raw_offsets = [r for r in raw_offsets if r]
    ids: list[str] = []
    texts: list[str | None] = []
    for i, r in enumerate(raw_offsets):
        if version >= 2:
            sid, sep, rest = r.partition(":")
            if not sep:
                findings.append(Finding("error", "unparsable-file", f"{what}: line {r[:40]!r} is not sourceId:offset", path))
                continue
            ids.append(sid)
            texts.append(None if rest.strip() in ("-", "") else rest.strip())
        else:
            ids.append(str(i))
            texts.append(None if r == "-" else r)
    parsed_offsets = tuple(None if t is None else parse_source_offset(t) for t in texts)
    for t, p in zip(texts, parsed_offsets):
        if p is not None and p.kind == "raw" and t and t[:1] in "{[" and _json(t.encode()) is None:
            findings.append(Finding("error", "unparsable-file", f"{what}: a source offset is not valid JSON (truncated?)", path))
    conf = meta.get("conf") or {}
    wm = meta.get("batchWatermarkMs")
    ts = meta.get("batchTimestampMs")
    return (
        OffsetLogEntry(
            batch_id=batch_id,
            version=version,
            watermark_ms=wm if isinstance(wm, int) else None,
            timestamp_ms=ts if isinstance(ts, int) else None,
            conf={str(k): str(v) for k, v in conf.items()} if isinstance(conf, dict) else {},
            sources=tuple(texts),
            source_ids=tuple(ids),
            parsed=parsed_offsets,
        ),
        findings,
    )


def parse_commit(data: bytes, batch_id: int, path: str) -> tuple[CommitLogEntry | None, list[Finding]]:
    """``commits/N`` (mirrors ``CommitLog.deserialize`` / ``CommitMetadata``): v1 or v2, one
    JSON line with ``nextBatchWatermarkMs`` (absent before Spark 2.4: ``{}``) and, in v2,
    ``stateUniqueIds``."""
    what = f"commits/{batch_id}"
    version, lines, findings = split_version(data, path, MAX_COMMITS_VERSION, what)
    if version is None:
        return None, findings
    body = next((ln for ln in lines if ln.strip()), b"")
    meta = _json(body) if body else {}
    if not isinstance(meta, dict):
        return None, [Finding("error", "unparsable-file", f"{what}: commit metadata is not JSON (truncated?)", path)]
    wm = meta.get("nextBatchWatermarkMs")
    ids = meta.get("stateUniqueIds")
    return (
        CommitLogEntry(batch_id, version, wm if isinstance(wm, int) else None, ids if isinstance(ids, dict) else None),
        findings,
    )


def parse_metadata(data: bytes, path: str) -> tuple[str | None, list[Finding]]:
    """``metadata`` (mirrors ``StreamMetadata``): ``{"id": "<query id>"}`` → the query id."""
    if not data.strip():
        return None, [Finding("error", "empty-file", "metadata is empty (a crash while writing?)", path)]
    first = data.split(b"\n", 1)[0]
    meta = _json(first)
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
        return None, [Finding("error", "unparsable-file", "metadata is not {\"id\": …} JSON", path)]
    return meta["id"], []
