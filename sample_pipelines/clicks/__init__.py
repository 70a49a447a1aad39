"""clicks: click events from a real Kafka topic through bronze → silver → gold.

* bronze — Spark's Kafka source on topic ``clicks`` (``startingOffsets=earliest``), keeping
  ``topic``, ``partition``, ``offset``, ``timestamp`` (the broker's), key and value as text.
* silver — the value parsed as JSON (``from_json``); records that do not parse, or have no
  page or time, are filtered out.
* gold — clicks per page per 5-minute window of event time, watermark 10 minutes, append mode
  (a window is written once the watermark passes its end; late clicks are dropped).

The broker is ``options["kafka_bootstrap"]`` (``HOST:PORT``); the Kafka connector's jars come
from ``make jars``. The landing source ``clicks`` produces events to the topic in batches
(:class:`~sample_pipelines.clicks.factory.ClicksLanding`), so the feeder of ``streamwatch
run``/``log`` and ``streamwatch land clicks`` keep the topic growing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwatch.pipeline import LandingSource, Layer, LayerContext, Pipeline

from ..common import table_stream
from .factory import TOPIC, ClicksLanding

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

WATERMARK = "10 minutes"
WINDOW = "5 minutes"
MAX_OFFSETS_PER_TRIGGER = 500


def clicks_schema() -> StructType:
    from pyspark.sql.types import StringType, StructField, StructType, TimestampType

    return StructType([StructField("click_id", StringType()), StructField("user_id", StringType()),
                       StructField("page", StringType()), StructField("ts", TimestampType())])


def bronze(ctx: LayerContext) -> DataFrame:
    bootstrap = ctx.options.get("kafka_bootstrap")
    if not bootstrap:
        raise ValueError("the clicks pipeline needs a Kafka broker: kafka_bootstrap=HOST:PORT")
    return (
        ctx.spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", ctx.options.get("max_offsets_per_trigger") or MAX_OFFSETS_PER_TRIGGER)
        .load()
        .selectExpr("topic", "partition", "offset", "timestamp", "CAST(key AS STRING) AS key",
                    "CAST(value AS STRING) AS value")
    )


def parse(bronze_df: DataFrame) -> DataFrame:
    """Bronze rows → typed clicks (rows that are not JSON, or lack page or time, dropped)."""
    from pyspark.sql import functions as F

    parsed = bronze_df.withColumn("c", F.from_json("value", clicks_schema()))
    return parsed.where("c.page IS NOT NULL AND c.ts IS NOT NULL").select(
        "c.click_id", "c.user_id", "c.page", "c.ts", "partition", "offset")


def per_page(silver_df: DataFrame) -> DataFrame:
    """Clicks per 5-minute window and page."""
    from pyspark.sql import functions as F

    return silver_df.groupBy(F.window("ts", WINDOW), "page").agg(F.count(F.lit(1)).alias("clicks")).select(
        F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "page", "clicks")


def silver(ctx: LayerContext) -> DataFrame:
    return parse(table_stream(ctx, "bronze"))


def gold(ctx: LayerContext) -> DataFrame:
    return per_page(table_stream(ctx, "silver").withWatermark("ts", WATERMARK))


def pipeline() -> Pipeline:
    return Pipeline(
        name="clicks",
        description="click events from Kafka: clicks per page per 5 min window",
        sources=(LandingSource("clicks", "click events produced to the Kafka topic clicks (3 partitions), "
                                         "100 per batch; a JSON manifest per batch", ClicksLanding),),
        layers=(
            Layer("bronze", "bronze", "Kafka topic clicks → topic, partition, offset, timestamp, key, value",
                  bronze, source="kafka"),
            Layer("silver", "silver", "JSON parsed, malformed clicks filtered", silver, upstream=("bronze",)),
            Layer("gold", "gold", "clicks per page per 5 min window (watermark 10 min, append)", gold,
                  upstream=("silver",)),
        ),
    )
