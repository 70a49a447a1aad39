"""The state decoders without a JVM, on bytes laid out as Spark writes them: UnsafeRows of
every supported type (built here by a tiny test-side writer), schema files v1–v3, and
HDFS/changelog record streams in lz4-java framing."""

from __future__ import annotations

import datetime as dt
import io
import struct
from decimal import Decimal

import orjson
import pytest

from streamwatch.state.records import StateFileError, read_records
from streamwatch.state.schema import parse_schema_file
from streamwatch.state.types import SchemaError, parse_struct
from streamwatch.state.unsaferow import RowError, decode_row
from tests.helpers.spark_codecs import lz4java

UTC = dt.UTC


def pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


def unsafe(values: list[tuple[str, object]]) -> bytes:
    """An UnsafeRow: ``("fixed", 8 bytes)`` in the slot, ``("var", bytes)`` in the variable
    region, ``(…, None)`` null."""
    n = len(values)
    words = (n + 63) // 64
    head = 8 * words + 8 * n
    nulls, slots, var = 0, b"", b""
    for i, (kind, v) in enumerate(values):
        if v is None:
            nulls |= 1 << i
            slots += b"\0" * 8
        elif kind == "fixed":
            slots += v  # type: ignore[operator]
        else:
            slots += struct.pack("<Q", (head + len(var)) << 32 | len(v))  # type: ignore[arg-type]
            var += pad(v)  # type: ignore[arg-type]
    return nulls.to_bytes(8 * words, "little") + slots + var


def array(elems: list[bytes | None], width: int, var: bool = False) -> bytes:
    n = len(elems)
    words = (n + 63) // 64
    head = 8 + 8 * words + (8 * n if var else len(pad(b"\0" * (width * n))))
    nulls, body, tail = 0, b"", b""
    for i, e in enumerate(elems):
        if e is None:
            nulls |= 1 << i
            body += b"\0" * (8 if var else width)
        elif var:
            body += struct.pack("<Q", (head + len(tail)) << 32 | len(e))
            tail += pad(e)
        else:
            body += e
    return struct.pack("<q", n) + nulls.to_bytes(8 * words, "little") + pad(body) + tail


def q(v: int) -> bytes:
    return struct.pack("<q", v)


SCHEMA = parse_struct({"type": "struct", "fields": [
    {"name": n, "type": t, "nullable": True} for n, t in [
        ("l", "long"), ("i", "integer"), ("s", "short"), ("b", "byte"), ("t", "boolean"),
        ("d", "double"), ("f", "float"), ("day", "date"), ("ts", "timestamp"), ("small", "decimal(10,2)"),
        ("big", "decimal(38,6)"), ("str", "string"), ("bin", "binary"), ("none", "string"),
        ("w", {"type": "struct", "fields": [{"name": "start", "type": "timestamp", "nullable": True},
                                            {"name": "end", "type": "timestamp", "nullable": True}]}),
        ("ints", {"type": "array", "elementType": "integer", "containsNull": True}),
        ("strs", {"type": "array", "elementType": "string", "containsNull": True}),
        ("m", {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True}),
    ]]})


def test_every_type_decodes():
    ts = 1_767_225_650_123_456
    big = -12345678901234567890123456
    keys = array([b"a", b"bc"], 8, var=True)
    vals = array([q(1), None], 8)
    data = unsafe([
        ("fixed", q(-7)), ("fixed", struct.pack("<i", 42) + b"\0" * 4), ("fixed", struct.pack("<h", -3) + b"\0" * 6),
        ("fixed", struct.pack("<b", 5) + b"\0" * 7), ("fixed", b"\1" + b"\0" * 7), ("fixed", struct.pack("<d", 2.5)),
        ("fixed", struct.pack("<f", 0.25) + b"\0" * 4), ("fixed", struct.pack("<i", 20454) + b"\0" * 4),
        ("fixed", q(ts)), ("fixed", q(12345)), ("var", big.to_bytes(12, "big", signed=True)),
        ("var", "naïve".encode()), ("var", b"\x00\xff"), ("var", None),
        ("var", unsafe([("fixed", q(ts)), ("fixed", q(ts + 10_000_000))])),
        ("var", array([struct.pack("<i", 1), None, struct.pack("<i", -1)], 4)),
        ("var", array([b"x", None], 8, var=True)),
        ("var", struct.pack("<q", len(keys)) + keys + vals),
    ])
    row = decode_row(SCHEMA, data)
    t = dt.datetime(2026, 1, 1, 0, 0, 50, 123456, tzinfo=UTC)
    assert row == (-7, 42, -3, 5, True, 2.5, 0.25, dt.date(2026, 1, 1), t, Decimal("123.45"),
                   Decimal(big).scaleb(-6), "naïve", b"\x00\xff", None,
                   {"start": t, "end": t + dt.timedelta(seconds=10)}, [1, None, -1], ["x", None], {"a": 1, "bc": None})


