"""Parse the text logs of a checkpoint: ``metadata``, ``offsets/N`` and ``commits/N``.

Every parser takes the file's bytes and returns ``(entry or None, findings)``; none raises on
bad content. Formats mirror Spark's ``HDFSMetadataLog`` subclasses: a version line ``vN``,
then JSON lines.
"""

from __future__ import annotations

from typing import Any

import orjson

from streamwatch.checkpoint.offsets import parse_source_offset
from streamwatch.model.batchlogs import CommitSink
from streamwatch.model.checkpoint import CommitLogEntry, OffsetLogEntry
from streamwatch.model.findings import Finding

#: Highest log version each log type understands — the newest each log has in Spark 4.3:
#: offsets v2 is ``OffsetMap`` (named sources, Spark 4.2+), commits v3 is
#: ``CommitMetadataV3`` (named sinks, Spark 4.2+), the file source/sink logs are still v1.
MAX_OFFSETS_VERSION = 2
MAX_COMMITS_VERSION = 3
MAX_FILE_LOG_VERSION = 1
#: The Spark whose logs every ``MAX_*_VERSION`` above was checked against (the version matrix).
READS_UP_TO_SPARK = "4.3"


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
                f"{what} is log version v{version}; this reader supports this log from v1 to "
                f"v{max_version} (the newest Spark {READS_UP_TO_SPARK} writes) — written by a newer Spark?",
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
    for t, p in zip(texts, parsed_offsets, strict=True):
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
    """``commits/N`` (mirrors ``CommitLog.deserialize``): one JSON line — v1 ``CommitMetadata``
    with ``nextBatchWatermarkMs`` (absent before Spark 2.4: ``{}``); v2 adds ``stateUniqueIds``
    (checkpoint format v2); v3 ``CommitMetadataV3`` (Spark 4.2+, a named sink) has
    ``stateUniqueIds`` when the format is v2 and ``sinkMetadataMap``: sink name →
    ``{sinkName, commitOffset, providerName, apiVersion, isActive}``."""
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
    sinks: tuple[CommitSink, ...] = ()
    if version >= 3 and meta.get("sinkMetadataMap") is not None:
        sinks, bad = _commit_sinks(meta["sinkMetadataMap"])
        if bad:  # Spark cannot deserialize such a commit: the query fails at restart
            findings.append(Finding("error", "unparsable-file", f"{what}: sinkMetadataMap {bad}", path))
    return (
        CommitLogEntry(batch_id, version, wm if isinstance(wm, int) else None, ids if isinstance(ids, dict) else None, sinks),
        findings,
    )


def _offset_text(v: Any) -> str | None:
    """A sink's ``commitOffset`` as text: None for none (absent, null, Spark's ``-``); an
    offset written as JSON rather than a string is kept as its JSON text."""
    if v is None or v == "-":
        return None
    return v if isinstance(v, str) else orjson.dumps(v).decode()


def _commit_sinks(raw: Any) -> tuple[tuple[CommitSink, ...], str | None]:
    """The sinks of a v3 ``sinkMetadataMap`` (file order) and what is wrong with it, if
    anything (then the well-formed sinks only)."""
    if not isinstance(raw, dict):
        return (), "is not a JSON object"
    out: list[CommitSink] = []
    bad = None
    for key, v in raw.items():
        if not isinstance(v, dict):
            bad = f"entry {key!r} is not a JSON object"
            continue
        name, offset, provider, api = (v.get(k) for k in ("sinkName", "commitOffset", "providerName", "apiVersion"))
        out.append(
            CommitSink(
                name=name if isinstance(name, str) else str(key),
                commit_offset=_offset_text(offset),
                provider=provider if isinstance(provider, str) else None,
                api_version=api if isinstance(api, str) else None,
                active=v.get("isActive") is True,
            )
        )
    return tuple(out), bad


def parse_metadata(data: bytes, path: str) -> tuple[str | None, list[Finding]]:
    """``metadata`` (mirrors ``StreamMetadata``): ``{"id": "<query id>"}`` → the query id."""
    if not data.strip():
        return None, [Finding("error", "empty-file", "metadata is empty (a crash while writing?)", path)]
    first = data.split(b"\n", 1)[0]
    meta = _json(first)
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
        return None, [Finding("error", "unparsable-file", "metadata is not {\"id\": …} JSON", path)]
    return meta["id"], []
