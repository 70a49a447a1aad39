"""Compactible file logs: the file source's ``sources/<id>/`` and the file sink's
``_spark_metadata/`` (mirrors ``CompactibleFileStreamLog``, ``FileStreamSourceLog`` and
``FileStreamSinkLog``).

A log folder holds ``N`` (entries of batch N) and ``N.compact`` (every entry up to batch N,
written every ``compactInterval`` batches at ids ``k*interval - 1``); readers need only the
latest ``.compact`` file and the plain files after it. Hidden ``.N.crc`` checksum files are
expected; ``.N.<uuid>.tmp`` files are writes in progress (or left by a crash).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Literal, TypedDict, TypeVar, cast, overload

import orjson

from streamwatch.checkpoint.fs import Item, Storage
from streamwatch.checkpoint.logs import MAX_FILE_LOG_VERSION, split_header
from streamwatch.model.checkpoint import CompactibleLog, FileEntry, SinkFileEntry, SinkLog, SourceLog
from streamwatch.model.findings import Finding

_BATCH = re.compile(r"^(\d+)(\.compact)?$")
DEFAULT_COMPACT_INTERVAL = 10  # spark.sql.streaming.{fileSource,fileSink}.log.compactInterval
#: Largest compaction interval :func:`detect_interval` derives from a single ``.compact`` id.
MAX_DETECTED_INTERVAL = 100_000
#: A ``.compact`` file this large is rewritten in full at every compaction (bytes).
COMPACT_GROWTH_BYTES = 10 * 1024 * 1024


def classify(items: list[Item]) -> tuple[dict[int, tuple[str, int, bool]], list[Item], list[Item]]:
    """(batch id → (file name, size, is compact), temporary files, stray items) of a log folder."""
    batches: dict[int, tuple[str, int, bool]] = {}
    temps: list[Item] = []
    strays: list[Item] = []
    for it in items:
        m = _BATCH.match(it.name)
        if m and not it.is_dir and int(m.group(1)) < (1 << 63):  # a batch id is a Java long
            b = int(m.group(1))
            compact = bool(m.group(2))
            if b not in batches or compact:
                batches[b] = (it.name, it.size, compact)
        elif it.name.startswith(".") and it.name.endswith(".crc"):
            continue
        elif it.name.startswith(".") and it.name.endswith(".tmp"):
            temps.append(it)
        else:
            strays.append(it)
    return batches, temps, strays


def detect_interval(compact_ids: list[int], latest: int | None) -> int | None:
    """Batches per compaction, from the ``.compact`` ids present (mirrors
    ``CompactibleFileStreamLog.deriveCompactInterval``): the spacing of two compactions, or for
    one compaction at id c the smallest interval dividing c+1 that no later batch contradicts
    (Spark's default 10 preferred when it fits)."""
    if not compact_ids:
        return None
    if len(compact_ids) >= 2:
        return compact_ids[-1] - compact_ids[-2]
    c = compact_ids[0]
    after = (latest - c) if latest is not None else 0
    fits = [d for d in range(1, min(c + 2, MAX_DETECTED_INTERVAL + 1)) if (c + 1) % d == 0 and d > after]
    if not fits:
        return None
    return DEFAULT_COMPACT_INTERVAL if DEFAULT_COMPACT_INTERVAL in fits else fits[0]


L = TypeVar("L", bound=CompactibleLog)


def with_interval(log: L, kind: str, conf: Mapping[str, str]) -> L:
    """``log`` with its compaction interval known when no ``.compact`` file shows it yet: the
    offsets log's conf (``spark.sql.streaming.{fileSource,fileSink}.log.compactInterval``,
    recorded where the query set it), else Spark's default 10 — the interval the next
    compaction will use. Logs whose ``.compact`` files fit no interval stay unknown (None)."""
    if log.compact_interval is not None or log.compact_batch_ids:
        return log
    key = f"spark.sql.streaming.{'fileSource' if kind == 'source' else 'fileSink'}.log.compactInterval"
    raw = str(conf.get(key, ""))
    if raw.isdigit() and int(raw) > 0:
        return replace(log, compact_interval=int(raw), compact_interval_source="conf")
    return replace(log, compact_interval=DEFAULT_COMPACT_INTERVAL, compact_interval_source="default")


def _count_lines(body: bytes) -> int:
    body = body.strip(b"\n")
    return body.count(b"\n") + 1 if body.strip() else 0


def _parse_lines(body: bytes) -> list[Any] | None:
    body = body.strip()
    if not body:
        return []
    if b"\n\n" in body or b"\r" in body:
        body = b"\n".join(ln for ln in body.splitlines() if ln.strip())
    try:
        rows: list[Any] = orjson.loads(b"[" + body.replace(b"\n", b",") + b"]")
        return rows
    except orjson.JSONDecodeError:
        return None


def _entries(rows: list[Any], kind: str, batch_id: int) -> list[FileEntry] | list[SinkFileEntry] | None:
    """All rows as entries in one pass (the common case), or None when one is malformed."""
    try:
        if kind == "source":
            return [FileEntry(r["path"], r["timestamp"], r["batchId"]) for r in rows]
        return [
            SinkFileEntry(r["path"], r["size"], r["isDir"], r["modificationTime"], r["blockReplication"], r["blockSize"], r["action"], batch_id)
            for r in rows
        ]
    except (KeyError, TypeError):
        return None


class _LogFields(TypedDict):
    """What :class:`SourceLog` and :class:`SinkLog` share (see :class:`CompactibleLog`)."""

    path: str
    batch_ids: tuple[int, ...]
    compact_batch_ids: tuple[int, ...]
    compact_interval: int | None
    entry_count: int
    bytes_total: int
    latest_compact_bytes: int | None
    entries_loaded: bool


@overload
def read_file_log(storage: Storage, folder: str, kind: Literal["source"], *, entries: bool = True,
                  source: str = "0") -> tuple[SourceLog | None, list[Finding]]: ...
@overload
def read_file_log(storage: Storage, folder: str, kind: Literal["sink"], *, entries: bool = True,
                  source: str = "0") -> tuple[SinkLog | None, list[Finding]]: ...
def read_file_log(storage: Storage, folder: str, kind: Literal["source", "sink"], *, entries: bool = True,
                  source: str = "0") -> tuple[SourceLog | SinkLog | None, list[Finding]]:
    """Read a compactible log folder. ``kind`` is ``"source"`` (FileEntry lines; ``source`` is
    the source's folder name under ``sources/``) or ``"sink"`` (SinkFileStatus lines). With
    ``entries=False`` lines are counted, not parsed. Returns (None, []) when the folder is
    missing; bad files become findings."""
    items = storage.list(folder)
    if items is None:
        return None, []
    what_log = "file-source log" if kind == "source" else "file-sink log"
    batches, temps, strays = classify(items)
    findings = _odd_file_findings(storage, folder, what_log, temps, strays)
    ids = sorted(batches)
    compact_ids = [b for b in ids if batches[b][2]]
    start = compact_ids[-1] if compact_ids else (ids[0] if ids else 0)
    parsed_entries: list[FileEntry | SinkFileEntry] = []
    lines = 0
    needed = [b for b in ids if b >= start]  # the latest .compact file and the files after it
    for b in needed:
        name = batches[b][0]
        path = storage.join(folder, name)
        body = _read_body(storage, path, f"{what_log} {name}", findings)
        if body is None:
            continue
        if entries:
            parsed_entries += _parse_body(body, kind, b, f"{what_log} {name}", path, findings)
        else:
            lines += _count_lines(body)
    interval = detect_interval(compact_ids, latest=ids[-1] if ids else None)
    common = _LogFields(
        path=folder,
        batch_ids=tuple(ids),
        compact_batch_ids=tuple(compact_ids),
        compact_interval=interval,
        entry_count=len(parsed_entries) if entries else lines,
        bytes_total=sum(batches[b][1] for b in ids),
        latest_compact_bytes=batches[compact_ids[-1]][1] if compact_ids else None,
        entries_loaded=entries,
    )
    if compact_ids and batches[compact_ids[-1]][1] >= COMPACT_GROWTH_BYTES:
        findings.append(_growth_finding(storage, folder, what_log, compact_ids[-1], batches[compact_ids[-1]], interval))
    # _entry/_entries build FileEntry rows for a source log and SinkFileEntry rows for a sink log
    if kind == "source":
        return SourceLog(name=source, entries=tuple(cast(list[FileEntry], parsed_entries)), **common), findings
    return SinkLog(entries=tuple(cast(list[SinkFileEntry], parsed_entries)), **common), findings


def _odd_file_findings(storage: Storage, folder: str, what_log: str, temps: list[Item], strays: list[Item]) -> list[Finding]:
    """``stray-file`` for each unexpected item of a log folder, ``temporary-file`` for each
    ``.tmp`` file (being written, or left by a crash)."""
    findings = [Finding("warning", "stray-file", f"unexpected {'folder' if it.is_dir else 'file'} {it.name!r} in the {what_log}", storage.join(folder, it.name))
                for it in strays]
    findings += [Finding("info", "temporary-file", f"temporary file {it.name!r} in the {what_log} (being written, or left by a crash)", storage.join(folder, it.name))
                 for it in temps]
    return findings


def _read_body(storage: Storage, path: str, what: str, findings: list[Finding]) -> bytes | None:
    """The lines after the version header of the log file ``path``; None when it is gone
    (replaced by compaction or cleanup while we read), unreadable or has a bad header (then a
    finding says so)."""
    try:
        data = storage.read(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        findings.append(Finding("error", "unreadable-file", f"{what}: {e.strerror or e}", path))
        return None
    version, body, fs = split_header(data, path, MAX_FILE_LOG_VERSION, what)
    findings.extend(fs)
    return None if version is None else body


def _parse_body(body: bytes, kind: str, batch_id: int, what: str, path: str, findings: list[Finding]) -> list[FileEntry | SinkFileEntry]:
    """The entries of one log file's ``body``: all of them in one pass when every line is a
    well-formed entry, else line by line up to the first entry lacking required fields (a
    finding says which file is bad)."""
    rows = _parse_lines(body)
    if rows is None:
        findings.append(Finding("error", "unparsable-file", f"{what}: a line is not JSON (truncated?)", path))
        rows = [r for r in (_try(ln) for ln in body.split(b"\n") if ln.strip()) if r is not None]
    fast = _entries(rows, kind, batch_id)
    if fast is not None and all(type(e[0]) is str and type(e[1]) is int and type(e[-1]) is int for e in fast):
        return list(fast)
    out: list[FileEntry | SinkFileEntry] = []
    for r in rows:
        entry = _entry(r, kind, batch_id)
        if entry is None:
            findings.append(Finding("error", "unparsable-file", f"{what}: an entry lacks required fields", path))
            break
        out.append(entry)
    return out


def _growth_finding(storage: Storage, folder: str, what_log: str, compact_id: int, compact: tuple[str, int, bool], interval: int | None) -> Finding:
    """``compaction-growth``: the latest ``.compact`` file (``compact``: name, bytes, is
    compact) is over :data:`COMPACT_GROWTH_BYTES` and rewritten in full at every compaction."""
    return Finding(
        "warning",
        "compaction-growth",
        f"{what_log} compaction {compact_id}.compact is {compact[1] / 1048576:.0f} MiB and is rewritten in full "
        f"every {interval or '?'} batches; consider a retention setting or a new checkpoint",
        storage.join(folder, compact[0]),
    )


def _try(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None


def _long(v: Any) -> int:
    """``int(v)`` within a Java long's range (ValueError beyond it, as Spark's JSON reader)."""
    n = int(v)
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(f"{v!r} is not a long")
    return n


def _entry(r: Any, kind: str, batch_id: int) -> FileEntry | SinkFileEntry | None:
    if not isinstance(r, dict):
        return None
    try:
        if kind == "source":
            return FileEntry(r["path"], _long(r["timestamp"]), _long(r["batchId"]))
        return SinkFileEntry(
            r["path"],
            _long(r.get("size", 0)),
            bool(r.get("isDir", False)),
            _long(r.get("modificationTime", 0)),
            _long(r.get("blockReplication", 0)),
            _long(r.get("blockSize", 0)),
            str(r.get("action", "add")),
            batch_id,
        )
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
