"""Read a Structured Streaming checkpoint folder into :mod:`streamwatch.model.checkpoint`.

Read-only: files are opened for reading only; nothing is created, renamed or deleted. A bad
file inside the checkpoint becomes a :class:`~streamwatch.model.findings.Finding`; only an
unusable PATH raises :class:`CheckpointError`. Files that vanish while Spark rewrites or
purges the log are skipped.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from streamwatch.checkpoint import health
from streamwatch.checkpoint.delta import read_delta_log
from streamwatch.checkpoint.filelog import read_file_log, with_interval
from streamwatch.checkpoint.fs import Item, Storage, StorageError, open_storage, url_of
from streamwatch.checkpoint.logs import parse_commit, parse_metadata, parse_offsets
from streamwatch.checkpoint.spark4 import (
    find_repartitions,
    format_switch_findings,
    match_unique_ids,
    repartition_findings,
)
from streamwatch.checkpoint.state import read_state
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.checkpoint import Checkpoint, OffsetLogEntry, SinkLog, SourceLog
from streamwatch.model.deltalog import DeltaLog
from streamwatch.model.findings import Finding

_E = TypeVar("_E")

#: Batches parsed by a summary read (Spark keeps spark.sql.streaming.minBatchesToRetain=100).
SUMMARY_BATCHES = 100
KNOWN_ROOT = {"metadata", "offsets", "commits", "sources", "state", ".metadata.crc"}


class CheckpointError(StreamwatchError):
    """PATH itself is unusable: missing, not a directory, permission denied, a symlink loop,
    or not a checkpoint (neither ``metadata`` nor ``offsets/`` nor ``commits/``)."""

    exit_code = ExitCode.UNREADABLE


def batch_names(storage: Storage, folder: str, what: str, findings: list[Finding]) -> list[int]:
    names = storage.names(folder)
    if names is None:
        return []
    ids = []
    for n in names:
        if n.isdecimal() and int(n) < (1 << 63):  # Spark: a batch file's name parses as a long
            ids.append(int(n))
        elif n.startswith(".") and n.endswith(".crc"):
            continue
        elif n.startswith(".") and n.endswith(".tmp"):
            findings.append(Finding("info", "temporary-file", f"temporary file {n!r} in {what}/ (being written, or left by an interrupted write: Spark ignores it)", storage.join(folder, n)))
        else:
            findings.append(Finding("warning", "stray-file", f"unexpected {n!r} in {what}/ (Spark ignores it)", storage.join(folder, n)))
    ids.sort()
    return ids


def read_entries(
    storage: Storage, folder: str, ids: list[int], parse: Callable[[bytes, int, str], tuple[_E | None, list[Finding]]], findings: list[Finding]
) -> list[_E]:
    """Entries of the log files ``ids`` under ``folder``, parsed by ``parse(data, batch_id, path)``;
    files purged while reading are skipped, unreadable ones become findings."""
    paths = [storage.join(folder, str(b)) for b in ids]
    out: list[_E] = []
    for b, path, data in zip(ids, paths, storage.read_many(paths), strict=True):
        if isinstance(data, FileNotFoundError):
            continue  # purged by Spark while we read
        if isinstance(data, OSError):
            findings.append(Finding("error", "unreadable-file", f"{posixpath.basename(folder)}/{b}: {data.strerror or data}", path))
            continue
        entry, fs = parse(data, b, path)
        findings.extend(fs)
        if entry is not None:
            out.append(entry)
    return out


def _discover_sink(storage: Storage, root: str) -> str | None:
    """The sink folder of a checkpoint laid out like a streamwatch workspace
    (``…/checkpoints/<pipeline>/<layer>`` → ``…/tables/<pipeline>/<layer>``), or the folder
    holding the checkpoint when that folder has ``_spark_metadata``/``_delta_log``."""
    norm = root.rstrip("/\\")
    parts = norm.replace("\\", "/").split("/")
    candidates = []
    if len(parts) >= 3 and parts[-3] == "checkpoints":
        candidates.append("/".join(parts[:-3] + ["tables", parts[-2], parts[-1]]))
    candidates.append("/".join(parts[:-1]))
    for c in candidates:
        if not c:
            continue
        names = storage.names(c) or []
        if "_spark_metadata" in names or "_delta_log" in names:
            return c
    return None


def _problem_findings(problems: list[tuple[str, str]], findings: list[Finding]) -> list[Finding]:
    """``unreadable-file`` findings for entries the storage could not list or look at
    (symlink loops, permission denied), unless a finding already names the path."""
    named = {f.path for f in findings}
    out = []
    for path, reason in problems:
        if path not in named:
            named.add(path)
            out.append(Finding("error", "unreadable-file", f"{posixpath.basename(path.rstrip('/')) or path}: {reason}", path))
    return out


def _source_order(it: Item) -> tuple[bool, int, str]:
    """``sources/`` folders in order: numbered ones by number, then named ones by name."""
    return (False, int(it.name), "") if it.name.isdecimal() else (True, 0, it.name)


def _provider_hint(entries: tuple[OffsetLogEntry, ...]) -> str | None:
    if not entries:
        return None
    cls = entries[-1].conf.get("spark.sql.streaming.stateStore.providerClass", "")
    return "rocksdb" if "RocksDB" in cls else "hdfs" if "HDFSBacked" in cls else None


def _check_root(storage: Storage, root: str) -> list[str]:
    try:
        kind = storage.kind(root)
    except StorageError as e:
        raise CheckpointError(str(e)) from None
    if kind is None:
        raise CheckpointError(f"{root}: no such file or directory")
    if kind != "dir":
        raise CheckpointError(f"{root}: not a directory")
    try:
        names = storage.names(root)
    except PermissionError:
        raise CheckpointError(f"{root}: permission denied") from None
    except OSError as e:
        raise CheckpointError(f"{root}: cannot list ({e.strerror or e})") from None
    if names is None:
        problems = [reason for p, reason in storage.take_problems() if p == root]
        raise CheckpointError(f"{root}: {problems[0]}" if problems else f"{root}: no such file or directory")
    if not ({"metadata", "offsets", "commits"} & set(names)):
        raise CheckpointError(f"{root}: not a checkpoint (no metadata file, no offsets/ or commits/ folder)")
    if not ({"offsets", "commits"} & set(names)):
        try:
            head = storage.read(storage.join(root, "metadata"))[:64].lstrip()
        except OSError:
            head = b""
        if not head.startswith(b"{"):
            raise CheckpointError(f"{root}: not a checkpoint (its metadata file is not a query's, and there is no offsets/ or commits/ folder)")
    return names


#: The first bytes of the Kafka source's initial-offsets file ``sources/<i>/0`` (a zero byte
#: Spark still writes for Spark 2.1.0 readers, SPARK-19517, then the ``v1`` log header).
KAFKA_INITIAL_OFFSETS = b"\x00v"


def _not_a_file_source(storage: Storage, folder: str, name: str, offsets: tuple[OffsetLogEntry, ...]) -> bool:
    """Whether ``sources/<name>/`` belongs to a source other than a file source — the Kafka
    source keeps its initial offsets there — judged by the source's offsets (its kind in the
    latest offsets entry that has it), else by the first file's first bytes."""
    for entry in reversed(offsets):
        pos = entry.position(name)
        parsed = entry.parsed[pos] if pos is not None and pos < len(entry.parsed) else None
        if parsed is not None:
            return parsed.kind not in ("file", "raw")
    try:
        first = storage.read(storage.join(folder, "0"))
    except OSError:
        return False
    return first.startswith(KAFKA_INITIAL_OFFSETS)


