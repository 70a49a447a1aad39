"""Read-only storage (local ``os`` path and fsspec ``memory://``) on the awkward things a
user's checkpoint folder holds — symlink loops, dangling links, FIFOs, vanished folders —
and the loose-log readers (a copied ``offsets/`` folder, one commit file, a sink's
``_spark_metadata``) with their one-line errors."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import fsspec
import pytest

from streamwatch.checkpoint.fs import FsspecStorage, Item, LocalStorage, Storage, StorageError, Tree, open_storage
from streamwatch.checkpoint.loose import (
    read_commit_file,
    read_commit_log,
    read_file_sink_log,
    read_file_source_log,
    read_offsets_log,
)
from streamwatch.checkpoint.reader import CheckpointError
from tests.helpers.fake_checkpoint import FakeCheckpoint


@pytest.fixture
def odd_folder(tmp_path) -> Path:
    """A folder with a file, a subfolder, a FIFO, a dangling link, a self-loop link and a
    link back to the folder itself."""
    root = tmp_path / "cp"
    (root / "sub").mkdir(parents=True)
    (root / "a").write_bytes(b"12345")
    (root / "sub" / "b").write_bytes(b"xy")
    os.mkfifo(root / "pipe")
    os.symlink(root / "gone", root / "dangling")
    os.symlink(root / "loop", root / "loop")
    os.symlink(root, root / "sub" / "up")
    return root


def test_local_listing_leaves_out_and_notes_loops(odd_folder):
    s = LocalStorage()
    items = {i.name: i for i in s.list(str(odd_folder))}
    assert items["a"] == Item("a", False, 5) and items["sub"] == Item("sub", True, 0)
    assert "dangling" not in items and "loop" not in items
    assert "pipe" in items  # listed (size 0); reading it is refused, see below
    problems = dict(s.take_problems())
    assert problems == {str(odd_folder / "loop"): "symlink loop"}
    assert s.take_problems() == []  # taken once
    sub = {i.name for i in s.list(str(odd_folder / "sub"))}
    assert sub == {"b"}
    assert s.take_problems() == [(str(odd_folder / "sub" / "up"), "symlink loop (links to a folder that contains it)")]


@pytest.mark.parametrize("sizes", [True, False])
def test_local_tree_with_and_without_sizes(odd_folder, sizes):
    s = LocalStorage()
    t = s.tree(str(odd_folder), sizes=sizes)
    assert sorted(t.files) == ["a", "pipe"] and list(t.dirs) == ["sub"] and t.dirs["sub"].files == ["b"]
    assert t.total() == ((3, 7) if sizes else (3, None))
    assert sorted(p for p, _ in s.take_problems()) == sorted([str(odd_folder / "loop"), str(odd_folder / "sub" / "up")])
    assert s.tree(str(odd_folder / "nope")) is None
    assert s.tree(str(odd_folder / "a")) is None  # a file is not a folder


def test_local_read_refuses_fifos_and_folders(odd_folder):
    s = LocalStorage()
    assert s.read(str(odd_folder / "a")) == b"12345"
    with pytest.raises(OSError, match=r"not a regular file \(a FIFO\)"):
        s.read(str(odd_folder / "pipe"))
    with pytest.raises(IsADirectoryError, match="is a folder, not a file"):
        s.read(str(odd_folder / "sub"))
    got = s.read_many([str(odd_folder / "a"), str(odd_folder / "missing")])
    assert got[0] == b"12345" and isinstance(got[1], FileNotFoundError)


def test_local_kind_names_and_mtime(odd_folder):
    s = LocalStorage()
    assert (s.kind(str(odd_folder)), s.kind(str(odd_folder / "a")), s.kind(str(odd_folder / "x"))) == ("dir", "file", None)
    with pytest.raises(StorageError, match=r"loop: symlink loop$"):
        s.kind(str(odd_folder / "loop"))
    with pytest.raises(StorageError, match="Not a directory"):
        s.kind(str(odd_folder / "a" / "b"))
    assert s.names(str(odd_folder / "missing")) is None and s.names(str(odd_folder / "a")) is None
    assert s.names(str(odd_folder / "loop")) is None
    assert s.take_problems() == [(str(odd_folder / "loop"), "symlink loop")]
    assert sorted(s.names(str(odd_folder / "sub"))) == ["b", "up"]
    assert s.list(str(odd_folder / "loop")) is None
    assert abs(s.mtime_ms(str(odd_folder / "a")) - time.time() * 1000) < 120_000
    assert s.mtime_ms(str(odd_folder / "missing")) is None


def test_tree_total_unknown_bytes_propagate():
    t = Tree(["a"], 3, {"x": Tree(["b"], None, {}), "y": Tree([], 0, {})})
    assert t.total() == (2, None)
    assert Tree(["a"], 3, {"y": Tree(["c", "d"], 4, {})}).total() == (3, 7)


@pytest.fixture
def mem():
    """A memory:// checkpoint folder of its own (the memory filesystem is process-wide)."""
    root = f"/sw-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{root}/offsets/0", b"zero")
    fs.pipe(f"{root}/offsets/1", b"one!")
    fs.pipe(f"{root}/state/0/0/1.delta", b"ddd")
    fs.makedirs(f"{root}/empty", exist_ok=True)
    yield root
    fs.rm(root, recursive=True)


