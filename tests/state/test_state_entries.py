"""The column-wise rebuild of a store (:mod:`streamwatch.state.entries`: offsets into the
decompressed files, no ``bytes`` per entry) against an account written here from Spark's
format — ``HDFSBackedStateStoreProvider.updateFromDeltaFile`` applied to a ``HashMap`` kept
in insertion order: puts set, a value length of −1 removes — on files laid out as Spark
writes them; against Spark's own ``statestore`` reader on checkpoints it wrote (``--json``
rows included); and the same one-line errors as the record-by-record replay."""

from __future__ import annotations

import datetime as dt
import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint.fs import LocalStorage
from streamwatch.cli import main
from streamwatch.state import hdfs, rocksdb
from streamwatch.state.entries import Entries
from streamwatch.state.records import StateFileError
from tests.helpers.spark_codecs import lz4java

Op = tuple[bytes, bytes | None]


def body(*ops: Op) -> bytes:
    """A delta/snapshot as Spark writes it: [key len][key][value len | −1][value], then −1."""
    out = b""
    for k, v in ops:
        out += struct.pack(">i", len(k)) + k + (struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v)
    return out + struct.pack(">i", -1)


def expected(*files: tuple[Op, ...]) -> list[tuple[bytes, bytes]]:
    """The store after ``files`` in order, in the order a Python dict keeps insertions."""
    state: dict[bytes, bytes] = {}
    for ops in files:
        for k, v in ops:
            if v is None:
                state.pop(k, None)
            else:
                state[k] = v
    return list(state.items())


def pairs(e: Entries | dict[bytes, bytes]) -> list[tuple[bytes, bytes]]:
    assert isinstance(e, Entries), "the column-wise path was not taken"
    ks, vs = e.pairs(0, len(e))
    return list(zip(ks, vs, strict=True))


