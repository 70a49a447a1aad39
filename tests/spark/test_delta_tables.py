"""Delta tables for real (jars from `make jars`): a Delta streaming source feeding Delta's sink
in complete mode, the idempotent foreachBatch MERGE, and the inspector reading what Spark
wrote — Delta source offsets from the live checkpoint and sink versions from ``_delta_log``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark


def _history(spark, path: str) -> list[tuple[int, str]]:
    from delta.tables import DeltaTable

    return sorted((r.version, r.operation) for r in DeltaTable.forPath(spark, path).history().collect())


def test_delta_source_complete_mode_and_inspect_reads_source_offsets_and_sink_versions(
        spark, delta, tmp_path, unchanged):
    from streamwatch.spark.tables import Tables

    tables = Tables(spark, "delta", tmp_path / "tables")
    tables.write_static(spark.createDataFrame([(i % 3, i) for i in range(30)], "k int, v int"), "up")
    spark.createDataFrame([(i % 3, i) for i in range(30, 36)], "k int, v int") \
        .write.format("delta").mode("append").save(tables.path("up"))  # upstream version 1
    df = tables.read_stream("up").groupBy("k").count()
    cp = tmp_path / "ck"
    q = tables.write_stream(df, "counts", checkpoint=cp, query_name="delta_counts",
                            trigger="availableNow", output_mode="complete")
    assert q.awaitTermination(300), "availableNow did not finish"
    assert q.exception() is None
    got = {r.k: r["count"] for r in tables.read("counts").collect()}
    assert got == {0: 12, 1: 12, 2: 12}
    ops = {op for _v, op in _history(spark, tables.path("counts"))}
    assert "STREAMING UPDATE" in ops  # Delta's own sink in complete mode, not foreachBatch

    unchanged(cp)
    unchanged(tables.path("counts"))
    r = CliRunner().invoke(main, ["inspect", str(cp), "--sink", tables.path("counts"), "--json"])
    assert r.exit_code in (0, 1), r.output
    doc = json.loads(r.output)
    src = doc["sources"][0]
    assert src["kind"] == "delta"
    assert src["fields"]["reservoirVersion"] >= 1 and "reservoirId" in src["fields"]
    assert src["fields"]["reservoirId"] == _table_id(tables.path("up"))
    assert doc["sink"]["kind"] == "delta" and doc["sink"]["written_by_this_query"]
    assert doc["sink"]["last_txn"]["version"] == doc["batches"]["last_committed"]


def _table_id(path: str) -> str:
    from pathlib import Path

    for line in (Path(path) / "_delta_log" / "00000000000000000000.json").read_text().splitlines():
        obj = json.loads(line)
        if "metaData" in obj:
            return obj["metaData"]["id"]
    raise AssertionError("no metaData in version 0")


def test_merge_batch_is_idempotent_across_a_replayed_batch_id(spark, delta, tmp_path):
    from streamwatch.spark.tables import merge_batch

    path = str(tmp_path / "gold")
    spark.createDataFrame([], "k string, n long").write.format("delta").save(path)
    cp = tmp_path / "ck"
    cp.mkdir()
    (cp / "metadata").write_text('{"id":"4f0c2d7e-0000-4000-8000-000000000001"}')
    merge = merge_batch(path, ("k",), cp)
    merge(spark.createDataFrame([("a", 1), ("b", 2)], "k string, n long"), 0)
    merge(spark.createDataFrame([("a", 5)], "k string, n long"), 1)
    versions = len(_history(spark, path))
    # batch 1 replayed after a crash (with different rows, to prove it is skipped, not redone)
    merge(spark.createDataFrame([("a", 99), ("c", 7)], "k string, n long"), 1)
    assert len(_history(spark, path)) == versions
    rows = {r.k: r.n for r in spark.read.format("delta").load(path).collect()}
    assert rows == {"a": 5, "b": 2}
    merge(spark.createDataFrame([("c", 7)], "k string, n long"), 2)
    assert {r.k: r.n for r in spark.read.format("delta").load(path).collect()} == {"a": 5, "b": 2, "c": 7}
    txns = [json.loads(line)["txn"] for f in sorted((tmp_path / "gold" / "_delta_log").glob("*.json"))
            for line in f.read_text().splitlines() if '"txn"' in line]
    assert [t["version"] for t in txns] == [0, 1, 2]
    assert {t["appId"] for t in txns} == {"4f0c2d7e-0000-4000-8000-000000000001"}
    # the session's conf is left clean for the next writer
    assert spark.conf.get("spark.databricks.delta.write.txnAppId", None) is None
