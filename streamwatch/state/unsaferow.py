"""Decode Spark's ``UnsafeRow`` (and the ``UnsafeArrayData``/``UnsafeMapData`` nested in it)
from bytes, without a JVM.

Layout (mirrors ``org.apache.spark.sql.catalyst.expressions.UnsafeRow``, little-endian):

- a null bitset of ``ceil(n / 64)`` 8-byte words (bit ``i`` set: field ``i`` is null);
- ``n`` 8-byte slots: fixed-width values in place (boolean/byte 1 byte, short 2, int/date/float
  4, long/double/timestamp 8, decimals of precision ≤ 18 as their unscaled long);
  variable-length values as ``offset << 32 | size`` with the offset from the row's start;
- the variable-length region: UTF-8 strings, binaries, big-endian two's-complement unscaled
  decimals (precision > 18), nested UnsafeRows (structs), arrays, maps, intervals.

``UnsafeArrayData``: element count (8 bytes), a null bitset of ``ceil(count / 64)`` words,
the elements (each ``element_size`` bytes, 8 for variable-length elements which hold
``offset << 32 | size`` from the array's start), padded to 8 bytes. ``UnsafeMapData``: the key
array's size in bytes (8), the key array, the value array.

Values decode to Python: ``int``, ``float``, ``bool``, ``str``, ``bytes``,
``datetime.datetime`` (timestamps, µs since the epoch, tz-aware UTC; ``timestamp_ntz`` naive),
``datetime.date``, ``decimal.Decimal``, ``dict`` (structs, field name → value; maps), ``list``.
Errors: :class:`RowError` (one line) for bytes that do not fit the schema.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from decimal import Context, Decimal
from typing import Any

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.state.types import DataType, StructType

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_NTZ = dt.datetime(1970, 1, 1)
EPOCH_DAY = dt.date(1970, 1, 1)
_DEC_CTX = Context(prec=60)
_Q = struct.Struct("<q")
_I = struct.Struct("<i")
_H = struct.Struct("<h")
_D = struct.Struct("<d")
_F = struct.Struct("<f")
_B = struct.Struct("<b")
_UQ = struct.Struct("<Q")

# A field reader: (buffer, start of the enclosing row/array, absolute slot offset) -> value
Reader = Callable[[bytes, int, int], Any]


class RowError(StreamwatchError, ValueError):
    """Bytes that cannot be an UnsafeRow of the schema (message: one line). Exit 4."""

    exit_code = ExitCode.UNREADABLE


def timestamp(us: int) -> dt.datetime:
    """µs since 1970-01-01 UTC → tz-aware ``datetime`` (UTC)."""
    return EPOCH + dt.timedelta(microseconds=us)


def bitset_words(n: int) -> int:
    """8-byte words of the null bitset of a row or array with ``n`` fields/elements."""
    return (n + 63) // 64


def _var(buf: bytes, base: int, slot: int) -> tuple[int, int]:
    word = _UQ.unpack_from(buf, slot)[0]
    off, size = base + (word >> 32), word & 0xFFFFFFFF
    if size and off + size > len(buf):
        raise RowError(f"variable-length field at {off} of {size} bytes runs past the row ({len(buf)} bytes)")
    return off, size


def _reader(t: DataType) -> Reader:
    """The reader of one value of type ``t`` stored at a slot (row) or element (array)."""
    n = t.name
    if n == "long":
        return lambda b, _base, s: _Q.unpack_from(b, s)[0]
    if n == "integer":
        return lambda b, _base, s: _I.unpack_from(b, s)[0]
    if n == "short":
        return lambda b, _base, s: _H.unpack_from(b, s)[0]
    if n == "byte":
        return lambda b, _base, s: _B.unpack_from(b, s)[0]
    if n == "boolean":
        return lambda b, _base, s: b[s] != 0
    if n == "double":
        return lambda b, _base, s: _D.unpack_from(b, s)[0]
    if n == "float":
        return lambda b, _base, s: _F.unpack_from(b, s)[0]
    if n == "timestamp":
        return lambda b, _base, s: EPOCH + dt.timedelta(microseconds=_Q.unpack_from(b, s)[0])
    if n == "timestamp_ntz":
        return lambda b, _base, s: EPOCH_NTZ + dt.timedelta(microseconds=_Q.unpack_from(b, s)[0])
    if n == "date":
        return lambda b, _base, s: EPOCH_DAY + dt.timedelta(days=_I.unpack_from(b, s)[0])
    if n == "null":
        return lambda b, _base, s: None
    if n == "decimal":
        scale = t.scale
        if t.precision <= 18:
            return lambda b, _base, s: Decimal(_Q.unpack_from(b, s)[0]).scaleb(-scale, _DEC_CTX)

        def big(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            return Decimal(int.from_bytes(b[off:off + size], "big", signed=True)).scaleb(-scale, _DEC_CTX)
        return big
    if n == "string":
        def string(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            return b[off:off + size].decode("utf-8", "replace")
        return string
    if n in ("binary", "variant"):
        def binary(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            return bytes(b[off:off + size])
        return binary
    if n == "calendarinterval":
        def interval(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            if size < 16:
                raise RowError("calendar interval shorter than 16 bytes")
            months, days = struct.unpack_from("<ii", b, off)
            return {"months": months, "days": days, "microseconds": _Q.unpack_from(b, off + 8)[0]}
        return interval
    if n == "struct":
        inner = compile_row(StructType(t.fields), as_dict=True)

        def nested(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            return inner(b, off, size)
        return nested
    if n == "array":
        arr = _array_decoder(t.element or DataType("null"))

        def array(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            return arr(b, off, size)
        return array
    if n == "map":
        keys = _array_decoder(t.key or DataType("null"))
        values = _array_decoder(t.value or DataType("null"))

        def mapping(b: bytes, base: int, s: int) -> Any:
            off, size = _var(b, base, s)
            if size < 8:
                raise RowError("map shorter than its 8-byte header")
            ksize = _Q.unpack_from(b, off)[0]
            if ksize < 0 or 8 + ksize > size:
                raise RowError(f"map key array of {ksize} bytes does not fit {size} bytes")
            ks = keys(b, off + 8, ksize)
            vs = values(b, off + 8 + ksize, size - 8 - ksize)
            if len(ks) != len(vs):
                raise RowError("map with different key and value counts")
            try:
                return dict(zip(ks, vs))
            except TypeError:  # unhashable keys (structs, arrays): pairs
                return [list(p) for p in zip(ks, vs)]
        return mapping
    raise RowError(f"cannot decode type {t.simple()}")


def _array_decoder(elem: DataType) -> Callable[[bytes, int, int], list[Any]]:
    read = _reader(elem)
    width = elem.element_size if elem.is_fixed else 8

    def decode(b: bytes, base: int, size: int) -> list[Any]:
        if size < 8:
            raise RowError("array shorter than its 8-byte header")
        count = _Q.unpack_from(b, base)[0]
        words = bitset_words(count)
        data = base + 8 + words * 8
        if count < 0 or data + count * width > base + size:
            raise RowError(f"array of {count} elements does not fit {size} bytes")
        nulls = int.from_bytes(b[base + 8:data], "little") if words else 0
        out = []
        for i in range(count):
            out.append(None if nulls >> i & 1 else read(b, base, data + i * width))
        return out
    return decode


_SLOT_CODES = {"long": "q", "timestamp": "q", "timestamp_ntz": "q", "integer": "i4x", "date": "i4x",
               "short": "h6x", "byte": "b7x", "boolean": "?7x", "double": "d", "float": "f4x", "null": "8x"}


def _post(t: DataType) -> Callable[[Any, bytes, int], Any] | None:
    """The conversion of one fixed-width slot's unpacked value (None: the value is final)."""
    n = t.name
    if n == "timestamp":
        return lambda v, _b, _base: EPOCH + dt.timedelta(microseconds=v)
    if n == "timestamp_ntz":
        return lambda v, _b, _base: EPOCH_NTZ + dt.timedelta(microseconds=v)
    if n == "date":
        return lambda v, _b, _base: EPOCH_DAY + dt.timedelta(days=v)
    if n == "decimal" and t.precision <= 18:
        scale = t.scale
        return lambda v, _b, _base: Decimal(v).scaleb(-scale, _DEC_CTX)
    return None


