"""Read a Structured Streaming checkpoint folder into :mod:`streamwatch.model.checkpoint`.

Read-only: files are opened for reading only; nothing is created, renamed or deleted.
"""

from __future__ import annotations

import json
import os

from streamwatch.model.checkpoint import Checkpoint, CommitLogEntry, OffsetLogEntry


class CheckpointError(Exception):
    """PATH itself is unusable: missing, not a directory, or not a checkpoint."""


def _batch_files(folder: str) -> list[tuple[int, str]]:
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted((int(n), os.path.join(folder, n)) for n in names if n.isdigit())


def _read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def _version(header: str) -> int:
    return int(header[1:]) if header.startswith("v") and header[1:].isdigit() else 0


def read_offsets(path: str, batch_id: int) -> OffsetLogEntry:
    """Parse one ``offsets/N`` file (mirrors ``OffsetSeqLog.deserialize``, v1 format)."""
    lines = _read_lines(path)
    meta = json.loads(lines[1]) if len(lines) > 1 and lines[1].startswith("{") else {}
    sources = tuple(None if line == "-" else line for line in lines[2:] if line)
    return OffsetLogEntry(
        batch_id=batch_id,
        version=_version(lines[0] if lines else ""),
        watermark_ms=meta.get("batchWatermarkMs"),
        timestamp_ms=meta.get("batchTimestampMs"),
        conf=meta.get("conf") or {},
        sources=sources,
    )


def read_commit(path: str, batch_id: int) -> CommitLogEntry:
    """Parse one ``commits/N`` file (mirrors ``CommitLog.deserialize``)."""
    lines = _read_lines(path)
    meta = json.loads(lines[1]) if len(lines) > 1 else {}
    return CommitLogEntry(batch_id, _version(lines[0] if lines else ""), meta.get("nextBatchWatermarkMs"))


def read_checkpoint(path: str | os.PathLike[str]) -> Checkpoint:
    """Read the checkpoint at ``path``.

    Raises :class:`CheckpointError` when ``path`` is missing, not a directory, or holds
    neither ``metadata`` nor ``offsets/``.
    """
    root = os.fspath(path)
    if not os.path.exists(root):
        raise CheckpointError(f"{root}: no such file or directory")
    if not os.path.isdir(root):
        raise CheckpointError(f"{root}: not a directory")
    meta_path = os.path.join(root, "metadata")
    has_offsets = os.path.isdir(os.path.join(root, "offsets"))
    if not os.path.isfile(meta_path) and not has_offsets:
        raise CheckpointError(f"{root}: not a checkpoint (no metadata file, no offsets/ folder)")
    query_id = None
    if os.path.isfile(meta_path):
        with open(meta_path, encoding="utf-8") as f:
            query_id = json.loads(f.readline() or "{}").get("id")
    offsets = tuple(read_offsets(p, b) for b, p in _batch_files(os.path.join(root, "offsets")))
    commits = tuple(read_commit(p, b) for b, p in _batch_files(os.path.join(root, "commits")))
    return Checkpoint(root, query_id, offsets, commits)
