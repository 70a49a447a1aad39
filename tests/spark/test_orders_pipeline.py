"""The orders pipeline (nested multiline JSON) with availableNow, against batch recomputations
over the same input files (read back from the landing and archive directories)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sample_pipelines.orders import deduplicated, order_lines, order_metadata, orders_schema, revenue, summary

pytestmark = pytest.mark.spark
N_FILES = 16


@pytest.fixture(scope="module")
def orders_run(spark, table_format, tmp_path_factory):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.orders.factory import OrdersFactory

    ws = Workspace(tmp_path_factory.mktemp("orders-ws"))
    landed = OrdersFactory(ws.landing("orders", "orders"), bad_ratio=0.05, dup_ratio=0.2).land(N_FILES)
    runner = PipelineRunner(spark, get_pipeline("orders"), ws, table_format)
    runner.run_available_now(timeout_s=300)
    return runner, ws, landed


def _all_files(ws):
    files = [p for p in ws.landing("orders", "orders").rglob("orders_*.json")]
    files += [p for p in ws.archive("orders", "orders").rglob("orders_*.json")]
    return files


def _input(spark, ws):
    from pyspark.sql import functions as F

    from sample_pipelines.common import with_corrupt_column

    paths = [str(p) for p in _all_files(ws)]
    return spark.read.schema(with_corrupt_column(orders_schema())).option("multiLine", "true").json(paths) \
        .withColumn("_source_file", F.col("_metadata.file_path")).cache()


def _sorted(df):
    return sorted(tuple(r) for r in df.collect())


def test_archive_receives_processed_files_and_none_are_lost(orders_run):
    _runner, ws, landed = orders_run
    archived = {p.name for p in ws.archive("orders", "orders").rglob("orders_*.json")}
    remaining = {p.name for p in ws.landing("orders", "orders").glob("orders_*.json")}
    assert archived, "cleanSource=archive moved no file"
    assert not archived & remaining
    assert archived | remaining == {p.name for p in landed}


def test_quarantine_reconciles_with_input_records(orders_run, spark):
    runner, ws, landed = orders_run
    input_records = 0
    bad_files = [p for p in _all_files(ws) if "_bad_" in p.name]
    for p in _all_files(ws):
        if "_bad_" in p.name:
            input_records += 1
        else:
            input_records += len(json.loads(p.read_text()))
    bronze = runner.tables.read("bronze")
    good = bronze.where("_corrupt_record IS NULL").count()
    quarantined = runner.tables.read("quarantine")
    assert bad_files, "the factory must have landed malformed orders (bad_ratio=0.05)"
    assert quarantined.count() == len(bad_files)
    assert good + quarantined.count() == input_records
    assert {r.source_file.rsplit("/", 1)[-1] for r in quarantined.collect()} == {p.name for p in bad_files}


def test_silver_dedups_and_explodes_like_the_batch_recomputation(orders_run, spark):
    from sample_pipelines.common import good_rows

    runner, ws, _ = orders_run
    orders = deduplicated(good_rows(_input(spark, ws)).drop("_source_file"), streaming=False)
    raw_good = good_rows(_input(spark, ws))
    assert raw_good.count() > orders.count(), "re-sent orders must exist in the input"
    silver = runner.tables.read("silver")
    cols = [c for c in order_lines(orders).columns]
    assert _sorted(silver.select(cols)) == _sorted(order_lines(orders))
    assert silver.where("item_id IS NULL").count() > 0, "explode_outer keeps orders without items"
    meta = runner.tables.read("silver_metadata")
    assert _sorted(meta.select("order_id", "meta_key", "meta_value")) == \
        _sorted(order_metadata(orders).select("order_id", "meta_key", "meta_value"))


def test_gold_revenue_and_complete_mode_summary_equal_batch(orders_run, spark):
    from pyspark.sql import functions as F

    from sample_pipelines.common import good_rows

    runner, ws, _ = orders_run
    lines = order_lines(deduplicated(good_rows(_input(spark, ws)).drop("_source_file"), streaming=False))
    max_ts = lines.agg(F.max("order_ts")).first()[0]
    expected = revenue(lines).where(F.col("window_end") <= F.lit(max_ts) - F.expr("INTERVAL 1 HOUR"))
    gold = runner.tables.read("gold_revenue")
    assert expected.count() > 5
    assert _sorted(gold) == _sorted(expected)
    assert _sorted(runner.tables.read("gold_summary")) == _sorted(summary(lines))


def test_on_delta_silver_reads_bronze_as_a_delta_source_and_gold_summary_merges_per_batch(
        orders_run, table_format, unchanged):
    if table_format != "delta":
        pytest.skip("Delta Lake's jars are not resolved here (`make jars`)")
    from click.testing import CliRunner

    from streamwatch.cli import main

    _runner, ws, _ = orders_run
    silver = json.loads(CliRunner().invoke(main, ["inspect", str(unchanged(ws.checkpoint("orders", "silver"))),
                                                  "--json"]).output)
    assert silver["sources"][0]["kind"] == "delta"  # readStream.format("delta") on bronze
    cp = unchanged(ws.checkpoint("orders", "gold_summary"))
    unchanged(ws.table("orders", "gold_summary"))
    doc = json.loads(CliRunner().invoke(main, ["inspect", str(cp), "--json"]).output)
    assert doc["sink"]["kind"] == "delta"
    # foreachBatch MERGE commits carry the query id as txnAppId and the batch id as txnVersion
    assert doc["sink"]["written_by_this_query"]
    assert doc["sink"]["last_txn"]["version"] == doc["batches"]["last_committed"]
    log = Path(ws.table("orders", "gold_summary")) / "_delta_log"
    ops = [json.loads(line)["commitInfo"]["operation"] for f in sorted(log.glob("*.json"))
           for line in f.read_text().splitlines() if '"commitInfo"' in line]
    assert "MERGE" in ops
