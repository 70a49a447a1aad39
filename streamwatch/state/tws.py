"""transformWithState state variables (value, list and map state, TTL, timers) decoded from
the operator's RocksDB store without a JVM, as Spark's state data source shows them
(``spark.read.format("statestore").option("stateVarName", NAME)``, flattened collections;
``option("readRegisteredTimers", true)`` for timers).

Layout (mirrors ``RocksDBStateEncoder`` of Spark 4.2 with virtual column families): every
state variable and internal index (``$ttl_<var>``, ``$count_<var>``, ``$min_<var>``,
``$rowCounter_<var>``, ``$procTimers_…``/``$eventTimers_…``) is a column family whose keys
start with its 2-byte little-endian id (``columnFamilyMapping`` in the snapshot zip's
metadata); the state schema file (v3) gives each one's key/value schema and key encoder:

- no-prefix key: ``[cf id][version byte][schema id (2 bytes, Avro only)][row]``;
- prefix-scan key (map state: grouping key + user key; timers: grouping key + expiry ms) and
  range-scan key: ``[cf id][int32 LE n][n bytes: version byte + prefix row][version byte +
  schema id (Avro only) + remaining row]``; a range-scan prefix row holds, per ordering
  column, a marker byte (0 negative, 1 positive, 2 null) and the big-endian value;
- value: ``[version byte][schema id (2 bytes, Avro only)][row]``; a list-state value is
  its elements, each ``[int32 LE size][value]``, one after the other with the store's merge
  delimiter between two (``spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion`` 1:
  a ``,`` byte; 2, Spark 4.2+'s new checkpoints: nothing) — the same whether Spark wrote a
  whole list (``put``/``appendList``) or RocksDB's ``StringAppendOperator`` joined the
  operands of appends (merges) across batches (:mod:`streamwatch.state.rocksdb`); Spark's
  reader skips the delimiter's length after each element.

The version byte is 0 in every store Spark 4.0–4.3 writes; bytes with another one, a
list-state value that does not split as above or a range-scan column without its marker
raise :class:`RowError` rather than being decoded as this layout.

Rows are UnsafeRows (:mod:`streamwatch.state.unsaferow`) or, with ``encodingFormat=avro``,
Avro records (:mod:`streamwatch.state.avro`). Errors: :class:`RowError` per row.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamwatch.state.avro import compile_avro
from streamwatch.state.schema import ColumnFamilySchema
from streamwatch.state.types import DataType, Field, StructType
from streamwatch.state.unsaferow import RowError, compile_row

TIMERS = "timers"
TIMER_CFS = ("$procTimers_keyToTimestamp", "$eventTimers_keyToTimestamp")
_I = struct.Struct("<i")
_MARK_NULL = 2
ENCODING_VERSION = 0  # RocksDBStateEncoder's STATE_ENCODING_VERSION, the byte before each row
Part = Callable[[bytes, int, int], tuple[Any, ...]]


def _part(schema: StructType, avro: bool) -> Part:
    """(buffer, offset, end) → values of one row of ``schema`` in either encoding."""
    if avro:
        dec = compile_avro(schema)
        return lambda b, off, end: dec(b[:end] if end != len(b) else b, off)
    row = compile_row(schema)
    return lambda b, off, end: row(b, off, end - off)


def _range_part(schema: StructType, avro: bool) -> Part:
    """The ordering columns of a range-scan key: per column a marker byte and the value
    big-endian (an UnsafeRow of binary fields, or an Avro record of byte pairs)."""
    if avro:
        pairs = StructType(tuple(Field(f"{f.name}_{x}", DataType("binary")) for f in schema.fields for x in ("m", "v")))
        raw = compile_avro(pairs)

        def cols(b: bytes, off: int, end: int) -> list[bytes | None]:
            vals = raw(b[:end], off)
            return [(m or b"") + (v or b"") if m is not None else None for m, v in zip(vals[::2], vals[1::2], strict=True)]
    else:
        rows = compile_row(StructType(tuple(Field(f.name, DataType("binary")) for f in schema.fields)))

        def cols(b: bytes, off: int, end: int) -> list[bytes | None]:
            return list(rows(b, off, end - off))

    def value(t: DataType, v: bytes | None) -> Any:
        if v is None:
            return None
        if not v or v[0] > _MARK_NULL:
            raise RowError(f"range-scan column starts with {v[:1].hex() or 'nothing'}, not a sign/null marker")
        if v[0] == _MARK_NULL:
            return None
        body, neg = v[1:], v[0] == 0
        n = t.name
        fmt = {"long": ">q", "integer": ">i", "short": ">h", "byte": ">b", "double": ">d", "float": ">f"}.get(n)
        if n == "boolean":
            return body[:1] == b"\x01"
        if fmt is None:
            raise RowError(f"range-scan column of type {t.simple()} is not decoded")
        if len(body) != struct.calcsize(fmt):
            raise RowError(f"range-scan {t.simple()} column of {len(body)} bytes")
        if neg and n in ("double", "float"):  # negative floats are stored with every bit flipped
            width = 8 if n == "double" else 4
            body = (int.from_bytes(body[:width], "big") ^ ((1 << (8 * width)) - 1)).to_bytes(width, "big")
        return struct.unpack_from(fmt, body)[0]

    types = [f.type for f in schema.fields]

    def decode(b: bytes, off: int, end: int) -> tuple[Any, ...]:
        return tuple(value(t, v) for t, v in zip(types, cols(b, off, end), strict=True))
    return decode


def _version(b: bytes, pos: int, what: str) -> None:
    """Raise :class:`RowError` unless ``b[pos]`` is the state encoding version decoded here:
    bytes of another layout are never read as if they were this one."""
    if pos >= len(b):
        raise RowError(f"{what} ends before its encoding version byte")
    if b[pos] != ENCODING_VERSION:
        raise RowError(f"{what} has state encoding version {b[pos]} (version {ENCODING_VERSION} is decoded)")


def key_decoder(cf: ColumnFamilySchema, avro: bool) -> Callable[[bytes], tuple[Any, ...]]:
    """Key bytes (with the column family id) → key values in ``cf.key`` order."""
    sid = 2 if avro else 0
    if cf.encoder == "noPrefix":
        whole = _part(cf.key, avro)

        def plain(b: bytes) -> tuple[Any, ...]:
            _version(b, 2, "key")
            return whole(b, 3 + sid, len(b))
        return plain
    n = len(cf.key.fields)
    first = list(range(cf.prefix_cols)) if cf.encoder == "prefixScan" else [o for o in cf.ordinals if 0 <= o < n]
    rest = [i for i in range(n) if i not in first]
    head_schema = StructType(tuple(cf.key.fields[i] for i in first))
    tail_schema = StructType(tuple(cf.key.fields[i] for i in rest))
    head = _part(head_schema, avro) if cf.encoder == "prefixScan" else _range_part(head_schema, avro)
    tail = _part(tail_schema, avro) if rest else None
    order = first + rest

    def decode(b: bytes) -> tuple[Any, ...]:
        if len(b) < 6:
            raise RowError("scan key shorter than its length header")
        size = _I.unpack_from(b, 2)[0]
        if size <= 1 or 6 + size > len(b):
            raise RowError(f"scan key with a bad prefix length {size}")
        _version(b, 6, "key prefix")
        if tail:
            _version(b, 6 + size, "key")
        vals = head(b, 7, 6 + size) + (tail(b, 6 + size + 1 + sid, len(b)) if tail else ())
        out: list[Any] = [None] * n
        for pos, v in zip(order, vals, strict=True):
            out[pos] = v
        return tuple(out)
    return decode


def value_decoder(cf: ColumnFamilySchema, avro: bool) -> Callable[[bytes, int, int], tuple[Any, ...]]:
    """(bytes, offset, end) of one value → values in ``cf.value`` order."""
    body = _part(cf.value, avro)
    skip = 3 if avro else 1

    def decode(b: bytes, off: int, end: int) -> tuple[Any, ...]:
        _version(b, off, "value")
        return body(b, off + skip, end)
    return decode


def split_values(b: bytes, delimiter: bytes | None = None) -> list[tuple[int, int]]:
    """(offset, end) of each element of a list-state value: ``[int32 LE size][value]``
    with ``delimiter`` (``,`` or nothing: :func:`streamwatch.state.rocksdb.merge_delimiter`)
    between two, as Spark's reader walks it. Without ``delimiter``: whichever of the two
    splits the whole value. Raises :class:`RowError` for bytes that are not that — a size
    past the end, a delimiter missing — so no element is guessed at."""
    if delimiter is None:
        for guess in (b"", b","):
            try:
                return split_values(b, guess)
            except RowError:
                continue
        raise RowError(f"{len(b)}-byte list-state entry does not split into size-prefixed values")
    out: list[tuple[int, int]] = []
    pos = 0
    while True:
        if pos + 4 > len(b):
            raise RowError(f"{len(b)}-byte list-state value: element at byte {pos} has no size")
        size = _I.unpack_from(b, pos)[0]
        if size <= 0 or pos + 4 + size > len(b):
            raise RowError(f"{len(b)}-byte list-state value: element at byte {pos} claims {size} bytes")
        out.append((pos + 4, pos + 4 + size))
        pos += 4 + size
        if pos == len(b):
            return out
        if b[pos:pos + len(delimiter)] != delimiter:
            raise RowError(f"{len(b)}-byte list-state value: byte {pos} is {b[pos]:#04x}, not the "
                           f"{delimiter.decode()!r} between elements")
        pos += len(delimiter)