def write(folder: Path, files: list[tuple[str, tuple[Op, ...]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, ops in files:
        (folder / name).write_bytes(lz4java(body(*ops), block=64))


def test_fixed_width_records_in_one_go(tmp_path):
    ops = tuple((struct.pack("<q", i) * 2, struct.pack("<q", i * 7)) for i in range(300))
    write(tmp_path, [("1.delta", ops)])
    e, rep = hdfs.load_entries(LocalStorage(), str(tmp_path), 1)
    assert pairs(e) == expected(ops) and len(e) == 300 and rep.deltas == (1,)


def test_last_write_wins_deletes_and_reinsertion_order(tmp_path):
    snap = ((b"a" * 16, b"1" * 8), (b"b" * 8, b"1"), (b"", b"empty key"), (b"c" * 13, b"x" * 24))
    d3 = ((b"a" * 16, b"3" * 8), (b"b" * 8, None), (b"zz", None), (b"d" * 3, b"4"), (b"d" * 3, b"44"))
    d4 = ((b"b" * 8, b"back"), (b"", None), (b"a" * 16, b"4"), (b"c" * 13, None), (b"c" * 13, b"again"))
    write(tmp_path, [("2.snapshot", snap), ("3.delta", d3), ("4.delta", d4), ("1.delta", ((b"q", b"q"),))])
    e, rep = hdfs.load_entries(LocalStorage(), str(tmp_path), 4)
    assert rep.snapshot == 2 and rep.deltas == (3, 4)
    # b: deleted then put again (moves to the end); c: same within one file; d: two puts in one file
    assert pairs(e) == expected(snap, d3, d4)
    assert [k for k, _ in pairs(e)] == [b"a" * 16, b"d" * 3, b"b" * 8, b"c" * 13]
    assert pairs(hdfs.load_entries(LocalStorage(), str(tmp_path), 3)[0]) == expected(snap, d3)


def test_rocksdb_changelogs_alone(tmp_path):
    c1 = tuple((b"\x00" + bytes([i]) * 8, b"\x01" + bytes([i]) * 16) for i in range(40))
    c2 = ((c1[3][0], None), (c1[5][0], b"\x01" + b"z" * 16), (c1[3][0], b"\x01" + b"y" * 8))
    write(tmp_path, [("1.changelog", c1), ("2.changelog", c2)])
    e, rep = rocksdb.load_entries(LocalStorage(), str(tmp_path), 2)
    assert rep.changelogs == (1, 2) and pairs(e) == expected(c1, c2)


@pytest.mark.parametrize("raw", [
    body((b"ab", b"1"))[:-6],                      # ends inside a record
    struct.pack(">i", 5) + b"ab",                  # a key longer than the file
    struct.pack(">i", 2) + b"ab" + struct.pack(">i", -7) + struct.pack(">i", -1),  # value length −7
])
def test_irregular_files_raise_what_the_record_replay_raises(tmp_path, raw):
    tmp_path.joinpath("1.delta").write_bytes(lz4java(raw))
    with pytest.raises(StateFileError) as slow:
        hdfs.load(LocalStorage(), str(tmp_path), 1)
    with pytest.raises(StateFileError) as fast:
        hdfs.load_entries(LocalStorage(), str(tmp_path), 1)
    assert str(fast.value) == str(slow.value) and "\n" not in str(fast.value)


def _epoch_us(text: str) -> int:
    t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round(t.timestamp() * 1_000_000)


def _json_value(v):
    if isinstance(v, str) and v.endswith("Z") and v[:4].isdigit():
        return _epoch_us(v)
    if isinstance(v, dict):
        return {k: _json_value(x) for k, x in v.items()}
    return v


def _spark_value(v):
    if isinstance(v, dt.datetime):  # naive, in the session's time zone, as pyspark gives them
        return round(v.timestamp() * 1_000_000)
    if hasattr(v, "asDict"):
        return {k: _spark_value(x) for k, x in v.asDict().items()}
    return v


@pytest.mark.spark
@pytest.mark.parametrize("name", ["agg_hdfs", "agg_rocks_cl"])
def test_spark_files_split_column_wise_and_json_rows_match_spark(spark, state_cps, unchanged, name):
    cp = unchanged(state_cps[name])
    folders = sorted(p for p in (cp / "state" / "0").iterdir() if p.name.isdigit())
    last = max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    module = rocksdb if "rocks" in name else hdfs
    assert all(isinstance(module.load_entries(LocalStorage(), str(f), last + 1)[0], Entries) for f in folders)
    r = CliRunner().invoke(main, ["state", str(cp), "--json", "--limit", "0"])
    assert r.exit_code == 0, r.output
    (table,) = json.loads(r.stdout)["tables"]
    ours = sorted((tuple(_json_value(v) for v in row) for row in table["rows"]), key=repr)
    theirs = sorted((tuple(_spark_value(v) for v in (*row["key"], *row["value"], row["partition_id"]))
                     for row in spark.read.format("statestore").load(str(cp)).collect()), key=repr)
    assert ours == theirs and len(ours) == table["total_rows"] > 0


def test_json_rows_in_one_orjson_call_are_the_per_value_rows():
    from decimal import Decimal

    from streamwatch.cli.state_cmd import _rows_json

    utc = dt.UTC
    rows = [
        ({"start": dt.datetime(2026, 1, 1, tzinfo=utc), "end": dt.datetime(2026, 1, 1, 0, 0, 0, 1, tzinfo=utc)},
         "k,\x00,\n\"]", 1, -0.0, float("nan"), None, 0),
        (dt.datetime(1, 1, 1), dt.date(9999, 12, 31), Decimal("-1.50"), b"\x00\xff", bytearray(b"\x01"), [1, None], 3),
        ({"a": [dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=utc)], "b": {"c": Decimal("0E-10")}}, True, "", 2**63 - 1,
         1e20, "\u2028", 1),
    ]
    leaves = [f"c{i}" for i in range(7)]
    fast, slow = _rows_json(leaves, False)(rows), _rows_json(leaves, True)(rows)
    assert fast == slow
    # one array a line: what json reads back is the rows' values as the manual gives them
    back = json.loads(b"[" + fast + b"]")
    assert back[0][0] == {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:00.000001Z"}
    assert back[0][1] == "k,\x00,\n\"]" and back[1][:5] == ["0001-01-01T00:00:00", "9999-12-31", "-1.50", "00ff", "01"]
    assert fast.count(b"\n") == 2 and back[2][0] == {"a": ["1969-12-31T23:59:59.500000Z"], "b": {"c": "0E-10"}}