def read_checkpoint(
    path: str | os.PathLike[str],
    sink: str | os.PathLike[str] | None = None,
    *,
    full: bool = True,
    storage_options: dict[str, Any] | None = None,
    sizes: bool = True,
) -> Checkpoint:
    """Read the checkpoint at ``path`` (a local folder or an fsspec URL such as
    ``s3://bucket/cp`` or ``file:///tmp/cp``) with its health findings.

    ``sink`` is the file sink's output folder (holding ``_spark_metadata/``) or a Delta sink
    table (``_delta_log/``); when None it is discovered from a streamwatch workspace layout.
    ``full=False`` is a summary read: every batch id is listed but only the last
    :data:`SUMMARY_BATCHES` offsets/commits are parsed, and file-log entries are counted, not
    parsed (``Checkpoint.complete`` False). ``sizes=False`` leaves state store sizes
    unmeasured where they cost a ``stat`` per file (``StateOperator.bytes`` None; object
    storage listings give them for free and still fill them in).

    Raises :class:`CheckpointError` when ``path`` is missing, not a directory, unreadable, a
    symlink loop, or not a checkpoint. Never raises on a bad file inside the checkpoint.
    """
    raw = os.fspath(path)
    try:
        storage, root = open_storage(raw, storage_options)
    except StorageError as e:
        raise CheckpointError(str(e)) from None
    try:
        names = _check_root(storage, root)
        return _read(storage, raw, root, names, sink, full, storage_options, sizes)
    except CheckpointError:
        raise
    except PermissionError as e:
        raise CheckpointError(f"{raw}: permission denied ({e.filename or ''})") from None
    except OSError as e:
        if isinstance(e, FileNotFoundError) and storage.kind(root) is None:
            raise CheckpointError(f"{raw}: no such file or directory (removed while reading)") from None
        raise CheckpointError(f"{raw}: cannot read ({e.strerror or e})") from None


