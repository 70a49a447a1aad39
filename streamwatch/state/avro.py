"""Avro-encoded state rows (``spark.sql.streaming.stateStore.encodingFormat=avro``), decoded
without a JVM; the Avro binary decoding itself is fastavro's (``schemaless_reader``).

Spark 4.2 honours ``encodingFormat=avro`` for transformWithState operators only (other
operators refuse to start with it). The writer schema mirrors
``SchemaConverters.toAvroTypeWithDefaults`` of the state schema file's Spark type: a
``StructType`` is a record whose every field is a union ``["null", T]`` with default null
(nested structs likewise); ``long``/``int``/``short``/``byte`` → long/int, ``timestamp`` →
long (µs since the epoch), ``date`` → int (days), ``decimal(p,s)`` → fixed of the fewest
bytes holding ``p`` digits (big-endian two's-complement unscaled value), ``binary`` → bytes,
arrays → array of ``["null", T]``, maps → map of ``["null", T]`` (string keys).

The bytes around the Avro body (version byte, 2-byte schema id, column family prefix) are
:mod:`streamwatch.state.tws`'s business. Values decode to the same Python values as
:mod:`streamwatch.state.unsaferow`. Errors: :class:`~streamwatch.state.unsaferow.RowError`.
"""

from __future__ import annotations

import datetime as dt
import io
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from streamwatch.state.types import DataType, StructType
from streamwatch.state.unsaferow import EPOCH, EPOCH_DAY, EPOCH_NTZ, RowError

_INTS = {"integer", "short", "byte", "date"}


def _fixed_size(precision: int) -> int:
    """Bytes Spark's ``minBytesForPrecision`` gives a decimal of ``precision`` digits."""
    n = 1
    while 2 ** (8 * n - 1) < 10**precision:
        n += 1
    return n


class _Names:
    def __init__(self) -> None:
        self.n = 0

    def next(self, kind: str) -> str:
        self.n += 1
        return f"{kind}{self.n}"


def _avro_type(t: DataType, names: _Names) -> Any:
    n = t.name
    if n == "struct":
        return _record(StructType(t.fields), names)
    if n == "array":
        return {"type": "array", "items": ["null", _avro_type(t.element or DataType("null"), names)]}
    if n == "map":
        return {"type": "map", "values": ["null", _avro_type(t.value or DataType("null"), names)]}
    if n == "decimal":
        return {"type": "fixed", "name": names.next("decimal"), "size": _fixed_size(t.precision)}
    if n in _INTS:
        return "int"
    if n in ("long", "timestamp", "timestamp_ntz"):
        return "long"
    if n in ("string", "double", "float", "boolean", "null"):
        return n
    if n == "binary":
        return "bytes"
    raise RowError(f"no Avro form for type {t.simple()}")


def _record(schema: StructType, names: _Names) -> dict[str, Any]:
    return {"type": "record", "name": names.next("record"),
            "fields": [{"name": f"f{i}", "type": ["null", _avro_type(f.type, names)], "default": None}
                       for i, f in enumerate(schema.fields)]}


def avro_schema(schema: StructType) -> dict[str, Any]:
    """The Avro writer schema (a record, fields renamed ``f0…`` to stay valid Avro names) of
    a state row of ``schema``. Raises :class:`RowError` for a type with no Avro form."""
    return _record(schema, _Names())


def _converter(t: DataType) -> Callable[[Any], Any] | None:
    n = t.name
    if n == "timestamp":
        return lambda v: EPOCH + dt.timedelta(microseconds=v)
    if n == "timestamp_ntz":
        return lambda v: EPOCH_NTZ + dt.timedelta(microseconds=v)
    if n == "date":
        return lambda v: EPOCH_DAY + dt.timedelta(days=v)
    if n == "decimal":
        scale = t.scale
        return lambda v: Decimal(int.from_bytes(v, "big", signed=True)).scaleb(-scale)
    if n == "struct":
        conv = _struct_converter(StructType(t.fields))
        return lambda v: dict(zip((f.name for f in t.fields), conv(v), strict=True))
    if n == "array":
        element = _converter(t.element or DataType("null"))
        return (lambda v: [None if x is None else element(x) for x in v]) if element else list
    if n == "map":
        value = _converter(t.value or DataType("null"))
        return (lambda v: {k: None if x is None else value(x) for k, x in v.items()}) if value else dict
    return None


def _struct_converter(schema: StructType) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    convs = [(f"f{i}", _converter(f.type)) for i, f in enumerate(schema.fields)]

    def convert(rec: dict[str, Any]) -> tuple[Any, ...]:
        out = []
        for name, conv in convs:
            v = rec.get(name)
            out.append(v if v is None or conv is None else conv(v))
        return tuple(out)
    return convert


def compile_avro(schema: StructType) -> Callable[[bytes, int], tuple[Any, ...]]:
    """A decoder ``(buffer, offset) -> tuple`` (schema order) of the Avro binary record of
    ``schema`` that starts at ``offset`` and runs to the buffer's end. Raises
    :class:`RowError` when the bytes are not such a record (or trail unread bytes)."""
    from fastavro import parse_schema, schemaless_reader

    parsed = parse_schema(avro_schema(schema))
    convert = _struct_converter(schema)

    def decode(b: bytes, offset: int) -> tuple[Any, ...]:
        buf = io.BytesIO(b)
        buf.seek(offset)
        try:
            rec = schemaless_reader(buf, parsed, None)
        except Exception as e:  # noqa: BLE001 - fastavro raises EOFError, ValueError, IndexError…
            raise RowError(f"not an Avro record of the state schema ({type(e).__name__}: {e})") from None
        if buf.tell() != len(b):
            raise RowError(f"Avro record ends at byte {buf.tell()} of {len(b)}")
        if not isinstance(rec, dict):
            raise RowError("Avro body is not a record")
        return convert(rec)
    return decode
