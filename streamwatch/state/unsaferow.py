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
from dataclasses import dataclass
from decimal import Context, Decimal
from typing import Any, Literal, overload

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
#: A row decoder: (buffer, offset of the row, its size in bytes) -> values in schema order
RowFn = Callable[[bytes, int, int], tuple[Any, ...]]
#: The same -> field name -> value
DictRowFn = Callable[[bytes, int, int], dict[str, Any]]


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


#: readers of the fixed-width types, whose value is the slot (or element) itself
_FIXED_READERS: dict[str, Reader] = {
    "long": lambda b, _base, s: _Q.unpack_from(b, s)[0],
    "integer": lambda b, _base, s: _I.unpack_from(b, s)[0],
    "short": lambda b, _base, s: _H.unpack_from(b, s)[0],
    "byte": lambda b, _base, s: _B.unpack_from(b, s)[0],
    "boolean": lambda b, _base, s: b[s] != 0,
    "double": lambda b, _base, s: _D.unpack_from(b, s)[0],
    "float": lambda b, _base, s: _F.unpack_from(b, s)[0],
    "timestamp": lambda b, _base, s: EPOCH + dt.timedelta(microseconds=_Q.unpack_from(b, s)[0]),
    "timestamp_ntz": lambda b, _base, s: EPOCH_NTZ + dt.timedelta(microseconds=_Q.unpack_from(b, s)[0]),
    "date": lambda b, _base, s: EPOCH_DAY + dt.timedelta(days=_I.unpack_from(b, s)[0]),
    "null": lambda b, _base, s: None,
}


def _reader(t: DataType) -> Reader:
    """The reader of one value of type ``t`` stored at a slot (row) or element (array).
    Raises :class:`RowError` for a type it does not decode."""
    fixed = _FIXED_READERS.get(t.name)
    if fixed is not None:
        return fixed
    make = _VAR_READERS.get(t.name)
    if make is None:
        raise RowError(f"cannot decode type {t.simple()}")
    return make(t)


def _decimal_reader(t: DataType) -> Reader:
    """Precision ≤ 18: the unscaled long in the slot; above: big-endian two's-complement bytes."""
    scale = t.scale
    if t.precision <= 18:
        return lambda b, _base, s: Decimal(_Q.unpack_from(b, s)[0]).scaleb(-scale, _DEC_CTX)

    def big(b: bytes, base: int, s: int) -> Decimal:
        off, size = _var(b, base, s)
        return Decimal(int.from_bytes(b[off:off + size], "big", signed=True)).scaleb(-scale, _DEC_CTX)
    return big


def _string_reader(_t: DataType) -> Reader:
    def string(b: bytes, base: int, s: int) -> str:
        off, size = _var(b, base, s)
        return b[off:off + size].decode("utf-8", "replace")
    return string


def _binary_reader(_t: DataType) -> Reader:
    def binary(b: bytes, base: int, s: int) -> bytes:
        off, size = _var(b, base, s)
        return bytes(b[off:off + size])
    return binary


def _interval_reader(_t: DataType) -> Reader:
    def interval(b: bytes, base: int, s: int) -> dict[str, int]:
        off, size = _var(b, base, s)
        if size < 16:
            raise RowError("calendar interval shorter than 16 bytes")
        months, days = struct.unpack_from("<ii", b, off)
        return {"months": months, "days": days, "microseconds": _Q.unpack_from(b, off + 8)[0]}
    return interval


def _struct_reader(t: DataType) -> Reader:
    schema = StructType(t.fields)
    inner = compile_row(schema)
    names = schema.names

    def nested(b: bytes, base: int, s: int) -> dict[str, Any]:
        off, size = _var(b, base, s)
        # one value per field by construction; strict= would cost ~5% of a row's decoding
        return dict(zip(names, inner(b, off, size)))  # noqa: B905
    return nested


def _array_reader(t: DataType) -> Reader:
    arr = _array_decoder(t.element or DataType("null"))

    def array(b: bytes, base: int, s: int) -> list[Any]:
        off, size = _var(b, base, s)
        return arr(b, off, size)
    return array


