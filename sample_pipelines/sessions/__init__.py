"""sessions: page views grouped into user sessions by ``transformWithStateInPandas`` with a
``StatefulProcessor`` (Spark 4's arbitrary state API v2).

* bronze — JSON-lines file source (``time`` epoch seconds, ``user``, ``page``) with
  ``_corrupt_record``.
* quarantine — malformed lines: raw text + source file.
* silver — ``time`` as a timestamp.
* gold — sessions: per user, views less than 30 minutes apart belong to one session. The
  :class:`~sample_pipelines.sessions.processor.SessionProcessor` keeps, per user, a **value
  state** ``session`` (start, last view, views) and a **list state** ``pages`` (the pages
  viewed), both with a 1-day **TTL**, and a **processing-time timer** ``session_idle_ms``
  (run option, default 2 minutes) after the user's latest batch. A session is written when a
  view arrives more than 30 minutes of event time after its last one (``closed_by = "gap"``)
  or when its timer fires (``closed_by = "timer"``: the user was idle that long on the
  clock). Append mode; one row per closed session. Spark allows TTL only in processing-time
  mode (``STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_ASSIGN_TTL``), hence processing-time
  timers; in a replay event time runs faster than the clock, so the gap closes most sessions.

transformWithState runs only on the RocksDB state store: the gold layer asks for
``RocksDBStateStoreProvider`` in :attr:`~streamwatch.pipeline.Layer.conf`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamwatch.pipeline import LandingSource, Layer, LayerContext, Pipeline

from ..common import file_bronze, good_rows, quarantine_layer, table_stream
from .factory import ViewsFactory

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

MAX_FILES_PER_TRIGGER = 12
GAP_MS = 30 * 60 * 1000
IDLE_MS = 2 * 60 * 1000
TTL_MS = 24 * 3600 * 1000
ROCKSDB = (("spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"),)
SESSIONS_SCHEMA = ("user STRING, session_start TIMESTAMP, session_end TIMESTAMP, views LONG, "
                   "distinct_pages LONG, closed_by STRING")


def views_schema() -> StructType:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("time", LongType()), StructField("user", StringType()),
                       StructField("page", StringType())])


def bronze(ctx: LayerContext) -> DataFrame:
    return file_bronze(ctx, "views", "json", views_schema(), MAX_FILES_PER_TRIGGER)


def silver(ctx: LayerContext) -> DataFrame:
    from pyspark.sql import functions as F

    return good_rows(table_stream(ctx, "bronze")).select(
        F.timestamp_seconds("time").alias("time"), "user", "page", "_source_file")


def sessionize(silver_df: DataFrame, idle_ms: int = IDLE_MS) -> DataFrame:
    """Silver page views → closed sessions (``SESSIONS_SCHEMA``) through the stateful
    processor in processing-time mode; ``idle_ms`` is the idle timer (ms of wall clock)."""
    from .processor import SessionProcessor

    return (
        silver_df.select("user", "time", "page")
        .groupBy("user")
        .transformWithStateInPandas(SessionProcessor(idle_ms), SESSIONS_SCHEMA, "Append", "ProcessingTime")
    )


def gold(ctx: LayerContext) -> DataFrame:
    return sessionize(table_stream(ctx, "silver"), int(ctx.options.get("session_idle_ms") or IDLE_MS))


def pipeline() -> Pipeline:
    return Pipeline(
        name="sessions",
        description="page views → user sessions with transformWithStateInPandas (value + list state, TTL, timers)",
        sources=(LandingSource("views", "page views as JSON lines, 30 min per file", ViewsFactory),),
        layers=(
            Layer("bronze", "bronze", "JSON lines → time, user, page + _corrupt_record", bronze, source="json",
                  landing=("views",)),
            quarantine_layer(),
            Layer("silver", "silver", "time as timestamp", silver, upstream=("bronze",)),
            Layer("gold", "sessions",
                  "transformWithStateInPandas: sessions closed by a 30 min gap or an idle timer",
                  gold, upstream=("silver",), conf=ROCKSDB),
        ),
    )
