"""One key of a store that holds several entries per key: session windows
(``StreamingSessionWindowStateManagerImplV1``), for :mod:`streamwatch.state.keys`.

A session window aggregation keys its store by the grouping key and the session's start
(``key columns…, sessionStartTime``), the grouping key being the store's prefix-scan columns
(``numColsPrefixKey``); the value is the session's aggregation row. Spark places a row by the
grouping key alone (the operator's ``ClusteredDistribution`` over the keys without the
session), so the key asked for is the prefix and its answer is every session stored under it.

An entry belongs to the key when its decoded prefix columns, written back as an UnsafeRow
(:func:`streamwatch.state.unsaferow_encode.encode_row`), are the key's own bytes: the same
byte equality the whole-row lookup uses, whatever the column types. HDFS-backed stores hold
the whole key row; RocksDB's prefix-scan encoder a length-prefixed prefix row and the rest
(:mod:`streamwatch.state.encoding`). The partition is rebuilt (snapshot and deltas, or zip
and changelogs) and its entries filtered; history reads each version's delta or changelog.
Errors: :class:`~streamwatch.state.records.StateFileError`,
:class:`~streamwatch.state.unsaferow.RowError`.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamwatch.state import hdfs, rocksdb
from streamwatch.state.encoding import decoders
from streamwatch.state.keyvalue import pick
from streamwatch.state.records import StateFileError, read_records
from streamwatch.state.types import StructType
from streamwatch.state.unsaferow import RowError
from streamwatch.state.unsaferow_encode import EncodeError, encode_row

if TYPE_CHECKING:
    from streamwatch.state.keyvalue import Resolved

#: stored key bytes → the entry's own key columns (after the prefix), or None: not the key's
Matcher = Callable[[bytes], tuple[Any, ...] | None]


@dataclass(frozen=True, slots=True)
class GroupRecord:
    """One record of the key in a delta/changelog: ``op`` (``put``/``delete``), the stored key
    bytes ``raw_key``, the entry's ``sub_key`` (its key columns after the prefix) and value
    bytes (None for a delete)."""

    op: str
    raw_key: bytes
    sub_key: tuple[Any, ...]
    value: bytes | None


def matcher(r: Resolved) -> Matcher:
    """The :data:`Matcher` of the resolved key (``r.target.prefix_cols`` prefix columns)."""
    kdec, _vdec = decoders(r.cf, r.target.provider)
    n, schema, want = r.target.prefix_cols, r.target.schema, r.target.key_row

    def match(stored: bytes) -> tuple[Any, ...] | None:
        try:
            key = kdec(stored)
            mine = encode_row(schema, key[:n])
        except (RowError, EncodeError) as e:
            raise StateFileError(f"a stored key does not decode with the key schema ({e})") from None
        return tuple(key[n:]) if mine == want else None
    return match


def entries_at(r: Resolved, version: int) -> tuple[dict[bytes, tuple[tuple[Any, ...], bytes]], list[str], int]:
    """The key's entries at ``version`` (stored key bytes → (sub-key, value bytes)), the files
    read and their bytes. Raises :class:`StateFileError` or ``OSError``."""
    ctx, folder = r.ctx, r.folder
    ids = ctx.unique_ids(r.op.operator_id, r.target.partition, r.store_index, version)
    if r.target.provider == "rocksdb":
        rows, rrep = rocksdb.load(ctx.storage, folder, version, ctx.codec, ids)
        names = ([f"{rrep.snapshot}.zip"] if rrep.snapshot else []) + [f"{v}.changelog" for v in rrep.changelogs]
        nbytes = rrep.bytes
    else:
        rows, hrep = hdfs.load(ctx.storage, folder, version, ctx.codec, ids)
        names = ([f"{hrep.snapshot}.snapshot"] if hrep.snapshot else []) + [f"{v}.delta" for v in hrep.deltas]
        nbytes = hrep.bytes
    match = matcher(r)
    out: dict[bytes, tuple[tuple[Any, ...], bytes]] = {}
    for k, v in rows.items():
        sub = match(k)
        if sub is not None:
            out[k] = (sub, v)
    return out, names, nbytes


def records_of(r: Resolved, version: int, files: rocksdb.Files, ids: Mapping[int, str]) -> list[GroupRecord]:
    """The key's records in the delta (HDFS) or changelog (RocksDB) of ``version``, in file
    order. Raises :class:`StateFileError` (no such file, or unreadable) or ``OSError``."""
    rocks = r.target.provider == "rocksdb"
    kind = "changelog" if rocks else "delta"
    picked = pick(files.get((version, kind)), ids.get(version))
    if picked is None:
        raise StateFileError(f"{r.folder}: no {kind} file for version {version} (batch {version - 1})")
    data = r.ctx.storage.read(r.ctx.storage.join(r.folder, picked[0]))
    match = matcher(r)
    out: list[GroupRecord] = []
    for rec in read_records(io.BytesIO(data), r.ctx.codec, picked[0], changelog=rocks):
        sub = match(rec.key)
        if sub is not None:
            out.append(GroupRecord(rec.op, rec.key, sub, rec.value))
    return out


def prefix_schema(key: StructType, prefix_cols: int) -> StructType:
    """The grouping key's columns: the first ``prefix_cols`` of the store's key schema."""
    return StructType(key.fields[:prefix_cols])
