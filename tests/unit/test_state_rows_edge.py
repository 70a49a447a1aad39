"""The state row decoders on unusual types and broken bytes, without a JVM: UnsafeRows with
negative/big decimals, ``timestamp_ntz``, structs in arrays, maps with struct keys, intervals,
more than 64 fields; Avro state rows (unions with null, fixed decimals, nested records,
arrays/maps of nullable values) written by fastavro from the writer schema Spark's
``SchemaConverters`` gives; transformWithState keys (prefix-scan, range-scan ordering bytes)
and list-state value splitting. Every broken input raises :class:`RowError` with one line."""

from __future__ import annotations

import datetime as dt
import io
import struct
from decimal import Decimal

import pytest

from streamwatch.state.avro import avro_schema, compile_avro
from streamwatch.state.schema import ColumnFamilySchema
from streamwatch.state.tws import key_decoder, split_values, value_decoder
from streamwatch.state.types import DataType, Field, StructType, parse_struct
from streamwatch.state.unsaferow import RowError, compile_row, decode_row, timestamp
from tests.unit.test_state_decoding import array, q, unsafe

UTC = dt.UTC


def schema(*fields: tuple[str, object]) -> StructType:
    return parse_struct({"type": "struct", "fields": [{"name": n, "type": t} for n, t in fields]})


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = str(e.value)
    assert msg and "\n" not in msg
    return msg


# --- UnsafeRow -----------------------------------------------------------------------------

def test_unsaferow_decimals_ntz_and_intervals():
    s = schema(("small", "decimal(18,4)"), ("big", "decimal(38,10)"), ("ntz", "timestamp_ntz"),
               ("ts", "timestamp"), ("iv", "calendarinterval"), ("v", "variant"), ("n", "void"))
    big = -(10**37) + 1
    iv = struct.pack("<ii", 14, -3) + q(1_500_000)
    row = decode_row(s, unsafe([("fixed", q(-123456789)), ("var", big.to_bytes(16, "big", signed=True)),
                                ("fixed", q(-1)), ("fixed", q(0)), ("var", iv), ("var", b"\x0c\x01"),
                                ("fixed", q(0))]))
    assert row[0] == Decimal("-12345.6789")
    assert row[1] == Decimal("-999999999999999999999999999.9999999999")  # all 38 digits kept
    assert row[2] == dt.datetime(1969, 12, 31, 23, 59, 59, 999999) and row[2].tzinfo is None
    assert row[3] == timestamp(0) == dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert row[4] == {"months": 14, "days": -3, "microseconds": 1_500_000}
    assert row[5:] == (b"\x0c\x01", None)


def test_unsaferow_nested_structs_arrays_and_struct_keyed_maps():
    point = {"type": "struct", "fields": [{"name": "x", "type": "integer"}, {"name": "tag", "type": "string"}]}
    s = schema(("outer", {"type": "struct", "fields": [{"name": "p", "type": point}, {"name": "d", "type": "date"}]}),
               ("pts", {"type": "array", "elementType": point}),
               ("by_point", {"type": "map", "keyType": point, "valueType": "double"}),
               ("flags", {"type": "array", "elementType": "boolean"}),
               ("decs", {"type": "array", "elementType": "decimal(5,2)"}))
    p1 = unsafe([("fixed", struct.pack("<i", 3) + bytes(4)), ("var", b"a")])
    p2 = unsafe([("fixed", struct.pack("<i", -4) + bytes(4)), ("var", None)])
    outer = unsafe([("var", p1), ("fixed", struct.pack("<i", 1) + bytes(4))])
    pts = array([p1, None, p2], 8, var=True)
    keys = array([p1, p2], 8, var=True)
    vals = array([struct.pack("<d", 0.5), None], 8)
    flags = array([b"\x01", b"\x00", None], 1)
    decs = array([q(-150), q(7)], 8)
    row = decode_row(s, unsafe([("var", outer), ("var", pts), ("var", q(len(keys)) + keys + vals),
                                ("var", flags), ("var", decs)]))
    a, b = {"x": 3, "tag": "a"}, {"x": -4, "tag": None}
    assert row[0] == {"p": a, "d": dt.date(1970, 1, 2)}
    assert row[1] == [a, None, b]
    assert row[2] == [[a, 0.5], [b, None]]  # struct keys are unhashable: key/value pairs
    assert row[3] == [True, False, None]
    assert row[4] == [Decimal("-1.50"), Decimal("0.07")]


def test_unsaferow_more_than_64_fields_uses_two_bitset_words():
    s = StructType(tuple(Field(f"c{i}", DataType("long")) for i in range(70)))
    vals: list[tuple[str, object]] = [("fixed", q(i)) for i in range(70)]
    vals[3] = ("fixed", None)
    vals[66] = ("fixed", None)
    row = decode_row(s, unsafe(vals))
    assert len(row) == 70 and row[3] is None and row[66] is None and row[69] == 69 and row[65] == 65
    assert compile_row(s, as_dict=True)(unsafe(vals), 0, len(unsafe(vals)))["c69"] == 69


