"""The events pipeline: SQL over a streaming view into memory tables, prefix integrity after
every landed file, and gold equal to the batch recomputation."""

from __future__ import annotations

import pytest

from sample_pipelines.events import GOLD_SQL, SLIDING_SQL, events_schema, silver_transform

pytestmark = pytest.mark.spark
STEPS = 5


def _batch(spark, ws, sql):
    from pyspark.sql import functions as F

    from sample_pipelines.common import good_rows, with_corrupt_column

    raw = spark.read.schema(with_corrupt_column(events_schema())).json(str(ws.landing("events", "events"))) \
        .withColumn("_source_file", F.col("_metadata.file_path")).cache()
    silver_transform(good_rows(raw)).createOrReplaceTempView("events_silver_batch")
    return raw, spark.sql(sql.format(view="events_silver_batch"))


def _sorted(df):
    return sorted(tuple(r) for r in df.collect())


def test_prefix_integrity_and_gold_equals_batch(spark, table_format, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.events.factory import EventsFactory

    ws = Workspace(tmp_path)
    factory = EventsFactory(ws.landing("events", "events"), bad_ratio=0.03)
    runner = PipelineRunner(spark, get_pipeline("events"), ws, table_format)
    factory.land(2)
    runner.start("processingTime=200 milliseconds")
    try:
        for step in range(STEPS):
            for q in runner.queries:
                q.processAllAvailable()
            totals = {r.action: r.n for r in spark.sql(
                "SELECT action, sum(count) AS n FROM events_gold GROUP BY action").collect()}
            assert totals.get("Open", 0) >= totals.get("Close", 0) > 0, (step, totals)
            factory.land(1)
        for q in runner.queries:
            q.processAllAvailable()
    finally:
        runner.stop()
    raw, gold = _batch(spark, ws, GOLD_SQL)
    assert _sorted(spark.table("events_gold")) == _sorted(gold)
    _raw, sliding = _batch(spark, ws, SLIDING_SQL)
    assert _sorted(spark.table("events_gold_sliding")) == _sorted(sliding)
    # quarantine reconciliation: every landed line is a good bronze row or quarantined
    lines = sum(1 for p in ws.landing("events", "events").glob("events_*.json") for _ in p.open())
    bronze_good = runner.tables.read("bronze").where("_corrupt_record IS NULL").count()
    quarantined = runner.tables.read("quarantine").count()
    assert quarantined > 0
    assert bronze_good + quarantined == lines == raw.count()
