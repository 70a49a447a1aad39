"""Building blocks shared by the bundled pipelines (no pyspark import at module level).

* :func:`file_bronze` — a file source (CSV/JSON) with an explicit schema, ``PERMISSIVE``
  parsing into a ``_corrupt_record`` column, ``maxFilesPerTrigger``, and the source file and
  ingestion time of every row. Bronze keeps every input record, good or malformed.
* :func:`quarantine_layer` — a query reading bronze's malformed rows (``_corrupt_record`` is
  set) into a ``quarantine`` table holding the raw record and its source file, so
  ``input records = bronze good rows + quarantined rows`` exactly.
* :func:`check_ratios` — the data factories' validation of their fault-injection ratios.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamwatch.pipeline import Layer, LayerContext

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

CORRUPT = "_corrupt_record"


def check_ratios(**ratios: float) -> None:
    """Validate a data factory's fault-injection ratios (``late_ratio=0.1, bad_ratio=0.0`` …):
    each is a fraction in [0, 1]. Raises ``ValueError`` naming the first one outside."""
    for name, r in ratios.items():
        if not 0.0 <= r <= 1.0:
            raise ValueError(f"{name} must be between 0 and 1, got {r}")


def with_corrupt_column(schema: StructType) -> StructType:
    """``schema`` plus the nullable string column Spark fills with a malformed record's text."""
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType(list(schema.fields) + [StructField(CORRUPT, StringType())])


def file_bronze(ctx: LayerContext, source: str, fmt: str, schema: StructType, default_max_files: int, **options: Any) -> DataFrame:
    """Streaming read of landing ``source`` as ``fmt`` (``csv``/``json``) with ``schema`` plus
    ``_corrupt_record``; adds ``_source_file`` (the file's URI) and ``_ingested_at``.
    ``options`` are passed to the reader (``header``, ``multiLine``, ``cleanSource`` …);
    ``ctx.options["max_files_per_trigger"]`` overrides ``default_max_files``."""
    from pyspark.sql import functions as F

    reader = (
        ctx.spark.readStream.format(fmt)
        .schema(with_corrupt_column(schema))
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .option("maxFilesPerTrigger", ctx.options.get("max_files_per_trigger") or default_max_files)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return (
        reader.load(str(ctx.landing[source]))
        .withColumn("_source_file", F.col("_metadata.file_path"))
        .withColumn("_ingested_at", F.current_timestamp())
    )


def good_rows(df: DataFrame) -> DataFrame:
    """Rows that parsed (no ``_corrupt_record``), without that column."""
    return df.where(f"{CORRUPT} IS NULL").drop(CORRUPT)


def table_stream(ctx: LayerContext, table: str) -> DataFrame:
    """Streaming read of an upstream table, honouring ``max_files_per_trigger``."""
    return ctx.tables.read_stream(table, ctx.options.get("max_files_per_trigger"))


def quarantine(ctx: LayerContext, bronze_table: str = "bronze") -> DataFrame:
    """Bronze's malformed rows: ``raw_record`` (the text Spark could not parse),
    ``source_file``, ``ingested_at``."""
    from pyspark.sql import functions as F

    return (
        table_stream(ctx, bronze_table)
        .where(F.col(CORRUPT).isNotNull())
        .select(
            F.col(CORRUPT).alias("raw_record"),
            F.col("_source_file").alias("source_file"),
            F.col("_ingested_at").alias("ingested_at"),
        )
    )


def quarantine_layer(bronze_table: str = "bronze") -> Layer:
    """The ``quarantine`` layer (query ``<pipeline>_quarantine``, table ``quarantine``)."""
    return Layer(
        "quarantine", "quarantine",
        "malformed records from bronze: raw record + source file",
        lambda ctx: quarantine(ctx, bronze_table),
        upstream=(bronze_table,),
    )
