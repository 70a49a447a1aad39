"""The column-wise UnsafeRow decoder (:mod:`streamwatch.state.columnar`) against the bytes a
test-local writer lays out as Spark's ``UnsafeRowWriter`` does (null bitset, 8-byte slots,
variable-length region padded to 8 bytes): every decoded value is the value written, and the
same as the per-row decoder's on the same bytes — for nulls, negatives, strings of many
lengths (ASCII and not), timestamps, dates, doubles, floats, booleans, compact decimals and
nested structs; broken rows are flagged and left to the per-row decoder, which raises. And
:func:`streamwatch.state.records.apply_records` replays a state file as :func:`read_records`
reads it, errors included."""

from __future__ import annotations

import datetime as dt
import io
import math
import struct
from decimal import Decimal

import numpy as np
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamwatch.state.columnar import compile_batch, compile_columns
from streamwatch.state.records import StateFileError, apply_records, read_records
from streamwatch.state.types import StructType, parse_struct
from streamwatch.state.unsaferow import RowError, compile_row

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)


def schema(*fields: tuple[str, object]) -> StructType:
    return parse_struct({"type": "struct", "fields": [{"name": n, "type": t, "nullable": True} for n, t in fields]})


WINDOW = {"type": "struct", "fields": [{"name": "start", "type": "timestamp", "nullable": True},
                                       {"name": "end", "type": "timestamp", "nullable": True}]}
TYPES: dict[str, object] = {"long": "long", "int": "integer", "short": "short", "byte": "byte", "flag": "boolean",
                            "d": "double", "f": "float", "ts": "timestamp", "ntz": "timestamp_ntz", "day": "date",
                            "dec": "decimal(10,2)", "s": "string", "bin": "binary", "w": WINDOW}


def _slot(kind: str, v) -> bytes:
    """The 8-byte slot of a fixed-width value (little-endian, zero-padded)."""
    if kind == "long":
        return struct.pack("<q", v)
    if kind == "int":
        return struct.pack("<i4x", v)
    if kind == "short":
        return struct.pack("<h6x", v)
    if kind == "byte":
        return struct.pack("<b7x", v)
    if kind == "flag":
        return struct.pack("<?7x", v)
    if kind == "d":
        return struct.pack("<d", v)
    if kind == "f":
        return struct.pack("<f4x", v)
    if kind in ("ts", "ntz"):
        return struct.pack("<q", v)
    if kind == "day":
        return struct.pack("<i4x", v)
    if kind == "dec":
        return struct.pack("<q", v)
    raise AssertionError(kind)


def write_row(kinds: list[str], values: list) -> bytes:
    """An UnsafeRow of ``values`` (raw forms: µs, days, unscaled ints, str, bytes, (start, end)
    µs pairs for windows), as ``UnsafeRowWriter`` writes it."""
    n = len(kinds)
    words = (n + 63) // 64
    fixed = (words + n) * 8
    nulls = 0
    slots = []
    tail = b""
    for i, (kind, v) in enumerate(zip(kinds, values, strict=True)):
        if v is None:
            nulls |= 1 << i
            slots.append(bytes(8))
            continue
        if kind in ("s", "bin", "w"):
            body = (v.encode() if kind == "s" else write_row(["ts", "ts"], list(v)) if kind == "w" else v)
            slots.append(struct.pack("<Q", (fixed + len(tail)) << 32 | len(body)))
            tail += body + bytes(-len(body) % 8)
        else:
            slots.append(_slot(kind, v))
    return nulls.to_bytes(words * 8, "little") + b"".join(slots) + tail


def expected(kind: str, v):
    """The Python value Spark's value ``v`` (raw form) decodes to."""
    if v is None:
        return None
    if kind == "ts":
        return EPOCH + dt.timedelta(microseconds=v)
    if kind == "ntz":
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=v)
    if kind == "day":
        return dt.date(1970, 1, 1) + dt.timedelta(days=v)
    if kind == "dec":
        return Decimal(v) / 100
    if kind == "w":
        return {"start": expected("ts", v[0]), "end": None if v[1] is None else expected("ts", v[1])}
    if kind == "f":
        return struct.unpack("<f", struct.pack("<f", v))[0]
    return v