def test_fsspec_storage_lists_reads_and_trees(mem):
    s, inner = open_storage(f"memory://{mem}/")
    assert isinstance(s, FsspecStorage) and inner == mem
    assert s.join(mem, "offsets") == f"{mem}/offsets"
    assert sorted((i.name, i.is_dir, i.size) for i in s.list(f"{mem}/offsets")) == [("0", False, 4), ("1", False, 4)]
    assert s.list(f"{mem}/missing") is None
    assert s.names(f"{mem}/offsets") == ["0", "1"] or sorted(s.names(f"{mem}/offsets")) == ["0", "1"]
    t = s.tree(mem)
    assert sorted(t.dirs) == ["empty", "offsets", "state"]
    assert sorted(t.dirs["offsets"].files) == ["0", "1"] and t.dirs["offsets"].bytes == 8
    assert t.dirs["state"].dirs["0"].dirs["0"].files == ["1.delta"]
    assert t.total() == (3, 11)
    assert s.tree(f"{mem}/missing") is None
    assert s.tree(f"{mem}/empty") == Tree([], 0, {})
    assert s.kind(mem) == "dir" and s.kind(f"{mem}/offsets/0") == "file" and s.kind(f"{mem}/nope") is None
    assert s.read(f"{mem}/offsets/1") == b"one!"
    assert abs(s.mtime_ms(f"{mem}/offsets/1") - time.time() * 1000) < 120_000
    assert s.mtime_ms(f"{mem}/nope") is None


def test_fsspec_parallel_reads_and_listings(mem):
    s, _ = open_storage(f"memory://{mem}")
    paths = [f"{mem}/offsets/0", f"{mem}/offsets/1", f"{mem}/nope", f"{mem}/state/0/0/1.delta"]
    got = s.read_many(paths)  # 4 paths: the thread pool
    assert got[0] == b"zero" and got[1] == b"one!" and isinstance(got[2], FileNotFoundError) and got[3] == b"ddd"
    assert s.read_many(paths[:2]) == [b"zero", b"one!"]
    trees = s.trees([f"{mem}/offsets", f"{mem}/state", f"{mem}/empty", f"{mem}/nope"])
    assert [t.total()[0] if t else None for t in trees] == [2, 1, 0, None]
    assert s.map_concurrent(lambda x: x * 2, [1, 2, 3, 4, 5]) == [2, 4, 6, 8, 10]


def test_open_storage_forms():
    s, inner = open_storage("file:///tmp/x")
    assert isinstance(s, LocalStorage) and inner == "/tmp/x"
    assert open_storage("file://")[1] == "/"
    assert isinstance(open_storage("relative/cp")[0], LocalStorage)
    with pytest.raises(StorageError) as e:
        open_storage("nosuchproto://bucket/cp")
    assert str(e.value).startswith("nosuchproto://bucket/cp: cannot open (") and "\n" not in str(e.value)


# --- loose logs ----------------------------------------------------------------------------

