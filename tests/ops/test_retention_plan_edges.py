"""The retention plan's edge cases on checkpoints laid out on disk (no JVM): RocksDB stores
(``.zip`` metadata naming SST files, orphan and freed SSTs, an unreadable zip), HDFS stores
too young to clean, without snapshots, in a named store, empty; minBatchesToRetain from the
offsets conf; file logs compacting at the conf's interval. The Spark-checked rules live in
``test_ops_retention.py``; these pin the arithmetic where Spark is not run."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from streamwatch.checkpoint import read_checkpoint
from streamwatch.checkpoint.fs import LocalStorage
from streamwatch.checkpoint.ops.retention import plan
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_700_000_000_000


def rocksdb_zip(ssts: list[str]) -> bytes:
    """A RocksDB checkpoint zip as ``RocksDBFileManager`` writes it: ``metadata`` is ``v1``
    then JSON naming the SST files in ``SSTs/``."""
    meta = {"sstFiles": [{"localFileName": f"{i:06d}.sst", "dfsSstFileName": n, "sizeBytes": 10}
                         for i, n in enumerate(ssts)], "numKeys": 1}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("metadata", "v1\n" + json.dumps(meta))
        z.writestr("OPTIONS-000001", "opts")
    return buf.getvalue()


def checkpoint(root: Path, batches: int, conf: dict[str, str] | None = None) -> FakeCheckpoint:
    fc = FakeCheckpoint(root / "cp", root / "sink")
    for b in range(batches):
        fc.plan(b, T0 + 1000 * b, files=[f"file:/landing/{b}.csv"])
        fc.commit(b, T0 + 1000 * b + 500, outputs=[(f"file:/sink/part-{b}.parquet", 100)])
    if conf is not None:
        last = fc.root / "offsets" / str(batches - 1)
        head, meta, offset = last.read_text().split("\n")
        m = json.loads(meta)
        m["conf"].update(conf)
        last.write_text("\n".join([head, json.dumps(m), offset]))
    return fc


def write(folder: Path, name: str, size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(b"x" * size)


def make_plan(fc: FakeCheckpoint, m: int | None = None) -> dict:
    cp = read_checkpoint(fc.root, sink=fc.sink)
    return plan(LocalStorage(), str(fc.root), cp, m)


def test_rocksdb_store_versions_and_ssts(tmp_path):
    fc = checkpoint(tmp_path, 6)
    store = fc.root / "state" / "0" / "0"
    (store / "SSTs").mkdir(parents=True)
    for n in ("a-1.sst", "b-2.sst", "c-3.sst", "orphan-9.sst"):
        write(store / "SSTs", n, 1000)
    (store / "2.zip").write_bytes(rocksdb_zip(["a-1.sst"]))
    (store / "4.zip").write_bytes(rocksdb_zip(["a-1.sst", "b-2.sst"]))
    (store / "6.zip").write_bytes(rocksdb_zip(["b-2.sst", "c-3.sst"]))
    (store / "5.zip").write_bytes(b"PK not really a zip")
    for v in range(1, 7):
        write(store, f"{v}.changelog", 50)
    doc = make_plan(fc, 3)
    [op] = doc["state"]
    assert op["provider"] == "rocksdb"
    [s] = op["stores"]
    # next batch commits version 7; versions below 7 - 3 + 1 = 5 go, with SSTs only they name
    assert (s["latest_version"], s["planned_at_version"], s["earliest_version_kept"]) == (6, 7, 5)
    assert s["delete_next"] == ["1.changelog", "2.zip", "2.changelog", "3.changelog", "4.zip", "4.changelog",
                                "SSTs/a-1.sst"]
    zips = (store / "2.zip").stat().st_size + (store / "4.zip").stat().st_size
    assert s["delete_bytes"] == zips + 4 * 50 + 1000
    assert s["orphan_ssts"] == ["SSTs/orphan-9.sst"] and s["orphan_bytes"] == 1000
    assert s["unreadable_zips"] == ["5.zip"]
    assert op["orphan_bytes"] == doc["orphan_bytes"] == 1000
    assert doc["delete_bytes"] >= s["delete_bytes"]


def test_rocksdb_zip_without_usable_metadata_is_unreadable(tmp_path):
    fc = checkpoint(tmp_path, 2)
    store = fc.root / "state" / "0" / "0"
    store.mkdir(parents=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("metadata", "v1\n{broken json")
    (store / "1.zip").write_bytes(buf.getvalue())
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("other", "no metadata entry")
    (store / "2.zip").write_bytes(buf.getvalue())
    os.mkfifo(store / "3.zip")  # not a regular file: unreadable, never a hang
    (store / "SSTs").mkdir()
    (fc.root / "state" / "0" / "1" / "SSTs").mkdir(parents=True)  # a store with no version yet
    stores = make_plan(fc, 100)["state"][0]["stores"]
    s = stores[0]
    assert s["unreadable_zips"] == ["1.zip", "2.zip", "3.zip"]  # in version order
    assert s["delete_next"] == [] and s["earliest_version_kept"] == 1  # too young to clean
    assert stores[1]["partition"] == 1 and stores[1]["latest_version"] is None and stores[1]["orphan_ssts"] == []


def test_hdfs_store_with_snapshot_in_a_named_store(tmp_path):
    fc = checkpoint(tmp_path, 5)
    store = fc.root / "state" / "0" / "1" / "left-keyToNumValues"
    for v in range(1, 6):
        write(store, f"{v}.delta", 10 * v)
    write(store, "3.snapshot", 7)
    write(store, "1.snapshot", 3)
    [op] = make_plan(fc, 2)["state"]
    [s] = op["stores"]
    assert (s["partition"], s["store"]) == (1, "left-keyToNumValues")
    # version 6 next; E = 4 loads from snapshot 3: versions 1 and 2 go (1.snapshot before 1.delta)
    assert s["earliest_version_kept"] == 3
    assert s["delete_next"] == ["1.snapshot", "2.delta"] and s["delete_bytes"] == 3 + 20
    assert s["delete_after_next"] == ["1.delta"] and s["after_next_bytes"] == 10
    assert op["after_next_bytes"] == 10


@pytest.mark.parametrize(("m", "kept", "deleted"), [
    (10, 1, []),   # E = 6 - 10 < 1: nothing to clean yet
    (2, 1, []),    # no snapshot at or before E = 4: loading 4 needs every delta from 1
])
def test_hdfs_store_nothing_to_delete(tmp_path, m, kept, deleted):
    fc = checkpoint(tmp_path, 5)
    store = fc.root / "state" / "0" / "0"
    for v in range(1, 6):
        write(store, f"{v}.delta", 5)
    [s] = make_plan(fc, m)["state"][0]["stores"]
    assert s["earliest_version_kept"] == kept and s["delete_next"] == deleted and s["delete_bytes"] == 0


def test_store_folder_without_state_files(tmp_path):
    fc = checkpoint(tmp_path, 2)
    write(fc.root / "state" / "0" / "0" / "_metadata", "schema", 4)
    write(fc.root / "state" / "0" / "0", "1.delta", 4)
    (fc.root / "state" / "0" / "1").mkdir()
    [op] = make_plan(fc, 1)["state"]
    empty = next(s for s in op["stores"] if s["partition"] == 1)
    assert empty["latest_version"] is None and empty["delete_next"] == [] and empty["delete_bytes"] == 0


def test_min_batches_and_compact_interval_from_the_offsets_conf(tmp_path):
    conf = {"spark.sql.streaming.minBatchesToRetain": "2",
            "spark.sql.streaming.fileSource.log.compactInterval": "4",
            "spark.sql.streaming.fileSink.log.compactInterval": "4"}
    fc = checkpoint(tmp_path, 7, conf)
    doc = make_plan(fc)
    assert (doc["min_batches_to_retain"], doc["min_batches_source"]) == (2, "offsets conf")
    bl = doc["batch_logs"]
    assert bl["next_batch"] == 7 and bl["purge_below"] == 5
    assert bl["offsets"]["delete_next"] == [0, 1, 2, 3, 4] and bl["offsets"]["kept"] == [5, 6]
    assert bl["commits"]["delete_bytes"] == sum((fc.root / "commits" / str(b)).stat().st_size for b in range(5))
    logs = {lg["kind"]: lg for lg in doc["file_logs"]}
    for kind in ("source", "sink"):
        lg = logs[kind]
        assert lg["compact_interval"] == 4 and lg["latest_batch"] == 6 and lg["latest_compact"] is None
        assert lg["next_compact"] == 7  # (7 + 1) % 4 == 0
        # after batch 7, M = 8 - 2 = 6: files below 6 - 6 % 4 - 1 = 3 are cleaned
        assert lg["delete_below"] == 3 and lg["delete_next"] == ["0", "1", "2"]
        assert lg["growth_per_compaction_bytes"] > 0
        assert lg["next_compact_bytes_estimate"] >= lg["next_compact_bytes_min"] > 0
    never = doc["never"]
    assert any("compact files only grow" in n for n in never)


def test_min_batches_not_a_number_falls_back_to_the_default(tmp_path):
    fc = checkpoint(tmp_path, 3, {"spark.sql.streaming.minBatchesToRetain": "lots"})
    doc = make_plan(fc)
    assert (doc["min_batches_to_retain"], doc["min_batches_source"]) == (100, "default")
    assert doc["batch_logs"]["purge_below"] is None and doc["batch_logs"]["offsets"]["delete_next"] == []
    assert doc["delete_bytes"] == 0


def test_compacted_file_logs(tmp_path):
    fc = checkpoint(tmp_path, 5)
    sink = fc.sink / "_spark_metadata"
    # batch 2 compacted 0..2 (interval 3); 0, 1, 2 removed as Spark's cleanup does
    rows = [(sink / str(b)).read_text().split("\n", 1)[1] for b in range(3)]
    (sink / "2.compact").write_text("v1\n" + "\n".join(rows))
    for b in range(3):
        (sink / str(b)).unlink()
    doc = make_plan(fc, 1)
    lg = next(x for x in doc["file_logs"] if x["kind"] == "sink")
    assert lg["compact_interval"] == 3 and lg["latest_compact"] == 2
    assert lg["latest_compact_bytes"] == (sink / "2.compact").stat().st_size
    assert lg["next_compact"] == 5
    # after batch 5, M = 6 - 1 = 5: ids below 5 - 5 % 3 - 1 = 2 (none left but the compact file)
    assert lg["delete_below"] == 2 and lg["delete_next"] == []


def test_a_checkpoint_without_batches(tmp_path):
    fc = FakeCheckpoint(tmp_path / "cp")
    doc = make_plan(fc)
    assert doc["batch_logs"]["next_batch"] is None and doc["batch_logs"]["offsets"]["kept"] is None
    assert doc["state"] == [] and doc["delete_bytes"] == 0
    assert all(lg["next_compact"] is None for lg in doc["file_logs"])


def test_rocksdb_changelog_store_keeps_from_the_newest_zip(tmp_path):
    """With changelogs the next commit writes no zip: Spark keeps from the newest zip at or
    below V - minBatches + 1 (every changelog from it on), and deletes nothing at all while no
    zip lies below that one."""
    fc = checkpoint(tmp_path, 6)
    store = fc.root / "state" / "0" / "0"
    store.mkdir(parents=True)
    (store / "2.zip").write_bytes(rocksdb_zip([]))
    for v in range(1, 7):
        write(store, f"{v}.changelog", 50)
    [s] = make_plan(fc, 2)["state"][0]["stores"]
    assert s["earliest_version_kept"] == 1 and s["delete_next"] == []  # no zip below 2
    (store / "1.zip").write_bytes(rocksdb_zip([]))
    (store / "4.zip").write_bytes(rocksdb_zip([]))
    [s] = make_plan(fc, 2)["state"][0]["stores"]  # V = 7: newest zip at or below 6 is 4
    assert s["earliest_version_kept"] == 4
    assert s["delete_next"] == ["1.zip", "1.changelog", "2.zip", "2.changelog", "3.changelog"]


def test_rocksdb_cap_per_maintenance(tmp_path):
    fc = checkpoint(tmp_path, 6)
    store = fc.root / "state" / "0" / "0"
    store.mkdir(parents=True)
    for v in range(1, 7):
        (store / f"{v}.zip").write_bytes(rocksdb_zip([]))
    cp = read_checkpoint(fc.root, sink=fc.sink)
    capped = plan(LocalStorage(), str(fc.root), cp, 2, None, 1)
    [s] = capped["state"][0]["stores"]
    assert capped["max_versions_per_maintenance"] == 1
    assert s["earliest_version_kept"] == 2 and s["delete_next"] == ["1.zip"]
    [s] = plan(LocalStorage(), str(fc.root), cp, 2, None, 0)["state"][0]["stores"]
    assert s["delete_next"] == []
    [s] = make_plan(fc, 2)["state"][0]["stores"]  # no cap: below 7 - 2 + 1 = 6
    assert s["earliest_version_kept"] == 6 and s["delete_next"] == [f"{v}.zip" for v in range(1, 6)]
