"""Readers for a single log folder or file outside a full checkpoint (e.g. a copied
``offsets/`` folder, a sink's ``_spark_metadata``). Each returns (model objects, findings)
and raises :class:`CheckpointError` only when the path itself is unusable."""

from __future__ import annotations

import os

from streamwatch.checkpoint.filelog import read_file_log
from streamwatch.checkpoint.fs import Storage, StorageError, open_storage
from streamwatch.checkpoint.logs import parse_commit, parse_offsets
from streamwatch.checkpoint.reader import CheckpointError, batch_names, read_entries
from streamwatch.model.checkpoint import CommitLogEntry, OffsetLogEntry, SinkLog, SourceLog
from streamwatch.model.findings import Finding


def _open(path: str | os.PathLike[str]) -> tuple[Storage, str, str]:
    raw = os.fspath(path)
    try:
        storage, inner = open_storage(raw)
        kind = storage.kind(inner)
    except StorageError as e:
        raise CheckpointError(str(e)) from None
    if kind is None:
        raise CheckpointError(f"{raw}: no such file or directory")
    return storage, inner, kind


def read_offsets_log(path: str | os.PathLike[str]) -> tuple[tuple[OffsetLogEntry, ...], list[Finding]]:
    """An ``offsets/`` folder → entries sorted by batch id (mirrors ``OffsetSeqLog``)."""
    storage, folder, _ = _open(path)
    findings: list[Finding] = []
    ids = batch_names(storage, folder, "offsets", findings)
    return tuple(read_entries(storage, folder, ids, parse_offsets, findings)), findings


def read_commit_log(path: str | os.PathLike[str]) -> tuple[tuple[CommitLogEntry, ...], list[Finding]]:
    """A ``commits/`` folder → entries sorted by batch id (mirrors ``CommitLog``)."""
    storage, folder, _ = _open(path)
    findings: list[Finding] = []
    ids = batch_names(storage, folder, "commits", findings)
    return tuple(read_entries(storage, folder, ids, parse_commit, findings)), findings


def read_commit_file(path: str | os.PathLike[str], batch_id: int = 0) -> tuple[CommitLogEntry | None, list[Finding]]:
    """One commit file, whatever its name."""
    storage, inner, kind = _open(path)
    if kind != "file":
        raise CheckpointError(f"{path}: not a file")
    return parse_commit(storage.read(inner), batch_id, inner)


def read_file_source_log(path: str | os.PathLike[str]) -> tuple[SourceLog, list[Finding]]:
    """A ``sources/<i>/`` folder (mirrors ``FileStreamSourceLog.allFiles``)."""
    storage, folder, _ = _open(path)
    log, fs = read_file_log(storage, folder, "source")
    assert isinstance(log, SourceLog)
    return log, fs


def read_file_sink_log(path: str | os.PathLike[str]) -> tuple[SinkLog, list[Finding]]:
    """A ``_spark_metadata/`` folder (mirrors ``FileStreamSinkLog``)."""
    storage, folder, _ = _open(path)
    log, fs = read_file_log(storage, folder, "sink")
    assert isinstance(log, SinkLog)
    return log, fs