@pytest.fixture
def cp(tmp_path) -> FakeCheckpoint:
    fc = FakeCheckpoint(tmp_path / "cp", tmp_path / "sink")
    fc.plan(0, 1_700_000_000_000, files=["file:/landing/a.csv"])
    fc.commit(0, 1_700_000_001_000, outputs=[("file:/sink/part-0.parquet", 10)])
    fc.plan(1, 1_700_000_002_000, files=["file:/landing/b.csv", "file:/landing/c.csv"])
    return fc


def test_loose_logs_of_a_copied_checkpoint(cp):
    offsets, f1 = read_offsets_log(cp.root / "offsets")
    assert [e.batch_id for e in offsets] == [0, 1] and f1 == []
    assert offsets[1].timestamp_ms == 1_700_000_002_000
    commits, f2 = read_commit_log(str(cp.root / "commits"))
    assert [c.batch_id for c in commits] == [0] and f2 == []
    entry, f3 = read_commit_file(cp.root / "commits" / "0", batch_id=7)
    assert entry is not None and entry.batch_id == 7 and f3 == []
    src, f4 = read_file_source_log(cp.root / "sources" / "0")
    assert [e.path for e in src.entries] == ["file:/landing/a.csv", "file:/landing/b.csv", "file:/landing/c.csv"]
    sink, f5 = read_file_sink_log(cp.sink / "_spark_metadata")
    assert [e.path for e in sink.live_files] == ["file:/sink/part-0.parquet"] and not f4 and not f5


def test_loose_logs_unusable_paths(cp, tmp_path):
    with pytest.raises(CheckpointError) as e:
        read_offsets_log(tmp_path / "nope")
    assert str(e.value) == f"{tmp_path / 'nope'}: no such file or directory"
    with pytest.raises(CheckpointError) as e:
        read_commit_file(cp.root / "commits")
    assert str(e.value) == f"{cp.root / 'commits'}: not a file"
    os.symlink(tmp_path / "l", tmp_path / "l")
    with pytest.raises(CheckpointError, match="symlink loop"):
        read_commit_log(tmp_path / "l")
    with pytest.raises(CheckpointError, match="cannot open"):
        read_file_sink_log("nosuchproto://b/_spark_metadata")


def test_loose_offsets_log_with_a_stray_and_a_corrupt_file(cp):
    (cp.root / "offsets" / "2").write_text("v1\n{not json")
    (cp.root / "offsets" / ".1.crc").write_bytes(b"crc")
    (cp.root / "offsets" / "tmp-123").write_text("x")
    entries, findings = read_offsets_log(cp.root / "offsets")
    assert [e.batch_id for e in entries] == [0, 1]
    assert findings and all(f.message and "\n" not in f.message for f in findings)
    assert any("offsets" in (f.path or "") and "2" in (f.path or "") for f in findings)


class DictStorage(Storage):
    """A storage implementing only ``join``/``list``/``read``/``kind``: the interface's own
    ``tree``, ``trees``, ``names`` and ``mtime_ms`` work from those."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def join(self, *parts: str) -> str:
        return "/".join(parts)

    def list(self, path: str):
        pre = path.rstrip("/") + "/"
        below = [k[len(pre):] for k in self.files if k.startswith(pre)]
        if not below:
            return None
        names = {b.split("/")[0]: "/" in b for b in below}
        return [Item(n, d, 0 if d else len(self.files[pre + n])) for n, d in sorted(names.items())]

    def read(self, path: str) -> bytes:
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(path) from None

    def kind(self, path: str):
        return "file" if path in self.files else "dir" if self.list(path) else None


def test_storage_interface_defaults():
    s = DictStorage({"r/offsets/0": b"abc", "r/offsets/1": b"de", "r/state/0/1.delta": b"x"})
    t = s.tree("r")
    assert t.files == [] and sorted(t.dirs) == ["offsets", "state"] and t.total() == (3, 6)
    assert s.trees(["r/offsets", "r/nope"]) == [Tree(["0", "1"], 5, {}), None]
    assert s.names("r/offsets") == ["0", "1"] and s.names("r/nope") is None
    assert s.mtime_ms("r/offsets/0") is None  # unknown unless a storage tells
    got = s.read_many(["r/offsets/1", "r/x"])
    assert got[0] == b"de" and isinstance(got[1], FileNotFoundError)
