"""orders: nested JSON orders through bronze → silver → gold.

* bronze — multiline JSON file source with an explicit nested schema, ``PERMISSIVE`` parsing
  into ``_corrupt_record``, ``cleanSource=archive`` (processed files are moved to
  ``<workspace>/archive/orders/orders``).
* quarantine — malformed order files: raw text + source file.
* silver — flattened order lines: ``dropDuplicatesWithinWatermark`` on ``order_id`` (watermark
  1 hour: re-sent orders are dropped), then ``explode_outer`` of ``items`` (an order without
  items keeps one row with null item columns).
* silver_metadata — ``explode_outer`` of ``metadata``: one row per key/value pair.
* gold_revenue — revenue per country per 1-hour window of order time (watermark 1 hour,
  append: a window is written once, when the watermark passes its end).
* gold_summary — per payment method over all time, complete mode (Delta: ``foreachBatch``
  ``MERGE`` on ``payment_method``, idempotent across retries through Delta's
  ``txnAppId``/``txnVersion``; also right under ``--output-mode gold_summary=update``, where
  only changed rows arrive; Parquet: ``foreachBatch`` overwriting the table, idempotent).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwatch.pipeline import LandingSource, Layer, LayerContext, Pipeline

from ..common import file_bronze, good_rows, quarantine_layer, table_stream
from .factory import OrdersFactory

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

WATERMARK = "1 hour"
WINDOW = "1 hour"
MAX_FILES_PER_TRIGGER = 5


def orders_schema() -> StructType:
    from pyspark.sql.types import ArrayType, DoubleType, IntegerType, StringType, StructField, StructType, TimestampType

    s = StringType()
    address = StructType([StructField("city", s), StructField("postal_code", s), StructField("country", s)])
    customer = StructType([StructField("customer_id", s), StructField("name", s),
                           StructField("email", s), StructField("address", address)])
    item = StructType([StructField("item_id", s), StructField("product_name", s),
                       StructField("quantity", IntegerType()), StructField("price", DoubleType())])
    payment = StructType([StructField("method", s), StructField("transaction_id", s)])
    kv = StructType([StructField("key", s), StructField("value", s)])
    return StructType([
        StructField("order_id", s), StructField("timestamp", TimestampType()),
        StructField("customer", customer), StructField("items", ArrayType(item)),
        StructField("payment", payment), StructField("metadata", ArrayType(kv)),
    ])


def bronze(ctx: LayerContext) -> DataFrame:
    return file_bronze(
        ctx, "orders", "json", orders_schema(), MAX_FILES_PER_TRIGGER,
        multiLine="true", cleanSource="archive",
        sourceArchiveDir=str(ctx.archive["orders"].resolve()),
    )


def deduplicated(orders_df: DataFrame, *, streaming: bool = True) -> DataFrame:
    """Good orders with ``order_ts``, each ``order_id`` once (within the watermark)."""
    df = orders_df.withColumnRenamed("timestamp", "order_ts")
    if streaming:
        return df.withWatermark("order_ts", WATERMARK).dropDuplicatesWithinWatermark(["order_id"])
    return df.dropDuplicates(["order_id"])


def order_lines(orders_df: DataFrame) -> DataFrame:
    """One row per order item (``explode_outer``: orders without items keep one row)."""
    from pyspark.sql import functions as F

    return orders_df.select(
        "order_id", "order_ts",
        F.col("customer.customer_id").alias("customer_id"),
        F.col("customer.name").alias("customer_name"),
        F.col("customer.email").alias("email"),
        F.col("customer.address.city").alias("city"),
        F.col("customer.address.postal_code").alias("postal_code"),
        F.col("customer.address.country").alias("country"),
        F.col("payment.method").alias("payment_method"),
        F.col("payment.transaction_id").alias("transaction_id"),
        F.explode_outer("items").alias("item"),
    ).select(
        "*", F.col("item.item_id").alias("item_id"), F.col("item.product_name").alias("product_name"),
        F.col("item.quantity").alias("quantity"), F.col("item.price").alias("price"),
        (F.col("item.quantity") * F.col("item.price")).alias("line_total"),
    ).drop("item")


def order_metadata(orders_df: DataFrame) -> DataFrame:
    """One row per metadata key/value pair (``explode_outer``: null metadata keeps a row)."""
    from pyspark.sql import functions as F

    return orders_df.select("order_id", "order_ts", F.explode_outer("metadata").alias("kv")).select(
        "order_id", "order_ts", F.col("kv.key").alias("meta_key"), F.col("kv.value").alias("meta_value"))


def revenue(lines_df: DataFrame) -> DataFrame:
    """Per 1-hour window of order time and country: revenue, items, order lines."""
    from pyspark.sql import functions as F

    return lines_df.groupBy(F.window("order_ts", WINDOW), "country").agg(
        F.round(F.sum(F.coalesce("line_total", F.lit(0.0))), 2).alias("revenue"),
        F.sum(F.coalesce("quantity", F.lit(0))).alias("items"),
        F.count(F.lit(1)).alias("lines"),
    ).select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"),
             "country", "revenue", "items", "lines")


def summary(lines_df: DataFrame) -> DataFrame:
    """Per payment method, all time: revenue, items, order lines."""
    from pyspark.sql import functions as F

    return lines_df.groupBy("payment_method").agg(
        F.round(F.sum(F.coalesce("line_total", F.lit(0.0))), 2).alias("revenue"),
        F.sum(F.coalesce("quantity", F.lit(0))).alias("items"),
        F.count(F.lit(1)).alias("lines"),
    )


def silver(ctx: LayerContext) -> DataFrame:
    return order_lines(deduplicated(good_rows(table_stream(ctx, "bronze"))))


def silver_metadata(ctx: LayerContext) -> DataFrame:
    return order_metadata(deduplicated(good_rows(table_stream(ctx, "bronze"))))


def gold_revenue(ctx: LayerContext) -> DataFrame:
    return revenue(table_stream(ctx, "silver").withWatermark("order_ts", WATERMARK))


def gold_summary(ctx: LayerContext) -> DataFrame:
    return summary(table_stream(ctx, "silver"))


def pipeline() -> Pipeline:
    return Pipeline(
        name="orders",
        description="nested JSON orders: explode, dedup within watermark, revenue windows, complete-mode summary",
        sources=(LandingSource("orders", "synthetic orders as multiline JSON arrays, 15 min per file", OrdersFactory),),
        layers=(
            Layer("bronze", "bronze", "multiline JSON → nested rows + _corrupt_record; cleanSource=archive",
                  bronze, source="json", landing=("orders",)),
            quarantine_layer(),
            Layer("silver", "silver", "dedup within watermark, flatten, explode_outer items", silver,
                  upstream=("bronze",)),
            Layer("silver_metadata", "silver_metadata", "explode_outer metadata key/value pairs", silver_metadata,
                  upstream=("bronze",)),
            Layer("gold_revenue", "gold_revenue", "revenue per country per 1 h window (append, watermark)",
                  gold_revenue, upstream=("silver",)),
            Layer("gold_summary", "gold_summary",
                  "per payment method, complete mode (Delta: idempotent foreachBatch MERGE)", gold_summary,
                  output_mode="complete", merge_keys=("payment_method",), upstream=("silver",)),
        ),
    )
