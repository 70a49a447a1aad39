"""Record boundaries of files whose records come in runs of one length (keys of strings of one
8-byte-rounded length, fixed-width values, deletes among them): the column-wise rebuild
(:mod:`streamwatch.state.entries`, which checks runs of equal-length records at once) against
an account written here from Spark's format — ``HDFSBackedStateStoreProvider.updateFromDeltaFile``
applied to a ``HashMap`` kept in insertion order — and against the record-by-record replay's
errors for a file that ends or breaks inside a run."""

from __future__ import annotations

import struct

import pytest

from streamwatch.checkpoint.fs import LocalStorage
from streamwatch.state import hdfs
from streamwatch.state.entries import Entries
from streamwatch.state.records import StateFileError
from tests.helpers.spark_codecs import lz4java

Op = tuple[bytes, bytes | None]


def body(ops: list[Op]) -> bytes:
    """A delta as Spark writes it: [key len][key][value len | −1][value], then −1."""
    out = b""
    for k, v in ops:
        out += struct.pack(">i", len(k)) + k + (struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v)
    return out + struct.pack(">i", -1)


def runs() -> list[Op]:
    """Runs of 3 to 700 records of one length, then a record of another length or a delete."""
    ops: list[Op] = []
    for r, n in enumerate([3, 12, 700, 9, 40, 300, 8, 1000]):
        ops += [(struct.pack("<qq", r, i) + bytes(8 * (r % 2)), struct.pack("<q", i) * 3) for i in range(n)]
        ops.append((b"k" * (8 + 8 * (r % 3)), None if r % 4 == 1 else b"v" * 40))
    ops += [(ops[5][0], None), (ops[700][0], b"w" * 24)]  # a delete and an update after the runs
    return ops


def test_runs_of_equal_length_records_match_the_account(tmp_path):
    ops = runs()
    (tmp_path / "1.delta").write_bytes(lz4java(body(ops), block=4096))
    e, _rep = hdfs.load_entries(LocalStorage(), str(tmp_path), 1)
    state: dict[bytes, bytes] = {}
    for k, v in ops:
        if v is None:
            state.pop(k, None)
        else:
            state[k] = v
    assert isinstance(e, Entries), "the column-wise path was not taken"
    ks, vs = e.pairs(0, len(e))
    assert list(zip(ks, vs, strict=True)) == list(state.items()) and len(e) == len(state) > 2000


@pytest.mark.parametrize("cut", [-4, -30, 1500])
def test_a_file_cut_inside_a_run_raises_what_the_record_replay_raises(tmp_path, cut):
    raw = body(runs())
    raw = raw[:cut] if cut < 0 else raw[:cut * 48 + 17]  # ends mid-run: inside a record
    (tmp_path / "1.delta").write_bytes(lz4java(raw))
    with pytest.raises(StateFileError) as slow:
        hdfs.load(LocalStorage(), str(tmp_path), 1)
    with pytest.raises(StateFileError) as fast:
        hdfs.load_entries(LocalStorage(), str(tmp_path), 1)
    assert str(fast.value) == str(slow.value) and "\n" not in str(fast.value)