def compile_row(schema: StructType, *, as_dict: bool = False) -> Callable[[bytes, int, int], Any]:
    """A decoder ``(buffer, offset, size) -> tuple`` (or ``dict`` with ``as_dict``) of the
    UnsafeRow of ``schema`` that starts at ``offset`` of ``buffer`` and is ``size`` bytes
    long. All fixed-width slots are unpacked with one ``struct`` call; timestamps, dates,
    compact decimals and variable-length values are converted after. Raises
    :class:`RowError` when the bytes do not fit the schema."""
    names = schema.names
    n = len(schema.fields)
    words = bitset_words(n)
    fixed = (words + n) * 8
    codes = []
    post: list[tuple[int, Callable[..., Any], bool]] = []
    fixed_idx: list[int] = []
    for i, f in enumerate(schema.fields):
        t = f.type
        if t.name in _SLOT_CODES or (t.name == "decimal" and t.precision <= 18):
            codes.append(_SLOT_CODES.get(t.name, "q"))
            if t.name != "null":
                fixed_idx.append(i)
            conv = _post(t)
            if conv is not None:
                post.append((i, conv, False))  # type: ignore[arg-type]
        else:
            codes.append("8x")
            post.append((i, _reader(t), True))
    slots_struct = struct.Struct("<" + "".join(codes))
    var_idx = [i for i, _conv, is_var in post if is_var]

    def decode(b: bytes, base: int, size: int) -> Any:
        if size < fixed or base + size > len(b):
            raise RowError(f"row of {size} bytes is shorter than the {fixed} bytes {n} fields need")
        nulls = int.from_bytes(b[base:base + words * 8], "little") if words else 0
        slots = base + words * 8
        # Spark writes variable-length values after the fixed-width slots, inside the row: an
        # offset into the slots or past the row's end means the bytes are not a row of this
        # schema (e.g. a row with fewer fields read with more), never a value to show
        for i in var_idx:
            if not nulls >> i & 1:
                word = _UQ.unpack_from(b, slots + 8 * i)[0]
                off, length = word >> 32, word & 0xFFFFFFFF
                if off < fixed:
                    raise RowError(f"field {names[i]!r}: variable-length value at {off} points into the "
                                   f"{fixed} bytes of fixed-width slots (not a row of this schema)")
                if off + length > size:
                    raise RowError(f"variable-length field at {base + off} of {length} bytes runs past the row "
                                   f"({size} bytes)")
        try:
            raw = slots_struct.unpack_from(b, slots)
            if len(raw) != n or post or nulls:
                if len(raw) == n:
                    vals = list(raw)
                else:  # variable-length (and null-type) slots are padding in the struct
                    vals = [None] * n
                    for i, v in zip(fixed_idx, raw):
                        vals[i] = v
                for i, conv, is_var in post:
                    if nulls >> i & 1:
                        continue
                    vals[i] = conv(b, base, slots + 8 * i) if is_var else conv(vals[i], b, base)
                if nulls:
                    for i in range(n):
                        if nulls >> i & 1:
                            vals[i] = None
                out = tuple(vals)
            else:
                out = raw
        except (struct.error, OverflowError, IndexError, ValueError) as e:
            if isinstance(e, RowError):
                raise
            raise RowError(f"row does not fit its schema ({e})") from None
        return dict(zip(names, out)) if as_dict else out
    return decode


def decode_row(schema: StructType, data: bytes) -> tuple[Any, ...]:
    """One UnsafeRow of ``schema`` from ``data`` (its exact bytes). Raises :class:`RowError`."""
    return compile_row(schema)(data, 0, len(data))
