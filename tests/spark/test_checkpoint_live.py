"""Checkpoints written live by Spark in this test session, read back by the inspector:
stateless file→file, watermarked aggregation on the HDFS store and on RocksDB, stream-stream
join, dropDuplicates, a union of two sources, a Delta-source-style offset, and a query that
died between writing offsets and commit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import batch_timeline, read_checkpoint
from streamwatch.cli import main

pytestmark = pytest.mark.spark
SCHEMA = "k STRING, v INT, ts TIMESTAMP"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def land(folder: Path, n: int, start: int = 0) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        rows = [{"k": f"k{j % 3}", "v": j, "ts": f"2024-01-01T00:{i:02d}:{j:02d}"} for j in range(4)]
        tmp = folder / f".f{i}.json.tmp"
        tmp.write_text("\n".join(json.dumps(r) for r in rows))
        tmp.rename(folder / f"f{i}.json")


def run(df, cp: Path, out: Path | None = None, mode: str = "append", fmt: str = "parquet"):
    w = df.writeStream.option("checkpointLocation", str(cp)).outputMode(mode).trigger(availableNow=True)
    q = w.format(fmt).start(str(out)) if out is not None else w.format("noop").start()
    q.awaitTermination(120)
    return q


def src(spark, folder: Path, max_files: int = 1):
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", max_files).json(str(folder))


@pytest.fixture(scope="module")
def live(spark, tmp_path_factory):
    """Runs every query once (two availableNow runs where a second run matters); returns
    name → (checkpoint, sink folder or None)."""
    from pyspark.errors import StreamingQueryException
    from pyspark.sql import functions as F

    base = tmp_path_factory.mktemp("live-cps")
    a, b = base / "in-a", base / "in-b"
    land(a, 3)
    land(b, 3)
    out: dict[str, tuple[Path, Path | None]] = {}

    # stateless file → file (Parquet file sink with _spark_metadata), two runs
    run(src(spark, a).select("k", "v"), base / "cp-stateless", base / "t-stateless")
    land(a, 1, start=3)
    run(src(spark, a).select("k", "v"), base / "cp-stateless", base / "t-stateless")
    out["stateless"] = (base / "cp-stateless", base / "t-stateless")

    def agg(df):
        return df.withWatermark("ts", "1 minute").groupBy(F.window("ts", "1 minute"), "k").count()

    run(agg(src(spark, b)), base / "cp-agg-hdfs", base / "t-agg-hdfs")
    out["agg-hdfs"] = (base / "cp-agg-hdfs", base / "t-agg-hdfs")
    key = "spark.sql.streaming.stateStore.providerClass"
    old = spark.conf.get(key)
    spark.conf.set(key, ROCKSDB)
    try:
        run(agg(src(spark, b)), base / "cp-agg-rocksdb")
    finally:
        spark.conf.set(key, old)
    out["agg-rocksdb"] = (base / "cp-agg-rocksdb", None)

    left = src(spark, a).select(F.col("k").alias("lk"), F.col("ts").alias("lts")).withWatermark("lts", "1 minute")
    right = src(spark, b).select(F.col("k").alias("rk"), F.col("ts").alias("rts")).withWatermark("rts", "1 minute")
    joined = left.join(right, F.expr("lk = rk AND rts BETWEEN lts - INTERVAL 1 minute AND lts + INTERVAL 1 minute"))
    run(joined, base / "cp-join")
    out["join"] = (base / "cp-join", None)

    run(src(spark, a).dropDuplicates(["k"]), base / "cp-dedup")
    out["dedup"] = (base / "cp-dedup", None)

    run(src(spark, a).unionByName(src(spark, b)), base / "cp-union")
    out["union"] = (base / "cp-union", None)

    # died between offsets and commit: batch 1 fails inside the sink
    def boom(df, batch_id):
        if batch_id >= 1:
            raise RuntimeError("killed")

    q = src(spark, a).writeStream.option("checkpointLocation", str(base / "cp-killed")).foreachBatch(boom).trigger(availableNow=True).start()
    with pytest.raises(StreamingQueryException):
        q.awaitTermination(120)
    out["killed"] = (base / "cp-killed", None)
    return out


def test_stateless_file_to_file(live, unchanged):
    cp_dir, table = live["stateless"]
    unchanged(cp_dir)
    unchanged(table)
    cp = read_checkpoint(cp_dir, sink=table)
    assert cp.latest_batch_id == cp.last_committed_batch_id == 3
    (log,) = cp.sources
    assert len(log.entries) == 4 and {Path(e.path).name for e in log.entries} == {f"f{i}.json" for i in range(4)}
    assert [e.batch_id for e in log.entries] == [0, 1, 2, 3]
    assert cp.offsets[-1].parsed[0].kind == "file" and cp.offsets[-1].parsed[0].log_offset == 3
    assert cp.sink is not None and cp.sink.latest_batch_id == 3
    assert all(e.path.endswith(".parquet") for e in cp.sink.entries)
    assert [f for f in cp.findings if f.severity != "info"] == []
    rows = batch_timeline(cp)
    assert [(r.has_offsets, r.has_commit, r.state_version, r.sink_entry, r.files_read) for r in rows] == [(True, True, None, True, 1)] * 4


@pytest.mark.parametrize("name,provider", [("agg-hdfs", "hdfs"), ("agg-rocksdb", "rocksdb")])
def test_watermarked_aggregation(live, unchanged, name, provider):
    cp_dir, _ = live[name]
    unchanged(cp_dir)
    cp = read_checkpoint(cp_dir)
    (op,) = cp.state
    assert op.name == "stateStoreSave" and op.provider == provider and op.metadata_version in (1, 2)
    assert op.num_partitions == 2 and op.bytes > 0
    done = cp.last_committed_batch_id
    assert done is not None and done + 1 in op.versions
    assert cp.offsets[-1].watermark_ms > 0  # 1-minute watermark behind 2024-01-01T00:0x
    assert not [f for f in cp.findings if f.severity == "error"], cp.findings
    assert batch_timeline(cp)[-1].state_version is True
    if provider == "rocksdb":
        assert cp.offsets[-1].conf["spark.sql.streaming.stateStore.providerClass"] == ROCKSDB


@pytest.fixture(autouse=True)
def _live_read_only(request, unchanged):
    """Every test here reads the checkpoints (and sink tables) ``live`` wrote: prove they are
    byte-identical afterwards."""
    if "live" in request.fixturenames:
        for cp_dir, table in request.getfixturevalue("live").values():
            unchanged(cp_dir)
            if table is not None:
                unchanged(table)


def test_stream_stream_join(live):
    cp = read_checkpoint(live["join"][0])
    (op,) = cp.state
    assert op.name == "symmetricHashJoin"
    assert set(op.store_names) == {"left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"}
    assert len(cp.offsets[-1].sources) == 2 and len(cp.sources) == 2
    assert cp.last_committed_batch_id + 1 in op.versions


def test_drop_duplicates(live):
    cp = read_checkpoint(live["dedup"][0])
    (op,) = cp.state
    assert op.name == "dedupe" and op.provider == "hdfs"


def test_union_of_two_sources(live):
    cp = read_checkpoint(live["union"][0])
    assert len(cp.offsets[-1].source_ids) == 2 and [s.index for s in cp.sources] == [0, 1]
    assert sum(len(s.entries) for s in cp.sources) == 7


def test_killed_between_offsets_and_commit(live, unchanged):
    cp_dir, _ = live["killed"]
    unchanged(cp_dir)
    cp = read_checkpoint(cp_dir)
    assert (cp.latest_batch_id, cp.last_committed_batch_id) == (1, 0)
    f = next(f for f in cp.findings if f.code == "in-flight-batch")
    assert "batch 1 planned, not committed: Spark runs it again on restart" in f.message
    assert f.severity == "info"
    result = CliRunner().invoke(main, ["inspect", str(cp_dir), "--check"])
    assert result.exit_code == 0, result.output  # a planned batch is no warning: Spark re-runs it


def test_delta_source_style_offset(live, tmp_path):
    cp_dir = tmp_path / "cp"
    shutil.copytree(live["stateless"][0], cp_dir)
    off = cp_dir / "offsets" / "3"
    lines = off.read_text().split("\n")
    lines[2] = '{"sourceVersion":1,"reservoirId":"a1b2","reservoirVersion":7,"index":-1,"isStartingVersion":false}'
    off.write_text("\n".join(lines))
    cp = read_checkpoint(cp_dir)
    p = cp.offsets[-1].parsed[0]
    assert p.kind == "delta" and p.fields["reservoirVersion"] == 7
    assert "delta a1b2 v7" in CliRunner().invoke(main, ["inspect", str(cp_dir), "--batch", "3"]).output


def test_cli_on_live_checkpoints(live):
    runner = CliRunner()
    for name, (cp_dir, table) in live.items():
        args = ["inspect", str(cp_dir)] + (["--sink", str(table)] if table else [])
        for extra in ([], ["--batches"], ["--batch", "0"], ["--json"]):
            r = runner.invoke(main, args + extra)
            assert r.exit_code == 0, (name, extra, r.output)
        doc = json.loads(runner.invoke(main, args + ["--json"]).output)
        assert doc["schema"] == "streamwatch.inspect/1" and doc["query_id"]
