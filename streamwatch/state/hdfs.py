"""The HDFS-backed state store of one partition (and store), rebuilt at a version without a
JVM: the latest readable ``N.snapshot`` at or below the version, then every ``N.delta`` after
it up to the version (mirrors ``HDFSBackedStateStoreProvider.loadMap``/``updateFromDeltaFile``).

Files may carry a checkpoint-v2 unique id (``N_<uuid>.delta``); ``unique_ids`` (version →
id, from the commit log) picks the right one when several exist.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Mapping

from streamwatch.checkpoint.fs import Storage
from streamwatch.state.records import StateFileError, apply_records

_FILE = re.compile(r"^(\d+)(?:_([0-9A-Za-z-]+))?\.(delta|snapshot)$")


@dataclass(frozen=True, slots=True)
class Replay:
    """What a rebuild read: ``snapshot`` version it started from (None: from delta 1),
    ``deltas`` replayed (versions), ``bytes`` read (compressed), ``skipped`` snapshot
    files that could not be read (name: reason)."""

    snapshot: int | None
    deltas: tuple[int, ...]
    bytes: int
    skipped: tuple[str, ...] = ()


def list_files(storage: Storage, folder: str) -> dict[tuple[int, str], list[tuple[str | None, str, int]]]:
    """(version, ``delta``|``snapshot``) → [(unique id, file name, size)] in ``folder``."""
    out: dict[tuple[int, str], list[tuple[str | None, str, int]]] = {}
    for it in storage.list(folder) or []:
        m = _FILE.match(it.name)
        if m and not it.is_dir:
            out.setdefault((int(m.group(1)), m.group(3)), []).append((m.group(2), it.name, it.size))
    return out


def _pick(cands: list[tuple[str | None, str, int]], uid: str | None) -> tuple[str, int]:
    if uid is not None:
        for u, name, size in cands:
            if u == uid:
                return name, size
    plain = [c for c in cands if c[0] is None]
    u, name, size = (plain or cands)[0]
    return name, size


def apply_file(storage: Storage, folder: str, name: str, codec: str, rows: dict[bytes, bytes]) -> None:
    """Apply the records of state file ``name`` in ``folder`` to ``rows`` (puts and deletes).
    Raises :class:`StateFileError` or ``OSError``."""
    data = storage.read(storage.join(folder, name))
    apply_records(io.BytesIO(data), codec, name, rows)


def load(storage: Storage, folder: str, version: int, codec: str = "lz4",
         unique_ids: Mapping[int, str] | None = None) -> tuple[dict[bytes, bytes], Replay]:
    """Key bytes → value bytes (UnsafeRows) of the store in ``folder`` at ``version``, and
    what was read. Raises :class:`StateFileError` when a delta needed is missing or
    unreadable (an unreadable snapshot falls back to an older one, noted in ``skipped``)."""
    files = list_files(storage, folder)
    ids = unique_ids or {}
    skipped: list[str] = []
    snaps = sorted((v for v, kind in files if kind == "snapshot" and v <= version), reverse=True)
    for s in snaps:
        name, size = _pick(files[(s, "snapshot")], ids.get(s))
        rows: dict[bytes, bytes] = {}
        try:
            apply_file(storage, folder, name, codec, rows)
        except (StateFileError, OSError) as e:
            skipped.append(f"{name}: {e}")
            continue
        start, total = s, size
        break
    else:
        rows, start, total = {}, 0, 0
    deltas = []
    for v in range(start + 1, version + 1):
        cands = files.get((v, "delta"))
        if not cands:
            raise StateFileError(f"{folder}: {v}.delta is missing (needed to rebuild version {version}"
                                 f"{' from snapshot ' + str(start) if start else ''})")
        name, size = _pick(cands, ids.get(v))
        try:
            apply_file(storage, folder, name, codec, rows)
        except OSError as e:
            raise StateFileError(f"{name}: cannot read ({e})") from None
        deltas.append(v)
        total += size
    return rows, Replay(start or None, tuple(deltas), total, tuple(skipped))