US = st.integers(-(10**15), 10**15)  # ± ~31,000 years would overflow datetime: ± 31 years here
VALUES = {
    "long": st.integers(-(2**63), 2**63 - 1), "int": st.integers(-(2**31), 2**31 - 1),
    "short": st.integers(-(2**15), 2**15 - 1), "byte": st.integers(-128, 127), "flag": st.booleans(),
    "d": st.floats(allow_nan=False), "f": st.floats(width=32, allow_nan=False), "ts": US, "ntz": US,
    "day": st.integers(-700_000, 2_900_000), "dec": st.integers(-(10**10) + 1, 10**10 - 1),
    "s": st.text(max_size=40), "bin": st.binary(max_size=40),
    "w": st.tuples(US, st.one_of(st.none(), US)),
}


@st.composite
def tables(draw):
    kinds = draw(st.lists(st.sampled_from(sorted(TYPES)), min_size=1, max_size=8))
    rows = draw(st.lists(st.tuples(*(st.one_of(st.none(), VALUES[k]) for k in kinds)), min_size=0, max_size=30))
    return kinds, rows


def _schema_of(kinds: list[str]) -> StructType:
    return schema(*((f"c{i}", TYPES[k]) for i, k in enumerate(kinds)))


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from([0, 1, 3]))
def test_columns_equal_the_values_written_and_the_per_row_decoder(table, prefix):
    kinds, rows = table
    sch = _schema_of(kinds)
    blobs = [bytes(prefix) + write_row(kinds, list(r)) for r in rows]
    batch = compile_batch(sch, versioned=prefix > 0)
    assert batch is not None
    cols, ok = batch(blobs)
    assert ok.tolist() == [True] * len(rows)
    per_row = compile_row(sch)
    for i, r in enumerate(rows):
        want = tuple(expected(k, v) for k, v in zip(kinds, r, strict=True))
        got = tuple(c[i] for c in cols)
        slow = per_row(blobs[i], prefix, len(blobs[i]) - prefix)
        assert all(_same(g, w) for g, w in zip(got, want, strict=True)), (got, want)
        assert all(_same(g, s) for g, s in zip(got, slow, strict=True)), (got, slow)


def test_strings_of_every_length_ascii_and_not():
    sch = schema(("s", "string"), ("n", "long"))
    texts = ["x" * n for n in range(70)] + ["é" * n for n in range(20)] + ["日本", "", "a\x00b", "🙂 ok"]
    blobs = [write_row(["s", "long"], [t, -i]) for i, t in enumerate(texts)]
    blobs.append(write_row(["s", "long"], [None, None]))
    cols, ok = compile_batch(sch, versioned=False)(blobs)
    assert ok.all()
    assert cols[0] == texts + [None] and cols[1] == [-i for i in range(len(texts))] + [None]


def test_broken_rows_are_flagged_and_the_per_row_decoder_raises():
    kinds = ["s", "w", "long"]
    sch = _schema_of(kinds)
    good = write_row(kinds, ["abc", (10, 20), 7])
    fixed = 4 * 8
    past_end = bytearray(good)
    past_end[8:16] = struct.pack("<Q", fixed << 32 | 500)  # the string runs past the row
    into_slots = bytearray(good)
    into_slots[8:16] = struct.pack("<Q", 8 << 32 | 3)  # the string points into the slots
    nested = bytearray(good)
    nested[16:24] = struct.pack("<Q", (fixed + 8) << 32 | 8)  # a window of 8 bytes (needs 24)
    blobs = [good, bytes(past_end), good[:16], bytes(into_slots), bytes(nested), good]
    cols, ok = compile_batch(sch, versioned=False)(blobs)
    assert ok.tolist() == [True, False, False, False, False, True]
    per_row = compile_row(sch)
    for b, flag in zip(blobs, ok.tolist(), strict=True):
        if flag:
            continue
        with pytest.raises(RowError):
            per_row(b, 0, len(b))
    want = ("abc", {"start": EPOCH + dt.timedelta(microseconds=10), "end": EPOCH + dt.timedelta(microseconds=20)}, 7)
    assert tuple(c[0] for c in cols) == want and tuple(c[5] for c in cols) == want


