"""Encode a key row as Spark's ``UnsafeRow`` bytes, without a JVM: what a state store holds as
the key of that row, so that one key can be looked up instead of every row decoded.

Mirrors ``org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter`` as an
``UnsafeProjection`` drives it (layout: :mod:`streamwatch.state.unsaferow`): a null bitset of
``ceil(n / 64)`` 8-byte words, one 8-byte slot per field — fixed-width values written into a
zeroed slot, little-endian; a null field sets its bit and leaves its slot zero — then the
variable-length region in field order, each value zero-padded to 8 bytes and its slot holding
``offset << 32 | size`` (offset from the start of the row being written). Nested structs are
rows of their own written into the variable-length region.

Types: boolean, byte, short, int, long, float, double, date, timestamp, timestamp_ntz,
decimal of precision ≤ 18, string, binary and structs of those (a window
``struct<start,end>``). Errors: :class:`EncodeError` (one line).
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.state.types import DataType, StructType
from streamwatch.state.unsaferow import bitset_words

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1)
_FIXED_FMT = {"boolean": "<?", "byte": "<b", "short": "<h", "integer": "<i", "date": "<i", "long": "<q",
              "timestamp": "<q", "timestamp_ntz": "<q", "float": "<f", "double": "<d"}


class EncodeError(StreamwatchError, ValueError):
    """A value that cannot be written as the field's type (message: one line). Exit 2: the
    key given does not fit the key schema."""

    exit_code = ExitCode.USAGE


def micros(v: dt.datetime, ntz: bool = False) -> int:
    """µs since the epoch of ``v`` (naive values are UTC, or local wall time for ``ntz``)."""
    if ntz:
        d = v.replace(tzinfo=None) - _EPOCH_NTZ
    else:
        d = (v if v.tzinfo is not None else v.replace(tzinfo=dt.UTC)) - _EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


def _fixed(t: DataType, v: Any) -> bytes:
    n = t.name
    try:
        if n in ("timestamp", "timestamp_ntz"):
            v = v if isinstance(v, int) else micros(v, n == "timestamp_ntz")
        elif n == "date":
            v = v if isinstance(v, int) else (v - _EPOCH_DAY).days
        elif n == "decimal":
            return struct.pack("<q", int(Decimal(v).scaleb(t.scale)))
        raw = struct.pack(_FIXED_FMT[n], v)
    except (struct.error, TypeError, KeyError, AttributeError) as e:
        raise EncodeError(f"{v!r} is not a {t.simple()} ({e})") from None
    return raw + bytes(8 - len(raw))


def _variable(t: DataType, v: Any) -> bytes:
    if t.name == "string":
        if not isinstance(v, str):
            raise EncodeError(f"{v!r} is not a string")
        return v.encode("utf-8")
    if t.name == "binary":
        if not isinstance(v, (bytes, bytearray)):
            raise EncodeError(f"{v!r} is not binary")
        return bytes(v)
    if t.name == "struct":
        if not isinstance(v, dict):
            raise EncodeError(f"{v!r} is not a struct")
        return encode_row(StructType(t.fields), tuple(v.get(f.name) for f in t.fields))
    raise EncodeError(f"a {t.simple()} key column is not encoded by streamwatch")


def encode_row(schema: StructType, values: tuple[Any, ...]) -> bytes:
    """The UnsafeRow bytes of ``values`` (in ``schema`` order; None is null; timestamps as
    ``datetime`` or µs, dates as ``date`` or days, structs as dicts by field name). Raises
    :class:`EncodeError` for a value that does not fit its field's type."""
    n = len(schema.fields)
    if len(values) != n:
        raise EncodeError(f"{len(values)} values for a row of {n} fields")
    head = bitset_words(n) * 8
    fixed = bytearray(head + 8 * n)
    var = bytearray()
    for i, (f, v) in enumerate(zip(schema.fields, values, strict=True)):
        slot = head + 8 * i
        if v is None:
            fixed[(i // 64) * 8:(i // 64) * 8 + 8] = struct.pack(
                "<Q", struct.unpack_from("<Q", fixed, (i // 64) * 8)[0] | (1 << (i % 64)))
            continue
        if f.type.is_fixed:
            fixed[slot:slot + 8] = _fixed(f.type, v)
            continue
        if f.type.name == "decimal":
            raise EncodeError(f"a {f.type.simple()} key column is not encoded by streamwatch")
        data = _variable(f.type, v)
        offset = len(fixed) + len(var)
        fixed[slot:slot + 8] = struct.pack("<Q", offset << 32 | len(data))
        var += data + bytes(-len(data) % 8)
    return bytes(fixed + var)
