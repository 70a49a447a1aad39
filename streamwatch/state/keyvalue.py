"""The bytes of one state key in the one partition it lives in (see :mod:`streamwatch.state.keys`):
RocksDB — the newest snapshot zip at or below the version asked for a point lookup (``get``),
then the changelogs after it filtered on the key; HDFS-backed — the partition rebuilt from its
snapshot and deltas. Raises :class:`~streamwatch.state.model.StateReadError`."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamwatch.checkpoint.fs import Storage
from streamwatch.model.statestore import StateOperator
from streamwatch.state import hdfs, rocksdb
from streamwatch.state.model import StateReadError
from streamwatch.state.records import DELETE, MERGE, StateFileError, open_stream, read_records
from streamwatch.state.schema import ColumnFamilySchema

if TYPE_CHECKING:  # keys imports this module
    from streamwatch.state.keys import KeyTarget
    from streamwatch.state.stores import StateContext


def pick(cands: list[tuple[str | None, str, int]] | None, uid: str | None) -> tuple[str, int] | None:
    """The file of one version: the one with the commit log's unique id, else the plain one."""
    if not cands:
        return None
    if uid is not None:
        return next(((name, size) for u, name, size in cands if u == uid), None)
    plain = [c for c in cands if c[0] is None]
    if plain or len(cands) == 1:
        _u, name, size = (plain or cands)[0]
        return name, size
    return None


@dataclass(frozen=True, slots=True)
class Resolved:
    """A key placed: the read context, its operator and column family, the :class:`KeyTarget`,
    the store folder of its partition and the store's index (checkpoint v2 unique ids)."""

    ctx: StateContext
    op: StateOperator
    cf: ColumnFamilySchema
    target: KeyTarget
    folder: str
    store_index: int


def matches(stored: bytes, key_row: bytes) -> bool:
    """Whether a stored key is ``key_row``: RocksDB prefixes it with a 1-byte encoding version
    (and virtual column families a 2-byte id), which UnsafeRow lengths (multiples of 8) tell."""
    skip = len(stored) % 8
    return len(stored) - skip == len(key_row) and stored[skip:] == key_row


# -- RocksDB: a point lookup ------------------------------------------------------------------

def _rocks_get(storage: Storage, folder: str, zip_name: str, key_row: bytes) -> tuple[bytes | None, int]:
    """The value bytes of ``key_row`` in the database of ``zip_name`` (+ its SSTs), read with a
    rocksdict ``get``; (value or None, bytes read). Raises :class:`StateFileError`."""
    from rocksdict import AccessType, Options, Rdict

    try:
        with rocksdb.rebuilt(storage, folder, zip_name) as (tmp, total, _):
            try:
                db = Rdict(tmp, options=Options(raw_mode=True), access_type=AccessType.read_only())
            except Exception as e:  # noqa: BLE001 - rocksdb's own errors are plain Exceptions
                raise StateFileError(f"{zip_name}: RocksDB cannot open the rebuilt database ({e})") from None
            try:
                # the stored key's prefix (encoding version byte) is learnt from the first key
                it = db.iter()
                it.seek_to_first()
                first = bytes(it.key()) if it.valid() else None
                del it
                if first is None:
                    return None, total
                value = db.get(first[:len(first) % 8] + key_row)
                return (None if value is None else bytes(value)), total
            finally:
                db.close()
    except OSError as e:
        raise StateFileError(f"{zip_name}: cannot read ({e})") from None


def records(storage: Storage, folder: str, name: str, codec: str, changelog: bool, key_row: bytes) -> list[tuple[str, bytes | None]]:
    try:
        data = storage.read(storage.join(folder, name))
    except OSError as e:
        raise StateFileError(f"{name}: cannot read ({e})") from None
    # a whole file (its end marker last: key length -1, or a v2/v4 changelog's 0x00) whose
    # decompressed bytes do not hold the key row has no record of it: the record-by-record
    # parse is skipped (most files of a history, for one key); others are parsed, which
    # raises for a truncated file
    fh = open_stream(io.BytesIO(data), codec, name)
    try:
        plain = fh.read()
    except Exception as e:  # noqa: BLE001 - a codec error (LZ4BlockError…) is an unreadable file
        raise StateFileError(f"{name}: unreadable ({type(e).__name__}: {e})") from None
    finally:
        fh.close()
    ended = plain.endswith(b"\xff\xff\xff\xff") or (changelog and plain[:3] == b"\x00\x02v" and plain.endswith(b"\x00"))
    if ended and key_row not in plain:
        return []
    return [(r.op, r.value) for r in read_records(io.BytesIO(data), codec, name, changelog=changelog)
            if matches(r.key, key_row)]


def _apply(value: bytes | None, recs: list[tuple[str, bytes | None]]) -> bytes | None:
    for op, v in recs:
        if op == DELETE:
            value = None
        elif op == MERGE and value is not None and v is not None:
            value = value + b"," + v
        else:
            value = v
    return value


def _rocks_value(r: Resolved, version: int) -> tuple[bytes | None, list[str], int]:
    """(value bytes, files read, bytes read) of the key at ``version`` in a RocksDB store."""
    ctx, folder, key_row = r.ctx, r.folder, r.target.key_row
    files = rocksdb.list_files(ctx.storage, folder)
    ids = ctx.unique_ids(r.op.operator_id, r.target.partition, r.store_index, version)
    value, start, read, total = None, 0, [], 0
    for s in sorted((v for v, kind in files if kind == "zip" and v <= version), reverse=True):
        picked = pick(files[(s, "zip")], ids.get(s))
        if picked is None or not all((v, "changelog") in files for v in range(s + 1, version + 1)):
            continue
        value, total = _rocks_get(ctx.storage, folder, picked[0], key_row)
        read.append(picked[0])
        start = s
        break
    for v in range(start + 1, version + 1):
        picked = pick(files.get((v, "changelog")), ids.get(v))
        if picked is None:
            raise StateFileError(f"{folder}: no snapshot (.zip) or changelog for version {v} "
                                 f"(needed to rebuild version {version})")
        value = _apply(value, records(ctx.storage, folder, picked[0], ctx.codec, True, key_row))
        read.append(picked[0])
        total += picked[1]
    return value, read, total


def _hdfs_value(r: Resolved, version: int) -> tuple[bytes | None, list[str], int]:
    ids = r.ctx.unique_ids(r.op.operator_id, r.target.partition, r.store_index, version)
    rows, rep = hdfs.load(r.ctx.storage, r.folder, version, r.ctx.codec, ids)
    value = rows.get(r.target.key_row)  # HDFS-backed stores key by the plain UnsafeRow
    names = ([f"{rep.snapshot}.snapshot"] if rep.snapshot else []) + [f"{v}.delta" for v in rep.deltas]
    return value, names, rep.bytes


def value_at(r: Resolved, version: int) -> tuple[bytes | None, list[str], int]:
    try:
        if r.target.provider == "rocksdb":
            return _rocks_value(r, version)
        return _hdfs_value(r, version)
    except (StateFileError, OSError) as e:
        raise StateReadError(f"state/{r.op.operator_id} partition {r.target.partition}: {e}") from None
