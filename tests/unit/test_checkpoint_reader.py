"""The checkpoint reader on synthetic checkpoints written in Spark's on-disk formats: every
health finding, bad input, the timeline, sink discovery, and that nothing is ever written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from streamwatch.checkpoint import CheckpointError, batch_timeline, filelog, read_checkpoint

QID = "11111111-2222-3333-4444-555555555555"
CONF = {"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}


def write_cp(root: Path, batches: int = 3, commits: int | None = None, wm=lambda b: 0, conf=lambda b: CONF, source_lines=lambda b: [f'{{"logOffset":{b}}}']) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "metadata").write_text(json.dumps({"id": QID}))
    (root / "offsets").mkdir(exist_ok=True)
    (root / "commits").mkdir(exist_ok=True)
    for b in range(batches):
        meta = {"batchWatermarkMs": wm(b), "batchTimestampMs": 1_700_000_000_000 + b * 1000, "conf": conf(b)}
        (root / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + "\n".join(source_lines(b)))
    for b in range(batches if commits is None else commits):
        (root / "commits" / str(b)).write_text(f'v1\n{{"nextBatchWatermarkMs":{wm(b)}}}')
    return root


def write_source_log(root: Path, batches: int, files_per_batch: int = 2, interval: int = 10) -> None:
    d = root / "sources" / "0"
    d.mkdir(parents=True)
    last_compact = -1
    for b in range(batches):
        if (b + 1) % interval == 0:
            lines = [json.dumps({"path": f"file:/in/f{x}-{y}.csv", "timestamp": 1000 + x, "batchId": x}) for x in range(b + 1) for y in range(files_per_batch)]
            (d / f"{b}.compact").write_text("v1\n" + "\n".join(lines))
            last_compact = b
        else:
            lines = [json.dumps({"path": f"file:/in/f{b}-{y}.csv", "timestamp": 1000 + b, "batchId": b}) for y in range(files_per_batch)]
            (d / str(b)).write_text("v1\n" + "\n".join(lines))
    assert last_compact >= -1


def write_state(root: Path, op: int, partitions: int, versions, ext: str = "delta", name: str = "stateStoreSave") -> None:
    base = root / "state" / str(op)
    (base / "_metadata").mkdir(parents=True)
    info = {"operatorInfo": {"operatorId": op, "operatorName": name}, "stateStoreInfo": [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": partitions}]}
    (base / "_metadata" / "metadata").write_text("v1\n" + json.dumps(info))
    for p in range(partitions):
        (base / str(p)).mkdir()
        for v in versions(p):
            (base / str(p) / f"{v}.{ext}").write_bytes(b"x" * 10)


def codes(cp):
    return {f.code: f for f in cp.findings}


def test_healthy_stateless_checkpoint(tmp_path, unchanged):
    cp_dir = unchanged(write_cp(tmp_path / "cp", 3))
    cp = read_checkpoint(cp_dir)
    assert cp.query_id == QID
    assert (cp.latest_batch_id, cp.last_committed_batch_id, cp.in_flight_batch_id) == (2, 2, None)
    assert cp.findings == ()
    assert cp.offsets[-1].parsed[0].log_offset == 2


def test_in_flight_batch(tmp_path, unchanged):
    cp = read_checkpoint(unchanged(write_cp(tmp_path / "cp", 4, commits=3)))
    f = codes(cp)["in-flight-batch"]
    assert f.severity == "info" and "batch 3 planned, not committed" in f.message and f.path.endswith("offsets/3")
    assert cp.in_flight_batch_id == 3


def test_commits_more_than_one_behind(tmp_path, unchanged):
    cp = read_checkpoint(unchanged(write_cp(tmp_path / "cp", 5, commits=2)))
    assert codes(cp)["commits-behind"].severity == "error"


def test_commit_without_offsets_and_gaps(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 3)
    (root / "commits" / "5").write_text('v1\n{"nextBatchWatermarkMs":0}')
    c = codes(read_checkpoint(unchanged(root)))
    assert c["commit-without-offsets"].severity == "error"
    assert "3–4" in c["commits-gap"].message


def test_unknown_log_version_and_truncated_file(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 3)
    (root / "offsets" / "2").write_text('v9\n{"batchWatermarkMs":0}\n1')
    (root / "commits" / "1").write_text('v1\n{"nextBatchWatermark')
    cp = read_checkpoint(unchanged(root))
    c = codes(cp)
    assert c["unknown-log-version"].severity == "error" and "v9" in c["unknown-log-version"].message
    assert c["unparsable-file"].path.endswith("commits/1")
    assert cp.latest_batch_id == 2  # listed even though unparsable
    assert [e.batch_id for e in cp.offsets] == [0, 1]


def test_empty_and_binary_files_are_findings(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 3)
    (root / "offsets" / "1").write_bytes(b"")
    (root / "offsets" / "2").write_bytes(os.urandom(64) + b"\x00")
    c = codes(read_checkpoint(unchanged(root)))
    assert c["empty-file"].path.endswith("offsets/1")
    assert c["unparsable-file"].path.endswith("offsets/2")


def test_conf_drift(tmp_path, unchanged):
    conf = lambda b: {**CONF, "spark.sql.shuffle.partitions": "2" if b < 2 else "8"}  # noqa: E731
    f = codes(read_checkpoint(unchanged(write_cp(tmp_path / "cp", 4, conf=conf))))["conf-drift"]
    assert f.severity == "error" and "from 2 to 8" in f.message and "batch 1 and 2" in f.message


def test_watermark_stalled(tmp_path, unchanged):
    stalled = read_checkpoint(unchanged(write_cp(tmp_path / "a", 10, wm=lambda b: min(b, 3) * 1000)))
    assert codes(stalled)["watermark-stalled"].severity == "warning"
    moving = read_checkpoint(unchanged(write_cp(tmp_path / "b", 10, wm=lambda b: b * 1000)))
    assert "watermark-stalled" not in codes(moving)
    none = read_checkpoint(unchanged(write_cp(tmp_path / "c", 10, wm=lambda b: 0)))
    assert "watermark-stalled" not in codes(none)


def test_state_versions_missing_and_orphans(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 3)  # committed batch 2 → needs state version 3
    write_state(root, 0, 3, lambda p: range(1, 4) if p != 1 else range(1, 3))
    write_state(root, 1, 2, lambda p: range(1, 8))
    cp = read_checkpoint(unchanged(root))
    missing = [f for f in cp.findings if f.code == "state-version-missing"]
    assert len(missing) == 1 and "partition 1" in missing[0].message and "version 3" in missing[0].message
    orphan = codes(cp)["state-orphan-versions"]
    assert "4–7" in orphan.message and "operator 1" in orphan.message
    op0, op1 = cp.state
    assert (op0.name, op0.provider, op0.num_partitions, op0.versions) == ("stateStoreSave", "hdfs", 3, (1, 2))
    assert op1.bytes == 2 * 7 * 10 + len((root / "state/1/_metadata/metadata").read_bytes())
    rows = batch_timeline(cp)
    assert [r.state_version for r in rows] == [True, True, False]


def test_rocksdb_layout_with_join_stores(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 2)
    base = root / "state" / "0" / "0"
    for store in ("left-keyToNumValues", "right-keyToNumValues"):
        (base / store / "SSTs").mkdir(parents=True)
        (base / store / "SSTs" / "000001-abc.sst").write_bytes(b"s" * 100)
        (base / store / "2_6f1e6a2e-0000-4000-8000-000000000000.zip").write_bytes(b"z" * 5)
        (base / store / "1.changelog").write_bytes(b"c")
    (root / "state" / "0" / "_stateSchema" / "default").mkdir(parents=True)
    (root / "state" / "0" / "_stateSchema" / "default" / "0_abc").write_bytes(b"{}")
    (op,) = read_checkpoint(unchanged(root)).state
    assert op.provider == "rocksdb"
    assert op.store_names == ("left-keyToNumValues", "right-keyToNumValues")
    assert all(p.versions == (1, 2) and p.snapshot_versions == (2,) and p.bytes == 106 for p in op.partitions)
    assert op.schema_files == ("_stateSchema/default/0_abc",)


def test_stray_and_temporary_files(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 2)
    (root / "notes.txt").write_text("hi")
    (root / "offsets" / ".2.7d5c1d52-tmp.tmp").write_text("v1")
    (root / "offsets" / ".0.crc").write_bytes(b"crc")
    (root / "commits" / "backup").write_text("x")
    found = [(f.code, Path(f.path).name) for f in read_checkpoint(unchanged(root)).findings]
    assert ("stray-file", "notes.txt") in found and ("stray-file", "backup") in found
    assert ("temporary-file", ".2.7d5c1d52-tmp.tmp") in found
    assert not any(name == ".0.crc" for _, name in found)


def test_source_log_compaction_and_timeline(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 25)
    write_source_log(root, 25, files_per_batch=2)
    unchanged(root)
    cp = read_checkpoint(root)
    (log,) = cp.sources
    assert log.compact_batch_ids == (9, 19) and log.compact_interval == 10
    assert len(log.entries) == 50 and log.entry_count == 50
    assert {e.batch_id for e in log.entries} == set(range(25))
    rows = batch_timeline(cp)
    assert len(rows) == 25 and all(r.files_read == 2 and r.state_version is None and r.sink_entry is None for r in rows)
    assert rows[3].timestamp_ms == 1_700_000_003_000
    summary = read_checkpoint(root, full=False)
    assert summary.sources[0].entry_count == 50 and summary.sources[0].entries == () and not summary.complete


def test_compaction_growth(tmp_path, monkeypatch, unchanged):
    root = write_cp(tmp_path / "cp", 20)
    write_source_log(root, 20)
    monkeypatch.setattr(filelog, "COMPACT_GROWTH_BYTES", 100)
    f = codes(read_checkpoint(unchanged(root)))["compaction-growth"]
    assert f.path.endswith("19.compact") and "every 10 batches" in f.message


def test_file_sink_discovered_in_a_workspace_layout(tmp_path, unchanged):
    root = write_cp(tmp_path / "ws" / "checkpoints" / "p" / "gold", 3)
    meta = tmp_path / "ws" / "tables" / "p" / "gold" / "_spark_metadata"
    meta.mkdir(parents=True)
    for b in range(2):
        (meta / str(b)).write_text(f'v1\n{{"path":"file:/t/part-{b}.parquet","size":10,"isDir":false,"modificationTime":1,"blockReplication":1,"blockSize":1,"action":"add"}}')
    unchanged(meta)
    cp = read_checkpoint(unchanged(root))
    assert cp.sink is not None and cp.sink.latest_batch_id == 1
    assert cp.sink_path.endswith("tables/p/gold")
    assert codes(cp)["sink-behind-commits"].severity == "error"
    assert [r.sink_entry for r in batch_timeline(cp)] == [True, True, False]


def test_delta_sink_log(tmp_path, unchanged):
    root = write_cp(tmp_path / "cp", 2)
    log = tmp_path / "table" / "_delta_log"
    log.mkdir(parents=True)
    (log / f"{0:020d}.json").write_text('{"protocol":{}}\n{"metaData":{}}\n{"commitInfo":{"operation":"CREATE TABLE"}}')
    for v, b in ((1, 0), (2, 1)):
        (log / f"{v:020d}.json").write_text(
            json.dumps({"txn": {"appId": QID, "version": b}}) + "\n" + json.dumps({"add": {"path": f"p{v}"}}) + "\n"
            + json.dumps({"remove": {"path": "old"}}) + "\n"
            + json.dumps({"commitInfo": {"timestamp": 5, "operation": "STREAMING UPDATE", "operationParameters": {"queryId": QID, "epochId": str(b)}}})
        )
    cp = read_checkpoint(unchanged(root), sink=unchanged(tmp_path / "table"))
    d = cp.delta_sink
    assert d.latest_version == 2 and d.last_txn == (QID, 1)
    assert [(c.adds, c.removes, c.epoch_id) for c in d.commits[1:]] == [(1, 1, 0), (1, 1, 1)]
    assert [r.delta_versions for r in batch_timeline(cp)] == [(1,), (2,)]


def test_v2_offset_map_and_sources(tmp_path, unchanged):
    root = tmp_path / "cp"
    (root / "offsets").mkdir(parents=True)
    (root / "metadata").write_text(json.dumps({"id": QID}))
    (root / "offsets" / "0").write_text(
        'v2\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n'
        'kafka:{"t":{"0":5,"1":7}}\n'
        'delta:{"sourceVersion":1,"reservoirId":"r-1","reservoirVersion":12,"index":-1,"isStartingVersion":false}\n'
        'rate:{"offset":40,"timestamp":1700000000000}\n'
        "none:-\n"
    )
    e = read_checkpoint(unchanged(root)).offsets[0]
    assert e.source_ids == ("kafka", "delta", "rate", "none")
    kinds = [p.kind if p else None for p in e.parsed]
    assert kinds == ["kafka", "delta", "rate", None]
    assert e.parsed[1].summary() == "delta r-1 v12 index -1"
    assert e.parsed[0].summary() == "t[0:5 1:7]"


@pytest.mark.parametrize("case", ["missing", "file", "not-a-checkpoint", "symlink-loop", "empty-dir"])
def test_unusable_path_raises_checkpoint_error(tmp_path, case):
    p = tmp_path / "x"
    if case == "file":
        p.write_text("hello")
    elif case in ("not-a-checkpoint", "empty-dir"):
        p.mkdir()
        if case == "not-a-checkpoint":
            (p / "data.csv").write_text("a,b")
    elif case == "symlink-loop":
        os.symlink(tmp_path / "y", p)
        os.symlink(p, tmp_path / "y")
    with pytest.raises(CheckpointError) as e:
        read_checkpoint(p)
    expected = {"missing": "no such file", "file": "not a directory", "not-a-checkpoint": "not a checkpoint", "symlink-loop": "symlink loop", "empty-dir": "not a checkpoint"}[case]
    assert expected in str(e.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_permission_denied(tmp_path):
    root = write_cp(tmp_path / "cp", 2)
    (root / "offsets" / "1").chmod(0)
    try:
        assert codes(read_checkpoint(root))["unreadable-file"].path.endswith("offsets/1")
        root.chmod(0)
        with pytest.raises(CheckpointError, match="permission denied"):
            read_checkpoint(root)
    finally:
        root.chmod(0o755)
        (root / "offsets" / "1").chmod(0o644)


def test_file_url(tmp_path, unchanged):
    root = unchanged(write_cp(tmp_path / "cp", 2))
    cp = read_checkpoint(f"file://{root}")
    assert cp.latest_batch_id == 1 and cp.query_id == QID


def test_reading_while_a_writer_renames_and_purges(tmp_path):
    """Spark writes ``.N.<uuid>.tmp`` then renames it to ``N`` and purges old batches; a read
    racing with that never raises."""
    import threading

    root = write_cp(tmp_path / "cp", 5)
    write_source_log(root, 12)
    stop = threading.Event()

    def writer():
        b = 5
        while not stop.is_set():
            for log in ("offsets", "commits"):
                tmp = root / log / f".{b}.abc.tmp"
                tmp.write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"logOffset":1}' if log == "offsets" else 'v1\n{}')
                tmp.rename(root / log / str(b))
                old = root / log / str(b - 3)
                old.unlink(missing_ok=True)
            b += 1

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    import time

    seen: set[int | None] = set()
    reads = 0
    deadline = time.monotonic() + 120  # generous: only a writer that never runs gets here
    try:
        while reads < 200 or len(seen) < 2:  # until the log moved under us at least once
            assert time.monotonic() < deadline, "the writer never moved the log while we read"
            reads += 1
            cp = read_checkpoint(root)
            rows = batch_timeline(cp)
            # every read is a consistent picture: batch ids ascending, the latest one listed
            assert [r.batch_id for r in rows] == sorted(set(cp.offset_batch_ids) | set(cp.commit_batch_ids))
            assert cp.latest_batch_id == max(cp.offset_batch_ids, default=None)
            seen.add(cp.latest_batch_id)
    finally:
        stop.set()
        t.join(5)
    assert not t.is_alive()
    assert reads >= 200 and len(seen) >= 2


def test_crash_during_the_first_offsets_write_is_an_error(tmp_path, unchanged):
    """kill -9 while Spark writes offsets/0 leaves only ``offsets/.0.<uuid>.tmp``; Spark 4 then
    refuses to restart (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY), so it is an error."""
    root = write_cp(tmp_path / "cp", 0)
    (root / "offsets" / ".0.5b1c3c4e-0d4a-4e57-9a36-6f9f1b0e1c11.tmp").write_text("v1\n")
    c = codes(read_checkpoint(unchanged(root)))
    assert c["offsets-not-empty-at-batch-0"].severity == "error"
    assert c["offsets-not-empty-at-batch-0"].path == str(root / "offsets")
    healthy = write_cp(tmp_path / "ok", 0)
    assert "offsets-not-empty-at-batch-0" not in codes(read_checkpoint(healthy))
