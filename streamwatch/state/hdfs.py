"""The HDFS-backed state store of one partition (and store), rebuilt at a version without a
JVM: the latest readable ``N.snapshot`` at or below the version, then every ``N.delta`` after
it up to the version (mirrors ``HDFSBackedStateStoreProvider.loadMap``/``updateFromDeltaFile``).

Files may carry a checkpoint-v2 unique id (``N_<uuid>.delta``); ``unique_ids`` (version →
id, from the commit log) picks the right one when several exist.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from streamwatch.checkpoint.fs import Storage
from streamwatch.state.records import StateFileError, apply_records

if TYPE_CHECKING:  # numpy only where rows are decoded
    from streamwatch.state.entries import Entries, Replayer

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
    rows, rep = _replay(storage, folder, version, codec, unique_ids, _DictFiles)
    return rows.rows, rep


def load_entries(storage: Storage, folder: str, version: int, codec: str = "lz4",
                 unique_ids: Mapping[int, str] | None = None) -> tuple[Entries | dict[bytes, bytes], Replay]:
    """:func:`load`'s entries as :class:`~streamwatch.state.entries.Entries` (offsets into the
    files' decompressed bytes, no ``bytes`` per key and value) when every file splits
    column-wise, else the same ``dict``. Raises as :func:`load`."""
    from streamwatch.state.entries import Replayer

    acc, rep = _replay(storage, folder, version, codec, unique_ids, Replayer)
    return acc.result(), rep


class _DictFiles:
    """Files applied record by record into ``rows``."""

    def __init__(self) -> None:
        self.rows: dict[bytes, bytes] = {}

    def apply(self, raw: bytes, codec: str, name: str) -> None:
        apply_records(io.BytesIO(raw), codec, name, self.rows)


_A = TypeVar("_A", _DictFiles, "Replayer")


def _replay(storage: Storage, folder: str, version: int, codec: str, unique_ids: Mapping[int, str] | None,
            new: Callable[[], _A]) -> tuple[_A, Replay]:
    """The snapshot and deltas of ``folder`` up to ``version`` applied to ``new()`` (see :func:`load`)."""
    files = list_files(storage, folder)
    ids = unique_ids or {}
    skipped: list[str] = []
    snaps = sorted((v for v, kind in files if kind == "snapshot" and v <= version), reverse=True)
    for s in snaps:
        name, size = _pick(files[(s, "snapshot")], ids.get(s))
        acc = new()
        try:
            acc.apply(storage.read(storage.join(folder, name)), codec, name)
        except (StateFileError, OSError) as e:
            skipped.append(f"{name}: {e}")
            continue
        start, total = s, size
        break
    else:
        acc, start, total = new(), 0, 0
    deltas = []
    for v in range(start + 1, version + 1):
        cands = files.get((v, "delta"))
        if not cands:
            raise StateFileError(f"{folder}: {v}.delta is missing (needed to rebuild version {version}"
                                 f"{' from snapshot ' + str(start) if start else ''})")
        name, size = _pick(cands, ids.get(v))
        try:
            data = storage.read(storage.join(folder, name))
        except OSError as e:
            raise StateFileError(f"{name}: cannot read ({e})") from None
        acc.apply(data, codec, name)
        deltas.append(v)
        total += size
    return acc, Replay(start or None, tuple(deltas), total, tuple(skipped))