def test_unsaferow_rows_with_nothing_variable_are_returned_as_unpacked():
    s = schema(("a", "long"), ("b", "double"))
    assert decode_row(s, unsafe([("fixed", q(5)), ("fixed", struct.pack("<d", 1.25))])) == (5, 1.25)


def _map_bytes(body: bytes) -> bytes:
    return unsafe([("var", body)])


MAP = schema(("m", {"type": "map", "keyType": "string", "valueType": "long"}))


@pytest.mark.parametrize(("data", "message"), [
    (_map_bytes(b"\x01\x02"), "map shorter than its 8-byte header"),
    (_map_bytes(q(4096)), "map key array of 4096 bytes does not fit 8 bytes"),
    (_map_bytes(q(-8) + bytes(8)), "map key array of -8 bytes does not fit 16 bytes"),
    (_map_bytes(q(32) + array([b"a"], 8, var=True) + array([q(1), q(2)], 8)),
     "map with different key and value counts"),
    (_map_bytes(q(8) + q(1) + q(0)), "array of 1 elements does not fit 8 bytes"),
    (_map_bytes(q(4) + b"abcd" + bytes(4)), "array shorter than its 8-byte header"),
])
def test_broken_maps_and_arrays(data, message):
    with pytest.raises(RowError) as e:
        decode_row(MAP, data)
    assert one_line(e) == message


def test_broken_variable_length_fields():
    with pytest.raises(RowError) as e:
        decode_row(schema(("iv", "calendarinterval")), unsafe([("var", b"\x01" * 8)]))
    assert one_line(e) == "calendar interval shorter than 16 bytes"
    good = unsafe([("var", b"hello world")])
    bad = good[:8] + struct.pack("<Q", (16 << 32) | 4000) + good[16:]
    with pytest.raises(RowError) as e:
        decode_row(schema(("s", "string")), bad)
    assert one_line(e).startswith("variable-length field at 16 of 4000 bytes runs past the row")
    with pytest.raises(RowError) as e:
        decode_row(schema(("a", "long"), ("b", "long")), q(0) + q(1))
    assert one_line(e) == "row of 16 bytes is shorter than the 24 bytes 2 fields need"


def test_type_without_a_decoder():
    with pytest.raises(RowError) as e:
        compile_row(StructType((Field("x", DataType("geometry")),)))
    assert one_line(e) == "cannot decode type geometry"


# --- Avro ----------------------------------------------------------------------------------

AVRO = schema(
    ("k", "string"), ("n", "long"), ("i", "integer"), ("day", "date"), ("ts", "timestamp"),
    ("ntz", "timestamp_ntz"), ("dec", "decimal(20,3)"), ("small", "decimal(3,1)"), ("raw", "binary"),
    ("ok", "boolean"), ("f", "float"),
    ("w", {"type": "struct", "fields": [{"name": "start", "type": "timestamp"},
                                        {"name": "inner", "type": {"type": "struct", "fields": [
                                            {"name": "d", "type": "double"}]}}]}),
    ("xs", {"type": "array", "elementType": "timestamp"}),
    ("names", {"type": "array", "elementType": "string"}),
    ("m", {"type": "map", "keyType": "string", "valueType": "decimal(5,2)"}),
    ("tags", {"type": "map", "keyType": "string", "valueType": "string"}),
)


def _avro(sch: StructType, rec: dict) -> bytes:
    from fastavro import parse_schema, schemaless_writer

    out = io.BytesIO()
    schemaless_writer(out, parse_schema(avro_schema(sch)), rec)
    return out.getvalue()


def test_avro_writer_schema_mirrors_spark():
    doc = avro_schema(AVRO)
    fields = {f["name"]: f for f in doc["fields"]}
    assert doc["type"] == "record" and list(fields)[:2] == ["f0", "f1"]
    assert all(f["type"][0] == "null" and f["default"] is None for f in doc["fields"])
    assert fields["f6"]["type"][1] == {"type": "fixed", "name": fields["f6"]["type"][1]["name"], "size": 9}
    assert fields["f7"]["type"][1]["size"] == 2
    assert fields["f12"]["type"][1] == {"type": "array", "items": ["null", "long"]}
    assert fields["f15"]["type"][1] == {"type": "map", "values": ["null", "string"]}
    # Spark's minBytesForPrecision: 9 digits → 4 bytes, 18 → 8, 38 → 16
    decs = avro_schema(schema(*[(f"d{p}", f"decimal({p},0)") for p in (1, 2, 9, 10, 18, 19, 38)]))
    assert [f["type"][1]["size"] for f in decs["fields"]] == [1, 1, 4, 5, 8, 9, 16]


