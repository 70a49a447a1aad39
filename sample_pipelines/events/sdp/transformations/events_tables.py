"""The events pipeline's tables declared for Spark Declarative Pipelines (pyspark 4.1+): the
same medallion as the bundled ``events`` pipeline, which streamwatch runs layer by layer.

* ``events_bronze`` — streaming table over the landing folder's JSON lines (``time`` epoch
  seconds, ``action``), ``PERMISSIVE`` parsing into ``_corrupt_record``, 10 files a batch;
* ``events_quarantine`` — streaming table of bronze's malformed lines and their files;
* ``events_silver`` — streaming table of the lines that parsed, ``time`` as a timestamp;
* ``events_gold`` (``events_gold.sql``) — materialized view: opens and closes per action per
  1-hour window.

The landing folder comes from the spec's ``configuration`` (``streamwatch.events.landing``).
Columns are chosen with ``select``: SDP refuses ``drop`` on a pipeline table at registration.
"""

from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

spark = SparkSession.active()
_landing = spark.conf.get("streamwatch.events.landing")
if _landing is None:
    raise ValueError("streamwatch.events.landing is not set: the spec's configuration names the landing folder")
LANDING: str = _landing
CORRUPT = "_corrupt_record"
SCHEMA = StructType([StructField("time", LongType()), StructField("action", StringType()),
                     StructField(CORRUPT, StringType())])


@dp.table(name="events_bronze", comment="every landed line, good or malformed, with its file")
def events_bronze() -> DataFrame:
    return (spark.readStream.schema(SCHEMA).option("mode", "PERMISSIVE")
            .option("columnNameOfCorruptRecord", CORRUPT).option("maxFilesPerTrigger", 10)
            .json(LANDING).withColumn("_source_file", F.col("_metadata.file_path")))


@dp.table(name="events_quarantine", comment="lines that did not parse: raw text and file")
def events_quarantine() -> DataFrame:
    return (spark.readStream.table("events_bronze").where(F.col(CORRUPT).isNotNull())
            .select(F.col(CORRUPT).alias("raw_record"), F.col("_source_file").alias("source_file")))


@dp.table(name="events_silver", comment="lines that parsed, time as a timestamp")
def events_silver() -> DataFrame:
    return (spark.readStream.table("events_bronze").where(F.col(CORRUPT).isNull())
            .select(F.timestamp_seconds("time").alias("time"), "action", "_source_file"))