def _map_reader(t: DataType) -> Reader:
    keys = _array_decoder(t.key or DataType("null"))
    values = _array_decoder(t.value or DataType("null"))

    def mapping(b: bytes, base: int, s: int) -> dict[Any, Any] | list[list[Any]]:
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
        # counts checked equal above (strict= would check again, per map value)
        try:
            return dict(zip(ks, vs))  # noqa: B905
        except TypeError:  # unhashable keys (structs, arrays): pairs
            return [list(p) for p in zip(ks, vs)]  # noqa: B905
    return mapping


#: reader factories of the types stored in the variable-length region (and decimals, whose
#: compact form sits in the slot)
_VAR_READERS: dict[str, Callable[[DataType], Reader]] = {
    "decimal": _decimal_reader, "string": _string_reader, "binary": _binary_reader, "variant": _binary_reader,
    "calendarinterval": _interval_reader, "struct": _struct_reader, "array": _array_reader, "map": _map_reader,
}


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


@dataclass(frozen=True, slots=True)
class _SlotPlan:
    """How a row decoder reads the slots of a schema's rows: ``slots`` unpacks every
    fixed-width slot in one call (others are padding); ``fixed_idx`` the fields it yields, in
    order; ``post`` (field, conversion, variable-length?) for the fields converted after it
    (a variable-length field's reader, or a fixed-width value's conversion); ``var_idx`` the
    variable-length fields."""

    slots: struct.Struct
    fixed_idx: list[int]
    post: list[tuple[int, Callable[..., Any], bool]]
    var_idx: list[int]


def _slot_plan(schema: StructType) -> _SlotPlan:
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
                post.append((i, conv, False))
        else:
            codes.append("8x")
            post.append((i, _reader(t), True))
    return _SlotPlan(struct.Struct("<" + "".join(codes)), fixed_idx, post, [i for i, _conv, is_var in post if is_var])


@overload
def compile_row(schema: StructType) -> RowFn: ...


@overload
def compile_row(schema: StructType, *, as_dict: Literal[True]) -> DictRowFn: ...


def compile_row(schema: StructType, *, as_dict: bool = False) -> RowFn | DictRowFn:
    """A decoder ``(buffer, offset, size) -> tuple`` (or ``dict`` with ``as_dict``: field name
    → value) of the UnsafeRow of ``schema`` that starts at ``offset`` of ``buffer`` and is
    ``size`` bytes long. All fixed-width slots are unpacked with one ``struct`` call;
    timestamps, dates, compact decimals and variable-length values are converted after.
    Raises :class:`RowError` for a type it does not decode, and (the decoder) when the bytes
    do not fit the schema."""
    decode = _tuple_row(schema)
    if not as_dict:
        return decode
    names = schema.names

    def as_mapping(b: bytes, base: int, size: int) -> dict[str, Any]:
        return dict(zip(names, decode(b, base, size), strict=True))
    return as_mapping


def _tuple_row(schema: StructType) -> RowFn:
    """:func:`compile_row`'s decoder of tuples."""
    names = schema.names
    n = len(schema.fields)
    words = bitset_words(n)
    fixed = (words + n) * 8
    plan = _slot_plan(schema)
    slots_struct, fixed_idx, post, var_idx = plan.slots, plan.fixed_idx, plan.post, plan.var_idx

    def decode(b: bytes, base: int, size: int) -> tuple[Any, ...]:
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
            raw: tuple[Any, ...] = slots_struct.unpack_from(b, slots)
            if len(raw) != n or post or nulls:
                if len(raw) == n:
                    vals = list(raw)
                else:  # variable-length (and null-type) slots are padding in the struct
                    vals = [None] * n
                    # one struct code per fixed field: equal lengths by construction, and
                    # strict= would cost ~5% of a row's decoding
                    for i, v in zip(fixed_idx, raw):  # noqa: B905
                        vals[i] = v
                for i, conv, is_var in post:
                    if nulls >> i & 1:
                        continue
                    vals[i] = conv(b, base, slots + 8 * i) if is_var else conv(vals[i], b, base)
                if nulls:
                    for i in range(n):
                        if nulls >> i & 1:
                            vals[i] = None
                return tuple(vals)
            return raw
        except (struct.error, OverflowError, IndexError, ValueError) as e:
            if isinstance(e, RowError):
                raise
            raise RowError(f"row does not fit its schema ({e})") from None
    return decode


def decode_row(schema: StructType, data: bytes) -> tuple[Any, ...]:
    """One UnsafeRow of ``schema`` from ``data`` (its exact bytes). Raises :class:`RowError`."""
    return compile_row(schema)(data, 0, len(data))