def _read(
    storage: Storage,
    raw: str,
    root: str,
    names: list[str],
    sink: str | os.PathLike[str] | None,
    full: bool,
    storage_options: dict[str, Any] | None,
    sizes: bool = True,
) -> Checkpoint:
    findings = [Finding("warning", "stray-file", f"unexpected {n!r} at the checkpoint root", storage.join(root, n))
                for n in sorted(names) if n not in KNOWN_ROOT and not (n.startswith(".") and n.endswith(".crc"))]
    query_id = _read_metadata(storage, root, names, findings)
    offsets_dir, commits_dir = storage.join(root, "offsets"), storage.join(root, "commits")
    off_ids = batch_names(storage, offsets_dir, "offsets", findings)
    com_ids = batch_names(storage, commits_dir, "commits", findings)
    want_off = off_ids if full else off_ids[-SUMMARY_BATCHES:]
    want_com = com_ids if full else com_ids[-SUMMARY_BATCHES:]
    offsets = tuple(read_entries(storage, offsets_dir, want_off, parse_offsets, findings))
    commits = tuple(read_entries(storage, commits_dir, want_com, parse_commit, findings))
    sources = _read_sources(storage, root, offsets, full, findings)
    state, fs = read_state(storage, root, _provider_hint(offsets), sizes=sizes)
    findings.extend(fs)
    sink_read = _read_sink(storage, raw, root, sink, full, storage_options, offsets, findings)
    cp = Checkpoint(
        path=raw,
        query_id=query_id,
        offsets=offsets,
        commits=commits,
        sources=sources,
        sink=sink_read.log,
        delta_sink=sink_read.delta,
        state=state,
        offset_batch_ids=tuple(off_ids),
        commit_batch_ids=tuple(com_ids),
        sink_path=sink_read.path,
        complete=full,
        repartitions=find_repartitions(offsets),
    )
    matches, fs = match_unique_ids(cp)
    cp = replace(cp, unique_ids=matches)
    findings += fs
    findings += _log_findings(cp, offsets_dir, commits_dir, findings)
    problems = [*storage.take_problems(), *(sink_read.storage.take_problems() if sink_read.storage is not storage else [])]
    findings += _problem_findings(problems, findings)
    return replace(cp, findings=tuple(findings))


def _read_metadata(storage: Storage, root: str, names: list[str], findings: list[Finding]) -> str | None:
    """The query id from ``metadata`` (None when it is missing or bad: a finding says why)."""
    meta_path = storage.join(root, "metadata")
    if "metadata" not in names:
        findings.append(Finding("warning", "no-metadata", "no metadata file: the query id is unknown", meta_path))
        return None
    try:
        query_id, fs = parse_metadata(storage.read(meta_path), meta_path)
    except IsADirectoryError:
        findings.append(Finding("error", "unparsable-file", "metadata is a folder, not a file", meta_path))
        return None
    except OSError as e:
        findings.append(Finding("error", "unreadable-file", f"metadata: {e.strerror or e}", meta_path))
        return None
    findings.extend(fs)
    return query_id


def _read_sources(
    storage: Storage, root: str, offsets: tuple[OffsetLogEntry, ...], full: bool, findings: list[Finding]
) -> tuple[SourceLog, ...]:
    """The file sources' logs under ``sources/``, numbered folders first in number order.

    Every folder is a file source's log: ``sources/0/``… by index, or ``sources/<name>/`` for a
    source named with DataStreamReader.name (Spark 4.2+, offsets v2, where the name is the
    sourceId). A named source dropped from an evolved query keeps its folder, so a name the
    offsets read do not carry is no sign of damage."""
    sources: list[SourceLog] = []
    sources_dir = storage.join(root, "sources")
    conf = offsets[-1].conf if offsets else {}
    for it in sorted(storage.list(sources_dir) or [], key=_source_order):
        folder = storage.join(sources_dir, it.name)
        if not it.is_dir or it.name.startswith("."):
            findings.append(Finding("warning", "stray-file", f"unexpected {it.name!r} in sources/", folder))
            continue
        if _not_a_file_source(storage, folder, it.name, offsets):
            continue
        log, fs = read_file_log(storage, folder, "source", entries=full, source=it.name)
        findings.extend(fs)
        if log is not None:
            sources.append(with_interval(log, "source", conf))
    return tuple(sources)