def test_more_than_64_fields_and_types_left_to_the_per_row_decoder():
    kinds = ["long"] * 70
    vals = [None if i % 3 == 0 else i - 35 for i in range(70)]
    sch = _schema_of(kinds)
    cols, ok = compile_batch(sch, versioned=False)([write_row(kinds, vals)])
    assert ok.all() and [c[0] for c in cols] == vals
    assert compile_columns(schema(("a", {"type": "array", "elementType": "long", "containsNull": True}))) is None
    assert compile_columns(schema(("d", "decimal(38,6)"))) is None


def test_a_value_out_of_datetime_range_fails_the_batch():
    from streamwatch.state.columnar import BatchError

    sch = schema(("ts", "timestamp"))
    blob = write_row(["ts"], [2**62])
    with pytest.raises(BatchError):
        compile_batch(sch, versioned=False)([blob])
    with pytest.raises(RowError):
        compile_row(sch)(blob, 0, len(blob))
    # a null timestamp's slot is not converted, whatever it holds
    null = bytearray(blob)
    null[0] = 1
    cols, ok = compile_batch(sch, versioned=False)([bytes(null)])
    assert ok.all() and cols == [[None]]


# --- records ----------------------------------------------------------------------------------

def _v1(entries: list[tuple[bytes, bytes | None]], end: bool = True) -> bytes:
    out = b""
    for k, v in entries:
        out += struct.pack(">i", len(k)) + k + (struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v)
    return out + (struct.pack(">i", -1) if end else b"")


def _v2(entries: list[tuple[int, bytes, bytes | None]]) -> bytes:
    out = struct.pack(">H", 2) + b"v2"
    for t, k, v in entries:
        out += bytes([t]) + struct.pack(">i", len(k)) + k + (struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v)
    return out + b"\x00"


def _zstd(data: bytes) -> io.BytesIO:
    return io.BytesIO(zstandard.ZstdCompressor().compress(data))


def _replayed(data: bytes, changelog: bool, delimiter: bytes = b",") -> dict[bytes, bytes]:
    rows: dict[bytes, bytes] = {}
    for rec in read_records(_zstd(data), "zstd", "f", changelog=changelog):
        if rec.op == "delete":
            rows.pop(rec.key, None)
        elif rec.op == "merge" and rec.key in rows:
            rows[rec.key] = rows[rec.key] + delimiter + rec.value
        else:
            rows[rec.key] = rec.value
    return rows


KEYS = st.binary(min_size=0, max_size=6)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(KEYS, st.one_of(st.none(), st.binary(max_size=10))), max_size=30))
def test_apply_records_v1_replays_read_records(entries):
    data = _v1(entries)
    rows: dict[bytes, bytes] = {}
    apply_records(_zstd(data), "zstd", "f", rows)
    want: dict[bytes, bytes] = {}
    for k, v in entries:
        if v is None:
            want.pop(k, None)
        else:
            want[k] = v
    assert rows == want == _replayed(data, False)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0x01, 0x10, 0x11]), KEYS, st.binary(max_size=10)), max_size=30),
       st.sampled_from([b",", b""]))
def test_apply_records_v2_with_merges_replays_read_records(entries, delimiter):
    data = _v2([(t, k, None if t == 0x10 else v) for t, k, v in entries])
    rows: dict[bytes, bytes] = {}
    apply_records(_zstd(data), "zstd", "f", rows, changelog=True, delimiter=delimiter)
    assert rows == _replayed(data, True, delimiter)


@pytest.mark.parametrize("data", [
    _v1([(b"k", b"v")], end=False),  # no end marker
    _v1([(b"k", b"v")])[:-6],  # truncated in the value
    struct.pack(">i", -7) + b"xxxx",  # an impossible key length
    _v1([(b"k", b"v")])[:-4] + struct.pack(">i", 5) + b"ab",  # a key past the end
])
def test_apply_records_raises_what_read_records_raises(data):
    with pytest.raises(StateFileError) as slow:
        list(read_records(_zstd(data), "zstd", "f"))
    rows: dict[bytes, bytes] = {}
    with pytest.raises(StateFileError) as fast:
        apply_records(_zstd(data), "zstd", "f", rows)
    assert str(fast.value) == str(slow.value)
    assert np.all([k == b"k" for k in rows])