def test_rows_that_do_not_fit_raise_row_error():
    data = unsafe([("fixed", q(1)), ("var", b"hello")])
    schema = parse_struct({"type": "struct", "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"}]})
    assert decode_row(schema, data) == (1, "hello")
    with pytest.raises(RowError):
        decode_row(schema, data[:12])
    with pytest.raises(RowError):
        decode_row(schema, data[:20])  # the string's bytes are gone
    with pytest.raises(SchemaError):
        parse_struct({"type": "struct", "fields": [{"name": "x", "type": "quaternion"}]})


def _utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


KEY = {"type": "struct", "fields": [{"name": "k", "type": "string", "nullable": True}]}
VALUE = {"type": "struct", "fields": [{"name": "n", "type": "long", "nullable": False}]}


def test_schema_files_v1_v2_v3():
    k, v = orjson.dumps(KEY).decode(), orjson.dumps(VALUE).decode()
    (v1,) = parse_schema_file(_utf("v1") + _utf(k) + _utf(v))
    (v2,) = parse_schema_file(_utf("v2") + struct.pack(">i", 2) + _utf(k[:10]) + _utf(k[10:]) + struct.pack(">i", 1) + _utf(v))
    assert v1.key == v2.key and v1.value == v2.value and v1.key.names == ("k",)
    cf = {"columnFamilyName": "countState", "keySchema": k, "valueSchema": v,
          "keyStateEncoderSpec": {"keyStateEncoderType": "PrefixKeyScanStateEncoderSpec", "numColsPrefixKey": 1}}
    (v3,) = parse_schema_file(b"v3\n" + orjson.dumps(cf))
    assert v3.name == "countState" and v3.encoder == "prefixScan" and v3.prefix_cols == 1
    for bad in (b"", _utf("v7") + _utf(k), _utf("v1") + _utf(k), b"v3\n{not json"):
        with pytest.raises(SchemaError):
            parse_schema_file(bad)


def _rec(key: bytes, value: bytes | None) -> bytes:
    out = struct.pack(">i", len(key)) + key
    return out + (struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value)


def test_delta_and_changelog_records():
    body = _rec(b"k1", b"v1") + _rec(b"k2", None) + struct.pack(">i", -1)
    recs = list(read_records(io.BytesIO(lz4java(body, block=7)), "lz4", "1.delta"))
    assert [(r.op, r.key, r.value) for r in recs] == [("put", b"k1", b"v1"), ("delete", b"k2", None)]
    v4 = (_utf("v4") + _utf('[{"version":1,"checkpointUniqueId":"u"}]') + b"\x01" + _rec(b"a", b"b")
          + b"\x11" + _rec(b"a", b"c") + b"\x10" + _rec(b"a", None) + b"\x00")
    recs = list(read_records(io.BytesIO(lz4java(v4)), "lz4", "2_u.changelog", changelog=True))
    assert [r.op for r in recs] == ["put", "merge", "delete"]
    with pytest.raises(StateFileError, match="truncated"):
        list(read_records(io.BytesIO(lz4java(body[:-6])), "lz4", "1.delta"))
    with pytest.raises(StateFileError, match="snappy"):
        list(read_records(io.BytesIO(body), "snappy", "1.delta"))
