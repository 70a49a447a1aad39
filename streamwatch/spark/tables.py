"""One small interface for reading and writing tables, Delta or Parquet, so pipeline code is
the same in both modes.

* ``delta``: Delta Lake tables (``format("delta")``), exactly-once through the Delta log.
* ``parquet``: Spark's file sink, exactly-once through its ``_spark_metadata`` log; a
  streaming read of such a folder lists files from that log (``FileStreamSource``), and the
  schema comes from the upstream writer (registered by :meth:`Tables.write_stream`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery
from pyspark.sql.types import StructType

TableFormat = Literal["delta", "parquet"]


def trigger_kwargs(spec: str) -> dict[str, object]:
    """Map a trigger spec to ``DataStreamWriter.trigger`` keyword arguments.

    ``default`` → {} (micro-batches back to back); ``availableNow``; ``once``;
    ``processingTime=2 seconds`` (or ``2s``, ``500ms``). Raises ``ValueError`` otherwise.
    """
    s = spec.strip()
    if s in ("", "default"):
        return {}
    if s.lower() == "availablenow":
        return {"availableNow": True}
    if s.lower() == "once":
        return {"once": True}
    if s.lower().startswith("processingtime="):
        interval = s.split("=", 1)[1].strip()
        units = {"ms": "milliseconds", "s": "seconds", "m": "minutes"}
        for short, long in units.items():
            if interval.endswith(short) and interval[: -len(short)].strip().isdigit():
                interval = f"{interval[:-len(short)].strip()} {long}"
                break
        return {"processingTime": interval}
    raise ValueError(
        f"unknown trigger {spec!r}: use default, availableNow, once or processingTime=<interval>"
    )


class Tables:
    """Tables of one pipeline under ``root`` in one ``fmt``.

    ``root/<name>`` holds the table's files. Schemas of tables written by streams are
    remembered so Parquet tables can be read back as streams.
    """

    def __init__(self, spark: SparkSession, fmt: TableFormat, root: Path) -> None:
        self.spark = spark
        self.format: TableFormat = fmt
        self.root = root
        self._schemas: dict[str, StructType] = {}

    def path(self, name: str) -> str:
        return str((self.root / name).resolve())

    def write_static(self, df: DataFrame, name: str) -> None:
        """Overwrite table ``name`` with a batch DataFrame (dimensions, lookups)."""
        df.write.format(self.format).mode("overwrite").save(self.path(name))
        self._schemas[name] = df.schema

    def read(self, name: str) -> DataFrame:
        """Batch read of table ``name`` (for Parquet, only committed files are listed)."""
        return self.spark.read.format(self.format).load(self.path(name))

    def read_stream(self, name: str) -> DataFrame:
        """Streaming read of table ``name``; raises ``KeyError`` when a Parquet table's schema
        is unknown (its writer has not been started in this process)."""
        reader = self.spark.readStream.format(self.format)
        if self.format == "parquet":
            if name not in self._schemas:
                raise KeyError(f"table {name!r}: schema unknown; start its writer first")
            reader = reader.schema(self._schemas[name])
        return reader.load(self.path(name))

    def write_stream(
        self,
        df: DataFrame,
        name: str,
        *,
        checkpoint: Path,
        query_name: str,
        trigger: str = "default",
        output_mode: str = "append",
    ) -> StreamingQuery:
        """Start a streaming query writing ``df`` to table ``name``.

        ``checkpoint`` is the query's checkpoint folder; ``trigger`` a spec for
        :func:`trigger_kwargs`. Raises ``ValueError`` for a bad trigger and pyspark's
        ``AnalysisException`` for query shapes Spark rejects.
        """
        path = self.path(name)
        self._schemas[name] = df.schema
        Path(path).mkdir(parents=True, exist_ok=True)
        if self.format == "delta":
            # a downstream readStream needs the table to exist before the first commit
            self.spark.createDataFrame([], df.schema).write.format("delta").mode("ignore").save(path)
        writer = (
            df.writeStream.format(self.format)
            .queryName(query_name)
            .outputMode(output_mode)
            .option("checkpointLocation", str(checkpoint.resolve()))
            .trigger(**trigger_kwargs(trigger))
        )
        return writer.start(path)