@dataclass(frozen=True, slots=True)
class _SinkRead:
    """The sink as read: its file-sink ``log`` and/or ``delta`` log, its ``path`` (as given
    or discovered; None when there is none) and the ``storage`` it was read with."""

    log: SinkLog | None
    delta: DeltaLog | None
    path: str | None
    storage: Storage


def _open_sink(
    storage: Storage, raw: str, root: str, sink: str | os.PathLike[str] | None,
    storage_options: dict[str, Any] | None, findings: list[Finding],
) -> tuple[Storage, str | None, str | None]:
    """(storage, folder in it, path as shown) of the sink: ``sink`` when given, else the one
    :func:`_discover_sink` finds; the folder is None when there is none or it cannot be opened."""
    if sink is None:
        sink_root = _discover_sink(storage, root)
        return storage, sink_root, (url_of(raw, sink_root) if sink_root is not None else None)
    sink_path = os.fspath(sink)
    try:
        sink_storage, sink_root = open_storage(sink_path, storage_options)
    except StorageError as e:
        findings.append(Finding("error", "sink-unreadable", str(e), sink_path))
        return storage, None, sink_path
    return sink_storage, sink_root, sink_path


def _read_sink(
    storage: Storage, raw: str, root: str, sink: str | os.PathLike[str] | None, full: bool,
    storage_options: dict[str, Any] | None, offsets: tuple[OffsetLogEntry, ...], findings: list[Finding],
) -> _SinkRead:
    """The file sink's ``_spark_metadata/`` and the Delta sink's ``_delta_log/`` of the sink
    folder (:func:`_open_sink`); a missing or unreadable folder becomes a finding."""
    sink_storage, sink_root, sink_path = _open_sink(storage, raw, root, sink, storage_options, findings)
    if sink_root is None:
        return _SinkRead(None, None, sink_path, sink_storage)
    try:
        sink_kind = sink_storage.kind(sink_root)
    except StorageError as e:
        sink_path = sink_path or sink_root
        findings.append(Finding("error", "sink-unreadable", str(e), sink_path))
        return _SinkRead(None, None, sink_path, sink_storage)
    if sink_kind != "dir":
        findings.append(Finding("error", "sink-unreadable", f"sink folder {sink_path} is missing or not a folder", sink_path))
        return _SinkRead(None, None, sink_path, sink_storage)
    log, fs = read_file_log(sink_storage, sink_storage.join(sink_root, "_spark_metadata"), "sink", entries=full)
    findings.extend(fs)
    sink_log = with_interval(log, "sink", offsets[-1].conf if offsets else {}) if log is not None else None
    delta_log, fs = read_delta_log(sink_storage, sink_root)
    findings.extend(fs)
    if sink_log is None and delta_log is None:
        findings.append(Finding("warning", "sink-unknown", f"{sink_path} has neither _spark_metadata/ nor _delta_log/", sink_path))
    return _SinkRead(sink_log, delta_log, sink_path, sink_storage)


def _log_findings(cp: Checkpoint, offsets_dir: str, commits_dir: str, so_far: list[Finding]) -> list[Finding]:
    """The health findings of the read checkpoint ``cp`` (``so_far``: the findings of the
    files, which show leftovers in an ``offsets/`` without batches)."""
    findings = [*repartition_findings(cp, offsets_dir), *format_switch_findings(cp, commits_dir)]
    findings += health.log_findings(cp, offsets_dir, commits_dir)
    if not cp.offset_batch_ids and any(f.code in ("temporary-file", "stray-file") and f.path
                                       and posixpath.dirname(f.path) == offsets_dir for f in so_far):
        findings.append(Finding(
            "error", "offsets-not-empty-at-batch-0",
            "offsets/ holds no batch but is not empty (left by a crash during the first batch): Spark 4 "
            "refuses to start the query (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY); remove the leftover "
            "files or use a new checkpoint", offsets_dir))
    findings += health.conf_findings(cp.offsets, offsets_dir, cp.repartitions)
    findings += health.watermark_findings(cp)
    findings += health.state_findings(cp)
    findings += health.sink_source_findings(cp)
    return findings
