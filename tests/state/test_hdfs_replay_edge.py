"""The HDFS-backed state store rebuilt without a JVM from files laid out as
``HDFSBackedStateStoreProvider`` writes them (lz4-java framed, big-endian records): deletes
in deltas, snapshots that cannot be read, missing deltas, checkpoint-v2 unique ids."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from streamwatch.checkpoint.fs import LocalStorage
from streamwatch.state import hdfs
from streamwatch.state.records import StateFileError
from tests.helpers.spark_codecs import lz4java


def records(*ops: tuple[bytes, bytes | None]) -> bytes:
    """A delta/snapshot body: (key, value) puts, (key, None) deletes, then the end marker."""
    out = b""
    for k, v in ops:
        out += struct.pack(">i", len(k)) + k
        out += struct.pack(">i", -1) if v is None else struct.pack(">i", len(v)) + v
    return lz4java(out + struct.pack(">i", -1))


def write(folder: Path, name: str, *ops: tuple[bytes, bytes | None]) -> int:
    data = records(*ops)
    (folder / name).write_bytes(data)
    return len(data)


@pytest.fixture
def store(tmp_path) -> Path:
    folder = tmp_path / "state" / "0" / "0"
    folder.mkdir(parents=True)
    write(folder, "1.delta", (b"a", b"1"), (b"b", b"1"))
    write(folder, "2.delta", (b"a", b"2"), (b"b", None), (b"c", b"2"))  # b deleted
    write(folder, "3.delta", (b"zz", None))  # deleting a key that never existed is a no-op
    return folder


def test_deltas_replayed_with_deletes(store):
    rows, rep = hdfs.load(LocalStorage(), str(store), 3)
    assert rows == {b"a": b"2", b"c": b"2"}
    assert rep.snapshot is None and rep.deltas == (1, 2, 3) and rep.skipped == ()
    assert rep.bytes == sum((store / f"{v}.delta").stat().st_size for v in (1, 2, 3))
    rows1, _ = hdfs.load(LocalStorage(), str(store), 1)
    assert rows1 == {b"a": b"1", b"b": b"1"}


def test_snapshot_then_later_deltas(store):
    write(store, "2.snapshot", (b"a", b"2"), (b"c", b"2"))
    write(store, "4.delta", (b"a", None), (b"d", b"4"))
    rows, rep = hdfs.load(LocalStorage(), str(store), 4)
    assert rows == {b"c": b"2", b"d": b"4"}
    assert rep.snapshot == 2 and rep.deltas == (3, 4)
    # a snapshot newer than the version asked for is not used
    rows2, rep2 = hdfs.load(LocalStorage(), str(store), 1)
    assert rows2 == {b"a": b"1", b"b": b"1"} and rep2.snapshot is None


def test_unreadable_snapshot_falls_back_to_deltas(store):
    (store / "3.snapshot").write_bytes(lz4java(b"\x00\x00\x00\x05ab"))  # truncated record
    os.mkfifo(store / "2.snapshot")  # not a regular file: an OSError, never a hang
    rows, rep = hdfs.load(LocalStorage(), str(store), 3)
    assert rows == {b"a": b"2", b"c": b"2"}
    assert rep.snapshot is None and rep.deltas == (1, 2, 3)
    assert [s.split(":")[0] for s in rep.skipped] == ["3.snapshot", "2.snapshot"]
    assert "truncated" in rep.skipped[0]
    assert "not a regular file (a FIFO)" in rep.skipped[1]


def test_missing_delta_names_the_version_and_the_snapshot(store):
    (store / "2.delta").unlink()
    with pytest.raises(StateFileError) as e:
        hdfs.load(LocalStorage(), str(store), 3)
    assert str(e.value) == f"{store}: 2.delta is missing (needed to rebuild version 3)"
    write(store, "3.snapshot", (b"a", b"3"))
    write(store, "5.delta", (b"e", b"5"))
    with pytest.raises(StateFileError) as e:
        hdfs.load(LocalStorage(), str(store), 5)
    assert str(e.value) == f"{store}: 4.delta is missing (needed to rebuild version 5 from snapshot 3)"


def test_corrupt_or_unreadable_delta_is_a_state_file_error(store):
    (store / "3.delta").unlink()
    os.mkfifo(store / "3.delta")
    with pytest.raises(StateFileError) as e:
        hdfs.load(LocalStorage(), str(store), 3)
    assert str(e.value).startswith("3.delta: cannot read (") and "FIFO" in str(e.value)
    (store / "3.delta").unlink()
    (store / "3.delta").write_bytes(b"not lz4 at all")
    with pytest.raises(StateFileError) as e:
        hdfs.load(LocalStorage(), str(store), 3)
    assert str(e.value).startswith("3.delta: ") and "\n" not in str(e.value)


def test_unique_ids_pick_the_committed_file(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    write(folder, "1_aaaa-1111.delta", (b"k", b"from-a"))
    write(folder, "1_bbbb-2222.delta", (b"k", b"from-b"))
    write(folder, "2_cccc-3333.snapshot", (b"k", b"snap-c"))
    write(folder, "2.snapshot", (b"k", b"snap-plain"))
    (folder / "3.delta").mkdir()  # a folder with a state file's name is not a file
    (folder / "notes.txt").write_text("x")
    files = hdfs.list_files(LocalStorage(), str(folder))
    assert set(files) == {(1, "delta"), (2, "snapshot")}
    s = LocalStorage()
    assert hdfs.load(s, str(folder), 1, unique_ids={1: "bbbb-2222"})[0] == {b"k": b"from-b"}
    # an id not on disk: a file without an id if there is one, else the first listed
    assert hdfs.load(s, str(folder), 2, unique_ids={2: "zzzz"})[0] == {b"k": b"snap-plain"}
    assert hdfs.load(s, str(folder), 2, unique_ids={2: "cccc-3333"})[0] == {b"k": b"snap-c"}
    assert hdfs.load(s, str(folder), 1, unique_ids={1: "zzzz"})[0] in ({b"k": b"from-a"}, {b"k": b"from-b"})


def test_empty_or_missing_folder_at_version_zero(tmp_path):
    rows, rep = hdfs.load(LocalStorage(), str(tmp_path / "nowhere"), 0)
    assert rows == {} and rep == hdfs.Replay(None, (), 0, ())
    with pytest.raises(StateFileError, match="1.delta is missing"):
        hdfs.load(LocalStorage(), str(tmp_path / "nowhere"), 1)
