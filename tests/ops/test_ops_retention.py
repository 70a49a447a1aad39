"""`streamwatch retention`: the plan, then one more batch, and Spark deletes exactly what the
plan said (offsets, commits, the file source log, the file sink log, HDFS and RocksDB state)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "retention"

# Small numbers so one more batch purges something; deletion synchronous and without delay.
CONFS = {
    "spark.sql.streaming.minBatchesToRetain": "3",
    "spark.sql.streaming.asyncLogPurge.enabled": "false",
    "spark.sql.streaming.fileSink.log.compactInterval": "3",
    "spark.sql.streaming.fileSink.log.cleanupDelay": "0",
    "spark.sql.streaming.fileSource.log.compactInterval": "3",
    "spark.sql.streaming.fileSource.log.cleanupDelay": "0",
}


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")}


@pytest.mark.spark
def test_spark_deletes_exactly_what_the_plan_predicted(mini_query, unchanged):
    q = mini_query(stateful=False)
    q.land(8)
    q.run(CONFS)  # batches 0..7
    folders = {
        "offsets": q.cp / "offsets",
        "commits": q.cp / "commits",
        "source": q.cp / "sources" / "0",
        "sink": q.out / "_spark_metadata",
    }
    with unchanged.around(q.out):
        r = CliRunner().invoke(main, ["retention", str(q.cp), "--min-batches", "3", "--json"])
        text = CliRunner().invoke(main, ["retention", str(q.cp), "--min-batches", "3"])
    assert r.exit_code == 0, r.output
    assert text.exit_code == 0 and "next batch 8 purges offsets/commits below 5" in text.output
    plan = json.loads(r.stdout)
    assert plan["schema"] == "streamwatch.retention/1"
    assert plan["min_batches_to_retain"] == 3 and plan["min_batches_source"] == "option"
    before = {k: _names(v) for k, v in folders.items()}

    q.land(1)
    q.run(CONFS)  # batch 8
    after = {k: _names(v) for k, v in folders.items()}
    deleted = {k: before[k] - after[k] for k in folders}

    bl = plan["batch_logs"]
    assert bl["next_batch"] == 8
    assert deleted["offsets"] == {str(b) for b in bl["offsets"]["delete_next"]} == {"4"}
    assert deleted["commits"] == {str(b) for b in bl["commits"]["delete_next"]} == {"4"}
    logs = {lg["kind"]: lg for lg in plan["file_logs"]}
    assert deleted["source"] == set(logs["source"]["delete_next"])
    assert deleted["sink"] == set(logs["sink"]["delete_next"]) == {"2.compact", "3", "4"}
    for kind in ("source", "sink"):
        lg = logs[kind]
        assert lg["compact_interval"] == 3 and lg["next_compact"] == 8
        compact = folders[kind] / "8.compact"
        assert compact.is_file()
        assert compact.stat().st_size >= lg["next_compact_bytes_min"]
    assert plan["delete_bytes"] > 0


# State maintenance made deterministic: with unloadOnCommit, each task runs the provider's
# maintenance (snapshot, then cleanup) right after its commit (StateStoreRDD's completion
# listener → StateStore.doMaintenanceAndUnload), before the batch completes; no timer involved.
# One version per batch (no no-data batches); a snapshot every 3 deltas.
STATE_CONFS = {
    **CONFS,
    "spark.sql.streaming.stateStore.unloadOnCommit": "true",
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}


def _state_files(cp: Path) -> dict[str, set[str]]:
    """``<operator>/<partition>`` → the state files Spark wrote there (no checksums): HDFS
    deltas and snapshots; RocksDB zips, changelogs and ``SSTs/…`` files."""
    out: dict[str, set[str]] = {}
    for p in (cp / "state").glob("*/*"):
        if p.is_dir() and p.name.isdigit():
            out[f"{p.parent.name}/{p.name}"] = _files(p) | {f"SSTs/{name}" for name in _files(p / "SSTs")}
    return out


def _files(folder: Path) -> set[str]:
    """Names of the files in ``folder`` (none when it is missing), without hidden ones."""
    if not folder.is_dir():
        return set()
    return {f.name for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")}


@pytest.mark.spark
def test_spark_state_maintenance_deletes_exactly_what_the_plan_predicted(mini_query, unchanged):
    q = mini_query(stateful=True)
    q.land(8)
    q.run(STATE_CONFS)  # batches 0..7: state versions 1..8, each maintained after its commit
    before = _state_files(q.cp)
    assert set(before) == {"0/0", "0/1"}
    with unchanged.around(q.out):
        r = CliRunner().invoke(main, ["retention", str(q.cp), "--min-batches", "3", "--json"])
        text = CliRunner().invoke(main, ["retention", str(q.cp), "--min-batches", "3"])
    assert r.exit_code == 0 and text.exit_code == 0, r.output
    plan = json.loads(r.stdout)
    [op] = plan["state"]
    assert op["provider"] == "hdfs" and op["delete_bytes"] > 0
    stores = {f"0/{s['partition']}": s for s in op["stores"]}
    for s in stores.values():
        assert s["latest_version"] == 8 and s["planned_at_version"] == 9
        # Spark already kept version 8 - 3 = 5 from snapshot 3; the next batch (version 9)
        # needs 6 (a snapshot): snapshot 3 and deltas 4, 5 go, 3.delta one maintenance later
        assert s["delete_next"] == ["3.snapshot", "4.delta", "5.delta"], s
        assert s["delete_after_next"] == ["3.delta"]
    assert "then 1 files" in text.output

    q.land(1)
    q.run(STATE_CONFS)  # batch 8: version 9, then its maintenance
    after = _state_files(q.cp)
    for store, s in stores.items():
        assert before[store] - after[store] == set(s["delete_next"]), store
        assert after[store] - before[store] <= {"9.delta", "9.snapshot"}
        assert "9.delta" in after[store]

    q.land(1)
    q.run(STATE_CONFS)  # batch 9: version 10; the delta beside the purged snapshot goes now
    for store, s in stores.items():
        assert not set(s["delete_after_next"]) & _state_files(q.cp)[store]


def test_retention_usage_errors(tmp_path, unchanged):
    unchanged(tmp_path)
    r = CliRunner().invoke(main, ["retention", str(tmp_path / "nope")])
    assert r.exit_code == 4 and "no such file or directory" in r.output
    r = CliRunner().invoke(main, ["retention", str(tmp_path), "--min-batches", "0"])
    assert r.exit_code == 2
    assert "Examples:" in CliRunner().invoke(main, ["retention", "--help"]).output


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_retention_golden_on_the_corpus(corpus, unchanged, fmt):
    cp = unchanged(corpus / "spark" / "checkpoint-version-4.0.0" / "hdfs" / "join2")
    r = CliRunner().invoke(main, ["retention", str(cp), "--min-batches", "2"] + (["--json"] if fmt == "json" else []))
    assert r.exit_code == 0, r.output
    assert_golden({GOLDEN / f"join2-min2.{fmt}": r.stdout.replace(str(cp), "<PATH>")})


# RocksDB with a zip per commit (changelog checkpointing off), maintenance right after each
# commit (unloadOnCommit), no waiting for extra stale versions (ratio 0 → minVersionsToDelete
# 0) and no cap per maintenance (-1): RocksDBFileManager.deleteOldVersions then deletes every
# version below V - minBatchesToRetain + 1 and the SST files only those versions name.
ROCKSDB_CONFS = {
    **STATE_CONFS,
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "false",
    "spark.sql.streaming.ratioExtraSpaceAllowedInCheckpoint": "0",
    "spark.sql.streaming.stateStore.maxVersionsToDeletePerMaintenance": "-1",
}


@pytest.mark.spark
def test_spark_rocksdb_maintenance_deletes_exactly_what_the_plan_predicted(mini_query, unchanged):
    q = mini_query(stateful=True, name="rocks")
    q.land(8)
    q.run(ROCKSDB_CONFS)  # batches 0..7: versions 1..8, each maintained after its commit
    for version in (9, 10, 11):  # plan, one more batch, compare; three times
        before = _state_files(q.cp)
        assert set(before) == {"0/0", "0/1"}, before
        with unchanged.around(q.out):
            r = CliRunner().invoke(main, ["retention", str(q.cp), "--min-batches", "3", "--json"])
        assert r.exit_code == 0, r.output
        [op] = json.loads(r.stdout)["state"]
        assert op["provider"] == "rocksdb"
        stores = {f"0/{s['partition']}": s for s in op["stores"]}
        for s in stores.values():
            assert s["latest_version"] == version - 1 and s["planned_at_version"] == version
            assert s["earliest_version_kept"] == version - 3 + 1
            # the maintenance after the previous version already dropped everything older
            assert [n for n in s["delete_next"] if not n.startswith("SSTs/")] == [f"{version - 3}.zip"], s
            assert s["orphan_ssts"] == [], s

        q.land(1)
        q.run(ROCKSDB_CONFS)  # one batch: the next version, then its maintenance
        after = _state_files(q.cp)
        for store, s in stores.items():
            assert f"{version}.zip" in after[store]
            assert before[store] - after[store] == set(s["delete_next"]), (store, sorted(before[store]), sorted(after[store]))


@pytest.mark.spark
def test_spark_rocksdb_deletes_at_most_max_versions_per_maintenance(mini_query, unchanged):
    q = mini_query(stateful=True, name="rocks-cap")
    q.land(6)
    q.run({**ROCKSDB_CONFS, "spark.sql.streaming.minBatchesToRetain": "10"})  # versions 1..6, none deleted
    before = _state_files(q.cp)
    assert all({f"{v}.zip" for v in range(1, 7)} <= names for names in before.values()), before
    with unchanged.around(q.out):
        r = CliRunner().invoke(main, ["retention", str(q.cp), "--min-batches", "2", "--max-versions-per-maintenance", "2", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["max_versions_per_maintenance"] == 2
    stores = {f"0/{s['partition']}": s for s in doc["state"][0]["stores"]}
    for s in stores.values():
        # version 7 lets versions below 6 go, but one run deletes only 2: below oldest (1) + 2
        assert s["earliest_version_kept"] == 3
        assert [n for n in s["delete_next"] if not n.startswith("SSTs/")] == ["1.zip", "2.zip"], s

    q.land(1)
    q.run({**ROCKSDB_CONFS, "spark.sql.streaming.minBatchesToRetain": "2",
           "spark.sql.streaming.stateStore.maxVersionsToDeletePerMaintenance": "2"})
    after = _state_files(q.cp)
    for store, s in stores.items():
        assert "7.zip" in after[store]
        assert before[store] - after[store] == set(s["delete_next"]), (store, sorted(before[store]), sorted(after[store]))
