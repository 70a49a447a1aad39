"""Spark 4.2 checkpoint features written live in this test run and read back by the
inspector: offline state repartition (``spark._streamingCheckpointManager.repartition``,
RocksDB) and checkpoint format v2 (``stateStore.checkpointFormatVersion=2`` with changelog
checkpointing), including a v1 → v2 switch and a deleted referenced state file."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import batch_timeline, read_checkpoint
from streamwatch.cli import main

pytestmark = pytest.mark.spark
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
V2 = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
    "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}


@contextlib.contextmanager
def session_conf(spark, conf: dict[str, str]):
    """Set SQL confs on the shared session for the block, then put the old values back."""
    old = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def land(folder: Path, i: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".f{i}.json.tmp"
    tmp.write_text("\n".join(json.dumps({"k": k, "v": i}) for k in range(6)))
    tmp.rename(folder / f"f{i}.json")


def run_batches(spark, src: Path, cp: Path, first: int, n: int) -> None:
    """``n`` micro-batches of a keyed sum (one landed file each, availableNow), noop sink."""
    from pyspark.sql import functions as F

    for i in range(first, first + n):
        land(src, i)
        df = spark.readStream.schema("k INT, v INT").json(str(src)).groupBy("k").agg(F.sum("v").alias("s"))
        q = (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
             .trigger(availableNow=True).start())
        q.awaitTermination(180)
        assert q.exception() is None


@pytest.fixture(scope="module")
def spark4(spark, tmp_path_factory):
    """name → checkpoint folder: ``repartitioned`` (RocksDB, 3 batches on the session's 2
    shuffle partitions, then repartitioned offline to 3: batch 3) and ``v2`` (3 batches in
    checkpoint format v2 with changelog checkpointing)."""
    base = tmp_path_factory.mktemp("spark4-cps")
    with session_conf(spark, {"spark.sql.streaming.stateStore.providerClass": ROCKSDB}):
        run_batches(spark, base / "in-rep", base / "repartitioned", 0, 3)
    spark._streamingCheckpointManager.repartition(str(base / "repartitioned"), 3)
    with session_conf(spark, V2):
        run_batches(spark, base / "in-v2", base / "v2", 0, 3)
    return {"repartitioned": base / "repartitioned", "v2": base / "v2"}


def test_repartition_batch_is_named_and_is_not_drift(spark4, unchanged):
    cp_dir = unchanged(spark4["repartitioned"])
    cp = read_checkpoint(cp_dir)
    # Spark wrote batch 3 (no input read) with 3 shuffle partitions and state version 4 in 3 partitions
    assert [(r.batch_id, r.from_partitions, r.to_partitions) for r in cp.repartitions] == [(3, 2, 3)]
    assert cp.offsets[-1].conf["spark.sql.shuffle.partitions"] == "3"
    codes = {f.code: f for f in cp.findings}
    assert "conf-drift" not in codes and "state-version-missing" not in codes
    assert not [f for f in cp.findings if f.severity == "error"], cp.findings
    assert "batch 3" in codes["state-repartitioned"].message
    (op,) = cp.state
    assert sorted({p.partition_id for p in op.partitions}) == [0, 1, 2]
    # versions in every partition of their layout: 1–3 in the old 2 partitions, 4 in the new 3
    assert cp.state_versions(op) == (1, 2, 3, 4)
    assert op.versions == (4,)  # the layout-blind intersection the issue reported as wrong
    rows = batch_timeline(read_checkpoint(cp_dir))
    assert [r.batch_id for r in rows if r.repartition] == [3]
    assert all(r.state_version for r in rows)
    text = CliRunner().invoke(main, ["inspect", str(cp_dir)])
    assert text.exit_code == 0 and "offline state repartition 2 → 3" in text.output
    table = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["inspect", str(cp_dir), "--batches"])
    assert "repartition 2→3" in table.output
    timeline = json.loads(CliRunner().invoke(main, ["inspect", str(cp_dir), "--batches", "--json"]).output)["timeline"]
    assert [r["batch_id"] for r in timeline if r["repartition"]] == [3]
    doc = json.loads(CliRunner().invoke(main, ["inspect", str(cp_dir), "--json", "--check"]).output)
    assert doc["repartitions"] == [{"batch_id": 3, "from_partitions": 2, "to_partitions": 3}]
    assert doc["state"][0]["versions"]["in_every_partition"] == 4
    assert doc["worst"] != "error"


def test_v2_unique_ids_matched_and_a_deleted_file_reported(spark4, unchanged, tmp_path):
    cp_dir = unchanged(spark4["v2"])
    cp = read_checkpoint(cp_dir)
    assert [c.version for c in cp.commits] == [2, 2, 2]
    assert [(m.batch_id, m.named, m.found, m.missing) for m in cp.unique_ids] == [(b, 2, 2, ()) for b in range(3)]
    assert not [f for f in cp.findings if f.code in ("state-file-missing", "state-unreferenced-files")]
    rows = batch_timeline(read_checkpoint(cp_dir))
    assert [(r.unique_ids.named, r.unique_ids.found) for r in rows] == [(2, 2)] * 3
    doc = json.loads(CliRunner().invoke(main, ["inspect", str(cp_dir), "--json"]).output)
    assert doc["checkpoint_format"]["version"] == 2 and doc["checkpoint_format"]["unique_ids"] == {"batches": 3, "named": 6, "found": 6}

    # a copy with the last commit's file of partition 1 deleted, and a stray attempt's file
    broken = tmp_path / "broken"
    shutil.copytree(cp_dir, broken)
    last_ids = json.loads((broken / "commits" / "2").read_text().splitlines()[1])["stateUniqueIds"]["0"]
    uid = last_ids[1][0]
    victims = [p for p in (broken / "state" / "0" / "1").iterdir() if p.name.startswith(f"3_{uid}.")]
    assert victims  # the changelog (and the snapshot zip when maintenance made one)
    for v in victims:
        v.unlink()
    (broken / "state" / "0" / "0" / "3_00000000-0000-4000-8000-000000000000.changelog").write_bytes(b"x")
    bad = read_checkpoint(broken)
    codes = {f.code: f for f in bad.findings}
    assert codes["state-file-missing"].severity == "error"
    assert uid in codes["state-file-missing"].message and "partition 1 version 3" in codes["state-file-missing"].message
    assert "00000000-0000-4000-8000-000000000000" in codes["state-unreferenced-files"].message
    assert bad.unique_ids[-1].missing == ((0, 1, uid),)
    r = CliRunner().invoke(main, ["inspect", str(broken), "--check"])
    assert r.exit_code == 3 and "state-file-missing" in r.output
    assert "ids 1/2" in CliRunner(env={"COLUMNS": "200"}).invoke(main, ["inspect", str(broken), "--batches"]).output
    rows = json.loads(CliRunner().invoke(main, ["inspect", str(broken), "--batches", "--json"]).output)["timeline"]
    assert rows[-1]["unique_ids"]["missing"] == [{"operator_id": 0, "partition": 1, "unique_id": uid}]