def test_avro_row_decodes_every_type_and_nulls():
    us = 1_700_000_000_123_456
    rec = {"f0": "kéy", "f1": -(2**40), "f2": 7, "f3": 19_000, "f4": us, "f5": -us,
           "f6": (-1234567).to_bytes(9, "big", signed=True), "f7": (55).to_bytes(2, "big", signed=True),
           "f8": b"\x00\x01", "f9": True, "f10": 0.5,
           "f11": {"f0": 0, "f1": {"f0": 2.5}}, "f12": [us, None], "f13": ["a", None],
           "f14": {"x": (-5).to_bytes(3, "big", signed=True), "y": None}, "f15": {"z": None}}
    got = compile_avro(AVRO)(b"\x00\x01\x02" + _avro(AVRO, rec), 3)
    t = dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
    assert got == ("kéy", -(2**40), 7, dt.date(2022, 1, 8), t, dt.datetime(1916, 2, 18, 1, 46, 39, 876544),
                   Decimal("-1234.567"), Decimal("5.5"), b"\x00\x01", True, 0.5,
                   {"start": dt.datetime(1970, 1, 1, tzinfo=UTC), "inner": {"d": 2.5}},
                   [t, None], ["a", None], {"x": Decimal("-0.05"), "y": None}, {"z": None})
    nulls = compile_avro(AVRO)(_avro(AVRO, {}), 0)
    assert nulls == (None,) * len(AVRO)


def test_avro_errors_are_one_line():
    dec = compile_avro(schema(("k", "string"), ("n", "long")))
    body = _avro(schema(("k", "string"), ("n", "long")), {"f0": "a", "f1": 1})
    with pytest.raises(RowError) as e:
        dec(body + b"\x00\x00", 0)
    assert one_line(e) == f"Avro record ends at byte {len(body)} of {len(body) + 2}"
    with pytest.raises(RowError) as e:
        dec(b"\x02\x7f", 0)  # union branch 1 (string) of length -64
    assert one_line(e).startswith("not an Avro record of the state schema (")
    with pytest.raises(RowError) as e:
        dec(b"\x09", 0)  # union index -5
    assert one_line(e).startswith("not an Avro record of the state schema (")
    with pytest.raises(RowError) as e:
        avro_schema(schema(("iv", "calendarinterval")))
    assert one_line(e) == "no Avro form for type calendarinterval"


# --- transformWithState keys and list values -----------------------------------------------

def _cf(key: StructType, value: StructType, encoder: str = "noPrefix", **kw) -> ColumnFamilySchema:
    return ColumnFamilySchema("v", key, value, encoder, **kw)


def test_no_prefix_keys_and_values_unsaferow_and_avro():
    key, value = schema(("user", "string")), schema(("count", "long"))
    cf = _cf(key, value)
    k = b"\x05\x00" + b"\x00" + unsafe([("var", b"u1")])
    v = b"\x00" + unsafe([("fixed", q(9))])
    assert key_decoder(cf, False)(k) == ("u1",)
    assert value_decoder(cf, False)(v, 0, len(v)) == (9,)
    ka = b"\x05\x00" + b"\x00" + b"\x00\x00" + _avro(key, {"f0": "u1"})
    va = b"\x00\x00\x00" + _avro(value, {"f0": 9})
    assert key_decoder(cf, True)(ka) == ("u1",)
    assert value_decoder(cf, True)(va, 0, len(va)) == (9,)


def test_prefix_scan_key_of_map_state():
    key = schema(("key", {"type": "struct", "fields": [{"name": "user", "type": "string"}]}),
                 ("userKey", {"type": "struct", "fields": [{"name": "page", "type": "string"}]}))
    cf = _cf(key, schema(("n", "long")), "prefixScan", prefix_cols=1)
    head = b"\x00" + unsafe([("var", unsafe([("var", b"u1")]))])
    tail = b"\x00" + unsafe([("var", unsafe([("var", b"/home")]))])
    k = b"\x02\x00" + struct.pack("<i", len(head)) + head + tail
    assert key_decoder(cf, False)(k) == ({"user": "u1"}, {"page": "/home"})
    with pytest.raises(RowError) as e:
        key_decoder(cf, False)(b"\x02\x00\x01")
    assert one_line(e) == "scan key shorter than its length header"
    with pytest.raises(RowError) as e:
        key_decoder(cf, False)(b"\x02\x00" + struct.pack("<i", 500) + head)
    assert one_line(e) == "scan key with a bad prefix length 500"


def _ordered(marker: int, body: bytes) -> bytes:
    return bytes([marker]) + body


