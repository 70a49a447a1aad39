"""Per-batch input/output/state look-ups (:mod:`streamwatch.analysis.batchio`) and the point
look-ups under them (:mod:`streamwatch.analysis.probe`), on files laid out as Spark writes
them: offsets of every source kind (file, Kafka, Delta, rate, LongOffset, unknown), a file
source's ``.compact`` tail, a file sink's compacted log, a Delta sink's ``_delta_log``
matched by its streaming ``txn``, state files of both providers; local and ``memory://``."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

import fsspec
import pytest

from streamwatch.analysis.batchio import DeltaSinkReader, FileSinkReader, SourceReader, StateReader, read_log_file
from streamwatch.analysis.probe import FileStat, Probe, ProbeError, same_place, storage_path
from streamwatch.checkpoint.logs import parse_offsets
from streamwatch.model.statestore import StateOperator, StatePartition

QID = "4f6d3e1a-0000-4000-8000-00000000c0de"


def offsets(batch_id: int, *lines: str) -> object:
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000 + batch_id, "conf": {}}
    entry, findings = parse_offsets(("v1\n" + json.dumps(meta) + "\n" + "\n".join(lines)).encode(), batch_id, f"offsets/{batch_id}")
    assert entry is not None and not findings
    return entry


def test_inputs_of_every_source_kind(tmp_path):
    prev = offsets(4, '{"logOffset":-1}', '{"events":{"0":10,"1":20}}',
                   '{"sourceVersion":1,"reservoirId":"tbl","reservoirVersion":3,"index":-1,"isStartingVersion":false}',
                   '{"offset":100,"timestamp":1}', '{"0":{"value":5,"runTimeMs":1},"1":{"value":7,"runTimeMs":1}}',
                   "41", "opaque-offset", "-")
    cur = offsets(5, '{"logOffset":-1}', '{"events":{"0":15,"1":20,"2":4}}',
                  '{"sourceVersion":1,"reservoirId":"tbl","reservoirVersion":6,"index":-1,"isStartingVersion":false}',
                  '{"offset":160,"timestamp":2}', '{"0":{"value":9,"runTimeMs":2},"1":{"value":10,"runTimeMs":2}}',
                  "50", "opaque-offset-2", "-")
    got = {i.source: i for i in SourceReader(Probe(str(tmp_path)), str(tmp_path)).inputs(cur, prev)}
    assert got["1"].kind == "kafka" and got["1"].offsets == {"events": {"0": 5, "1": 0, "2": 4}}
    assert got["2"].kind == "delta" and got["2"].versions == (3, 6) and got["2"].offset == "tbl"
    assert (got["3"].kind, got["3"].advanced) == ("rate", 60)
    assert (got["4"].kind, got["4"].advanced) == ("rate", 7)
    assert (got["5"].kind, got["5"].advanced) == ("number", 9)
    assert (got["6"].kind, got["6"].offset) == ("raw", "opaque-offset-2")
    assert got["7"].kind == "none"
    # the first batch: nothing to subtract
    first = {i.source: i for i in SourceReader(Probe(str(tmp_path)), str(tmp_path)).inputs(cur, None)}
    assert first["1"].offsets is None and first["2"].versions == (6, 6) and first["3"].advanced is None


def test_file_source_reads_batch_files_and_compact_tails(tmp_path):
    src = tmp_path / "cp" / "sources" / "0"
    src.mkdir(parents=True)
    land = tmp_path / "landing"
    land.mkdir()
    for name, size in (("a.csv", 3), ("b.csv", 5), ("c.csv", 7)):
        (land / name).write_bytes(b"x" * size)

    def row(name: str, batch: int) -> str:
        return json.dumps({"path": f"file://{land / name}", "timestamp": 1000 + batch, "batchId": batch})

    (src / "0").write_text("v1\n" + row("a.csv", 0))
    (src / "1").write_text("v1\n" + row("b.csv", 1) + "\nnot json\n")
    # a compaction: every earlier entry, then batch 2's own at the end
    (src / "2.compact").write_text("v1\n" + "\n".join([row("a.csv", 0), row("b.csv", 1), row("c.csv", 2), "{torn line", ""]))
    probe = Probe(str(tmp_path / "cp"))
    reader = SourceReader(probe, str(tmp_path / "cp"))
    b0 = reader.inputs(offsets(0, '{"logOffset":0}'), None)[0]
    assert (b0.files, b0.bytes, b0.file_mtimes_ms) == (1, 3, (1000,))
    b2 = reader.inputs(offsets(1, '{"logOffset":2}'), offsets(0, '{"logOffset":0}'))[0]
    assert b2.paths == (f"file://{land / 'b.csv'}", f"file://{land / 'c.csv'}") and b2.bytes == 12
    # a file archived away since: the size is unknown, the count stays
    (land / "c.csv").unlink()
    b2 = reader.inputs(offsets(1, '{"logOffset":2}'), offsets(0, '{"logOffset":0}'))[0]
    assert b2.files == 2 and b2.bytes is None
    assert SourceReader(probe, str(tmp_path / "cp"), file_sizes=False).inputs(offsets(0, '{"logOffset":0}'), None)[0].bytes is None
    # batch 7 whose previous offsets are gone: which log ids it read is not known (the source
    # log numbers its batches itself), so no count is made up
    b7 = reader.inputs(offsets(7, '{"logOffset":1}'), None)[0]
    assert b7.files is None and b7.paths == () and b7.offset == "logOffset 1"
    # a source with no offset yet in the previous batch (``-``): everything up to logOffset
    b1 = reader.inputs(offsets(1, '{"logOffset":1}'), offsets(0, "-"))[0]
    assert b1.files == 2
    # a no-data batch (logOffset unchanged) read nothing
    b3 = reader.inputs(offsets(3, '{"logOffset":2}'), offsets(2, '{"logOffset":2}'))[0]
    assert b3.files == 0 and b3.paths == ()
    assert read_log_file(probe, str(src), 9) is None
    (src / "3").write_text("v99\n{}")  # a log version this reader does not know
    assert read_log_file(probe, str(src), 3) is None


def _sink_row(path: str, size: int, mtime: int, action: str = "add") -> str:
    return json.dumps({"path": path, "size": size, "isDir": False, "modificationTime": mtime,
                       "blockReplication": 1, "blockSize": 1, "action": action})


def test_file_sink_batches_and_a_compaction(tmp_path):
    meta = tmp_path / "sink" / "_spark_metadata"
    meta.mkdir(parents=True)
    (meta / "0").write_text("v1\n" + _sink_row("file:/sink/p0.parquet", 10, 1_000))
    (meta / "1").write_text("v1\n" + "\n".join([_sink_row("file:/sink/p1.parquet", 20, 2_000),
                                               _sink_row("file:/sink/p0.parquet", 10, 2_000, "delete")]))
    (meta / "2.compact").write_text("v1\n" + "\n".join([
        _sink_row("file:///sink/p0.parquet", 10, 1_000), _sink_row("file:/sink/p1.parquet/", 20, 2_000),
        _sink_row("file:/sink/old.parquet", 5, 500), _sink_row("file:/sink/p2.parquet", 30, 3_500)]))
    reader = FileSinkReader(Probe(str(tmp_path)), str(tmp_path / "sink"))
    assert reader.output(0, 900).paths == ("file:/sink/p0.parquet",)
    out1 = reader.output(1, 1_900)
    assert (out1.files, out1.bytes) == (1, 20)  # the delete line is not output
    # the compact file re-lists 0 and 1 (seen, written differently) and an older file (before
    # the batch was planned): only batch 2's file is new
    out2 = reader.output(2, 3_200)
    assert (out2.files, out2.bytes, out2.paths, out2.sizes) == (1, 30, ("file:/sink/p2.parquet",), (30,))
    assert reader.output(3, None) is None


def test_delta_sink_versions_by_txn(tmp_path):
    log = tmp_path / "tbl" / "_delta_log"
    log.mkdir(parents=True)

    def commit(v: int, *actions: dict) -> None:
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in actions))

    commit(0, {"metaData": {"id": "table-1", "format": {"provider": "parquet"}}}, {"protocol": {}})
    commit(1, {"txn": {"appId": QID, "version": 0}}, {"add": {"path": "a"}}, {"add": {"path": "b"}})
    commit(2, {"txn": {"appId": "other-query", "version": 1}}, {"add": {"path": "x"}})
    commit(3, {"txn": {"appId": QID, "version": 1}}, {"add": {"path": "c"}})
    reader = DeltaSinkReader(Probe(str(tmp_path)), str(tmp_path / "tbl"), QID, history=100)
    assert reader.table_id == "table-1" and reader.latest_version is None
    out0 = reader.output(0)
    assert (out0.kind, out0.files, out0.bytes, out0.versions) == ("delta", 2, None, (1,))
    assert reader.output(1).versions == (3,) and reader.latest_version == 3
    commit(4, {"txn": {"appId": QID, "version": 2}}, {"add": {"path": "d"}})
    (log / f"{5:020d}.json").write_text("{torn")
    assert reader.output(2).versions == (4,)
    assert reader.latest_version == 5
    # only the last `history` versions are read again; no table id without its first commit
    late = DeltaSinkReader(Probe(str(tmp_path)), str(tmp_path / "tbl"), None, history=1)
    assert late.next_version == 4 and late.output(2).versions == (4,)
    empty = DeltaSinkReader(Probe(str(tmp_path)), str(tmp_path / "none"), QID, history=5)
    assert empty.table_id is None and empty.output(0).versions == ()


def test_state_usage_of_both_providers(tmp_path):
    hdfs_dir, rocks_dir = tmp_path / "state" / "0", tmp_path / "state" / "1"
    (hdfs_dir / "0").mkdir(parents=True)
    (hdfs_dir / "1" / "left").mkdir(parents=True)
    (hdfs_dir / "0" / "3.delta").write_bytes(b"x" * 10)
    (hdfs_dir / "0" / "3.snapshot").write_bytes(b"x" * 4)
    (hdfs_dir / "1" / "left" / "3.delta").write_bytes(b"x" * 6)
    (rocks_dir / "0").mkdir(parents=True)
    (rocks_dir / "0" / "3_u1.zip").write_bytes(b"z" * 100)
    (rocks_dir / "0" / "3_u1.changelog").write_bytes(b"c" * 8)
    (rocks_dir / "0" / "3.changelog").write_bytes(b"c" * 50)
    ops = [StateOperator(0, str(hdfs_dir), provider="hdfs", partitions=(StatePartition(0, "default"), StatePartition(1, "left"))),
           StateOperator(1, str(rocks_dir), provider="rocksdb", partitions=(StatePartition(0, "default"),))]
    reader = StateReader(Probe(str(tmp_path)), ops)
    a, b = reader.usage(2, None, {"1": {"0": ["u1"]}})
    assert (a.operator, a.version, a.files, a.bytes) == (0, 3, 3, 20)
    assert (b.files, b.bytes) == (2, 108)  # the committed unique id's files only
    _, b = reader.usage(2, None, None)
    assert (b.files, b.bytes) == (1, 50)
    unknown = StateReader(Probe(str(tmp_path)), [StateOperator(1, str(rocks_dir), provider="unknown", partitions=(StatePartition(0, "default"),))])
    assert unknown.usage(2, "rocksdb", None)[0].bytes == 50
    assert unknown.usage(2, None, None)[0].files == 0  # read as HDFS: no 3.delta there


# --- Probe ---------------------------------------------------------------------------------

def test_local_probe(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    (tmp_path / "d").mkdir()
    p = Probe(f"file://{tmp_path}/")
    assert p.local and p.root == str(tmp_path) and p.url("/x") == "/x"
    st = p.stat(str(tmp_path / "f"))
    assert st.size == 3 and abs(st.mtime_ms - time.time() * 1000) < 120_000
    assert p.stat(str(tmp_path / "d")) is None and p.stat(str(tmp_path / "nope")) is None
    assert p.read(str(tmp_path / "f")) == b"abc" and p.read(str(tmp_path / "d")) is None
    assert sorted(p.names(str(tmp_path))) == ["d", "f"] and p.names(str(tmp_path / "nope")) is None
    assert p.stat_url(f"file:{tmp_path / 'f'}") == st
    assert p.stat_url("s3a://bucket/key") is None and p.stat_url("relative/file") is None
    assert p.requests == 8  # one per stat/read/listing; URIs elsewhere cost nothing
    assert Probe("/").root == "/"


def test_memory_probe():
    root = f"/probe-{uuid.uuid4().hex}"
    fs = fsspec.filesystem("memory")
    fs.pipe(f"{root}/offsets/0", b"v1")
    fs.pipe(f"{root}/sub/deep/x", b"12345")
    try:
        p = Probe(f"memory://{root}/")
        assert not p.local and p.root == root and p.protocol == "memory"
        assert p.url(f"{root}/offsets/0") == f"memory://{root}/offsets/0"
        assert p.join(root, "offsets") == f"{root}/offsets"
        st = p.stat(f"{root}/sub/deep/x")
        assert st.size == 5 and abs(st.mtime_ms - time.time() * 1000) < 120_000  # memory's "created"
        assert p.stat(f"{root}/sub") is None and p.stat(f"{root}/nope") is None
        assert p.read(f"{root}/offsets/0") == b"v1" and p.read(f"{root}/nope") is None
        assert sorted(p.names(root)) == ["offsets", "sub"] and p.names(f"{root}/nope") is None
        assert sorted(p.find(root)) == [f"{root}/offsets/0", f"{root}/sub/deep/x"]
        assert p.stat_url(f"s3a://{root}/offsets/0") is None  # an S3 URI is not on memory://
    finally:
        fs.rm(root, recursive=True)
    with pytest.raises(ProbeError) as e:
        Probe("nosuchproto://bucket/cp")
    assert str(e.value).startswith("nosuchproto://bucket/cp: cannot open (")


def test_mtimes_and_uri_forms():
    assert storage_path("file:/a/b") == storage_path("file:///a/b") == "/a/b"
    assert storage_path("s3a://bucket/k") == "bucket/k" and storage_path("/x") == "/x"
    assert same_place("file:/x/a%20b/") == same_place("/x/a b") == "/x/a b"
    assert same_place("s3a://b/k") == same_place("s3://b/k/")
    assert FileStat(1, 2) == FileStat(1, 2)


def test_stat_url_of_a_folder_is_none(tmp_path):
    p = Probe(str(tmp_path))
    os.makedirs(tmp_path / "x", exist_ok=True)
    assert p.stat_url(f"file://{tmp_path / 'x'}") is None  # a folder
    assert Path(storage_path(f"file://{tmp_path}")) == tmp_path
