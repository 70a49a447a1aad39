"""events: the classic Structured Streaming example — Open/Close events counted per action
and hour, with the gold layer written in SQL over a streaming temporary view.

* bronze — JSON-lines file source with an explicit schema (``time`` epoch seconds,
  ``action``) and ``_corrupt_record``.
* quarantine — malformed lines: raw text + source file.
* silver — ``time`` as a timestamp; the stream is the *unbounded table* the example talks
  about.
* gold — ``events_silver`` (silver read as a stream) registered as a temporary view, then
  ``SELECT action, window(time, '1 hour') …, count(*) … GROUP BY …`` in SQL: counts per action
  per 1-hour tumbling window, complete mode, written to Spark's memory sink — query it with
  ``spark.table("events_gold")`` like the example's ``counts`` table. Because events land in
  time order, every batch's result holds at least as many opens as closes (prefix integrity).
* gold_sliding — the same counts over 1-hour windows sliding every 15 minutes.

The memory sink lives in the Spark session: it is rebuilt from the checkpoint on restart
(complete mode) but not kept across processes.

The same medallion ships as a Spark Declarative Pipelines project (``sdp/``: streaming tables
in Python, gold a SQL materialized view), written beside landed data by ``streamwatch land
events --sdp-project DIR``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwatch.pipeline import LandingSource, Layer, LayerContext, Pipeline

from ..common import file_bronze, good_rows, quarantine_layer, table_stream
from .factory import EventsFactory
from .sdp import write_project

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

MAX_FILES_PER_TRIGGER = 10
VIEW = "events_silver"
GOLD_SQL = """
SELECT action, window.start AS window_start, window.end AS window_end, count(*) AS count
FROM {view}
GROUP BY action, window(time, '1 hour')
"""
SLIDING_SQL = """
SELECT action, window.start AS window_start, window.end AS window_end, count(*) AS count
FROM {view}
GROUP BY action, window(time, '1 hour', '15 minutes')
"""


def events_schema() -> StructType:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("time", LongType()), StructField("action", StringType())])


def bronze(ctx: LayerContext) -> DataFrame:
    return file_bronze(ctx, "events", "json", events_schema(), MAX_FILES_PER_TRIGGER)


def silver_transform(bronze_df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return bronze_df.select(F.timestamp_seconds("time").alias("time"), "action", "_source_file")


def silver(ctx: LayerContext) -> DataFrame:
    return silver_transform(good_rows(table_stream(ctx, "bronze")))


def _sql_gold(ctx: LayerContext, sql: str) -> DataFrame:
    table_stream(ctx, "silver").createOrReplaceTempView(VIEW)
    return ctx.spark.sql(sql.format(view=VIEW))


def pipeline() -> Pipeline:
    return Pipeline(
        name="events",
        description="Open/Close events: SQL over a streaming view, windowed counts in a memory sink",
        sources=(LandingSource("events", "Open/Close session events as JSON lines, 30 min per file", EventsFactory),),
        layers=(
            Layer("bronze", "bronze", "JSON lines → time, action + _corrupt_record", bronze, source="json",
                  landing=("events",)),
            quarantine_layer(),
            Layer("silver", "silver", "time as timestamp; registered as view events_silver", silver,
                  upstream=("bronze",)),
            Layer("gold", "gold", "SQL: counts per action per 1 h window → memory table events_gold",
                  lambda ctx: _sql_gold(ctx, GOLD_SQL), output_mode="complete", sink="memory",
                  upstream=("silver",)),
            Layer("gold_sliding", "gold_sliding",
                  "SQL: counts per action, 1 h windows sliding 15 min → memory table events_gold_sliding",
                  lambda ctx: _sql_gold(ctx, SLIDING_SQL), output_mode="complete", sink="memory",
                  upstream=("silver",)),
        ),
        sdp_project=lambda dest, landing: write_project(dest, landing["events"]),
    )