def test_range_scan_key_ordering_bytes():
    # a timer key: grouping key + expiry ms, range-scanned on (expiry, score, flag, ratio)
    key = schema(("key", "string"), ("expiry", "long"), ("score", "double"), ("flag", "boolean"),
                 ("ratio", "float"), ("small", "short"), ("tiny", "byte"), ("n", "integer"))
    cf = _cf(key, schema(), "rangeScan", ordinals=(1, 2, 3, 4, 5, 6, 7))
    neg = bytes(b ^ 0xFF for b in struct.pack(">d", -2.5))  # negative floats: every bit flipped
    negf = bytes(b ^ 0xFF for b in struct.pack(">f", -0.75))
    cols = [_ordered(1, struct.pack(">q", 1_700_000_000_000)), _ordered(0, neg), _ordered(1, b"\x01"),
            _ordered(0, negf), _ordered(2, b""), _ordered(1, struct.pack(">b", 9)), None]
    head = b"\x00" + unsafe([("var", c) for c in cols])
    tail = b"\x00" + unsafe([("var", b"k1")])
    k = b"\x01\x00" + struct.pack("<i", len(head)) + head + tail
    assert key_decoder(cf, False)(k) == ("k1", 1_700_000_000_000, -2.5, True, -0.75, None, 9, None)
    # the same in Avro: one (marker, value) binary pair per ordering column
    pairs = StructType(tuple(Field(f"{f.name}_{x}", DataType("binary"))
                             for f in key.fields[1:] for x in ("m", "v")))
    rec = {}
    for i, c in enumerate(cols):
        rec[f"f{2 * i}"], rec[f"f{2 * i + 1}"] = (c[:1], c[1:]) if c is not None else (None, None)
    ahead = b"\x00" + _avro(pairs, rec)
    atail = b"\x00\x00\x00" + _avro(schema(("key", "string")), {"f0": "k1"})
    ka = b"\x01\x00" + struct.pack("<i", len(ahead)) + ahead + atail
    assert key_decoder(cf, True)(ka) == ("k1", 1_700_000_000_000, -2.5, True, -0.75, None, 9, None)


def test_range_scan_on_an_undecoded_type():
    cf = _cf(schema(("name", "string")), schema(), "rangeScan", ordinals=(0,))
    head = b"\x00" + unsafe([("var", b"\x01abc")])
    with pytest.raises(RowError) as e:
        key_decoder(cf, False)(b"\x01\x00" + struct.pack("<i", len(head)) + head)
    assert one_line(e) == "range-scan column of type string is not decoded"


def test_list_state_values_split_with_and_without_delimiters():
    a, b = b"A" * 16, b"B" * 8
    plain = struct.pack("<i", 16) + a + struct.pack("<i", 8) + b
    assert split_values(plain) == [(4, 20), (24, 32)]
    merged = struct.pack("<i", 16) + a + b"," + struct.pack("<i", 8) + b  # RocksDB merge delimiter
    assert split_values(merged) == [(4, 20), (25, 33)]
    for broken in (b"", b"\x01\x00", struct.pack("<i", 99) + a, struct.pack("<i", -1) + a):
        with pytest.raises(RowError) as e:
            split_values(broken)
        assert one_line(e) == f"{len(broken)}-byte list-state entry does not split into size-prefixed values"


def test_arrays_of_every_fixed_width_element():
    s = schema(*[(n, {"type": "array", "elementType": n}) for n in
                 ("long", "integer", "short", "byte", "double", "float", "timestamp", "timestamp_ntz", "date", "void")])
    row = decode_row(s, unsafe([
        ("var", array([q(-1), None], 8)),
        ("var", array([struct.pack("<i", 2**31 - 1)], 4)),
        ("var", array([struct.pack("<h", -2), struct.pack("<h", 3)], 2)),
        ("var", array([struct.pack("<b", -128)], 1)),
        ("var", array([struct.pack("<d", -0.5)], 8)),
        ("var", array([struct.pack("<f", 1.5)], 4)),
        ("var", array([q(86_400_000_000)], 8)),
        ("var", array([q(1)], 8)),
        ("var", array([struct.pack("<i", -1)], 4)),
        ("var", array([None, None], 8)),
    ]))
    assert row == ([-1, None], [2**31 - 1], [-2, 3], [-128], [-0.5], [1.5],
                   [dt.datetime(1970, 1, 2, tzinfo=UTC)], [dt.datetime(1970, 1, 1, 0, 0, 0, 1)],
                   [dt.date(1969, 12, 31)], [None, None])


def test_a_timestamp_beyond_year_9999_is_a_row_error():
    with pytest.raises(RowError) as e:
        decode_row(schema(("ts", "timestamp"), ("s", "string")), unsafe([("fixed", q(2**62)), ("var", b"x")]))
    assert one_line(e).startswith("row does not fit its schema (")
