"""How a store's key and value bytes encode rows, per provider and encoding format.

- HDFS-backed store: key and value are plain UnsafeRows.
- RocksDB, ``encodingFormat=unsaferow`` (mirrors ``RocksDBStateEncoder``): a no-prefix key is
  the key UnsafeRow; a prefix-scan key (session windows) is a little-endian int length, the
  prefix columns' row and the remaining columns' row, each row preceded by a one-byte encoding
  version; a value is the encoding version byte followed by the value UnsafeRow. Keys of a
  virtual column family (transformWithState) start with its 2-byte id.

UnsafeRows are always a multiple of 8 bytes long, which tells a versioned or prefixed row
from a plain one. Errors: :class:`~streamwatch.state.unsaferow.RowError` (one line).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamwatch.state.schema import ColumnFamilySchema
from streamwatch.state.types import StructType
from streamwatch.state.unsaferow import RowError, compile_row

if TYPE_CHECKING:
    import numpy as np

    from streamwatch.state.entries import Entries

RowDecoder = Callable[[bytes], tuple[Any, ...]]


def _plain(schema: StructType) -> RowDecoder:
    dec = compile_row(schema)

    def decode(b: bytes) -> tuple[Any, ...]:
        return dec(b, 0, len(b))
    return decode


def _versioned(schema: StructType) -> RowDecoder:
    """An UnsafeRow, possibly preceded by a 1-byte encoding version and/or a 2-byte column
    family id (told apart by the length modulo 8)."""
    dec = compile_row(schema)

    def decode(b: bytes) -> tuple[Any, ...]:
        skip = len(b) % 8
        if skip not in (0, 1, 2, 3):
            raise RowError(f"{len(b)}-byte record is not an UnsafeRow with a version/column-family prefix")
        return dec(b, skip, len(b) - skip)
    return decode


def _prefix_scan(schema: StructType, prefix_cols: int) -> RowDecoder:
    head = StructType(schema.fields[:prefix_cols])
    rest = StructType(schema.fields[prefix_cols:])
    dh, dr = compile_row(head), compile_row(rest)

    def decode(b: bytes) -> tuple[Any, ...]:
        start = 2 if len(b) % 8 in (2, 3) and len(b) >= 6 and struct.unpack_from("<i", b, 2)[0] < len(b) else 0
        if len(b) < start + 4:
            raise RowError("prefix-scan key shorter than its length header")
        n = struct.unpack_from("<i", b, start)[0]
        if n <= 0 or start + 4 + n > len(b):
            raise RowError(f"prefix-scan key with a bad prefix length {n}")
        p_off, p_len = start + 4, n
        r_off, r_len = start + 4 + n, len(b) - start - 4 - n
        # each part carries its version byte when its length is not a multiple of 8
        ps, rs = p_len % 8, r_len % 8
        return dh(b, p_off + ps, p_len - ps) + dr(b, r_off + rs, r_len - rs)
    return decode


def decoders(cf: ColumnFamilySchema, provider: str) -> tuple[RowDecoder, RowDecoder]:
    """(key decoder, value decoder) of one store/column family: bytes → tuple of values in
    schema order."""
    if provider != "rocksdb":
        return _plain(cf.key), _plain(cf.value)
    if cf.encoder == "prefixScan" and cf.prefix_cols > 0:
        key = _prefix_scan(cf.key, cf.prefix_cols)
    else:
        key = _versioned(cf.key)
    return key, _versioned(cf.value)


@dataclass(frozen=True, slots=True)
class BatchDecoder:
    """The column-wise decoder of a store's entries: ``decode(entries, lo, hi)`` → (one value
    list per column: key fields then value fields, entries ``lo``…``hi - 1`` decoded: a bool
    array), reading :class:`~streamwatch.state.entries.Entries` whose buffer has at least
    ``pad`` zero bytes past its end."""

    decode: Callable[[Entries, int, int], tuple[list[list[Any]], np.ndarray]]
    pad: int


def batch_rows(cf: ColumnFamilySchema, provider: str, drop_key_tail: int = 0) -> BatchDecoder | None:
    """The column-wise decoder (:mod:`streamwatch.state.columnar`) of many entries of one
    store/column family: the values :func:`decoders` gives, key fields (without the last
    ``drop_key_tail``) then value fields, one list per column; entries flagged False are left
    to :func:`decoders` (which raises their error). None when a type (or a prefix-scan key) is
    not decoded column-wise. May raise :class:`~streamwatch.state.columnar.BatchError`."""
    if provider == "rocksdb" and cf.encoder == "prefixScan" and cf.prefix_cols > 0:
        return None
    from streamwatch.state.columnar import compile_spans, padding  # numpy: only where rows are decoded

    versioned = provider == "rocksdb"
    keys = compile_spans(cf.key, versioned=versioned)
    values = compile_spans(cf.value, versioned=versioned)
    if keys is None or values is None:
        return None
    n_keys = len(cf.key.fields) - drop_key_tail
    if n_keys + len(cf.value.fields) == 0:
        return None  # no column to zip the rows from

    def decode(e: Entries, lo: int, hi: int) -> tuple[list[list[Any]], np.ndarray]:
        kcols, kok = keys(e.buf, e.kstart[lo:hi], e.klen[lo:hi])
        vcols, vok = values(e.buf, e.vstart[lo:hi], e.vlen[lo:hi])
        return kcols[:n_keys] + vcols, kok & vok
    return BatchDecoder(decode, max(padding(cf.key), padding(cf.value)))
