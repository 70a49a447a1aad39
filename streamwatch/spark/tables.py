"""One small interface for reading and writing tables, Delta or Parquet, so pipeline code is
the same in both modes.

* ``delta``: Delta Lake tables (``format("delta")``), exactly-once through the Delta log;
  every output mode Delta's sink supports (append, complete).
* ``parquet``: Spark's file sink, exactly-once through its ``_spark_metadata`` log; a
  streaming read of such a folder lists files from that log (``FileStreamSource``), and the
  schema comes from the upstream writer (registered by :meth:`Tables.write_stream`). The file
  sink only appends, so ``complete`` mode goes through ``foreachBatch``, overwriting the whole
  table with each batch's full result (idempotent: a batch replayed after a crash writes the
  same result again).
* ``merge_keys`` (Delta only): the table is maintained by ``foreachBatch`` with a Delta
  ``MERGE`` on those keys (update matched rows, insert the rest), made idempotent across
  retries by Delta's ``txnAppId``/``txnVersion`` (a batch id replayed after a crash is skipped
  by Delta, whose ``txn`` action records the last version per application id).
* ``memory``: Spark's memory sink (``format("memory")``), a per-session in-memory table named
  after the query, queryable with ``spark.table(query_name)``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter
from pyspark.sql.types import StructType

from streamwatch.analysis.triggers import ONCE_NOTE, TRIGGERS_HELP, Trigger, as_trigger, trigger_kwargs, trigger_note
from streamwatch.model.location import Location

__all__ = ["ONCE_NOTE", "TRIGGERS_HELP", "Sink", "TableFormat", "Tables", "as_sink", "check_continuous",
           "trigger_kwargs", "trigger_note"]

TableFormat = Literal["delta", "parquet"]
Sink = Literal["table", "memory"]
#: a ``foreachBatch`` function: (the micro-batch's rows, batch id) → None
BatchFunction = Callable[[DataFrame, int], None]

#: no ``trigger()`` call: Spark's default (the next micro-batch as soon as the last ends)
DEFAULT_TRIGGER = Trigger("default")


def as_sink(sink: str) -> Sink:
    """A layer's ``sink`` setting as a :data:`Sink`: ``memory`` is Spark's memory sink,
    anything else the layer's table (as :meth:`Tables.stream_writer` has always read it)."""
    return "memory" if sink == "memory" else "table"

# Sources and sinks of Spark 4.x that run under Trigger.Continuous (ContinuousExecution):
# sources implementing ContinuousStream, sinks supporting STREAMING_WRITE in continuous mode.
CONTINUOUS_SOURCES = frozenset({"kafka", "rate", "rate-micro-batch"})
CONTINUOUS_SINKS = frozenset({"kafka", "memory", "console", "foreach"})


def check_continuous(query_name: str, source: str, sink: str) -> None:
    """Raise ``ValueError`` with a clear message when a query reading ``source`` and writing
    ``sink`` (format names, e.g. ``csv``, ``parquet``, ``delta``) cannot run under a
    continuous trigger. Continuous processing also rejects aggregations and joins."""
    if source not in CONTINUOUS_SOURCES:
        raise ValueError(
            f"{query_name}: continuous trigger not supported: its source ({source}) only runs "
            f"in micro-batches; continuous processing needs a {'/'.join(sorted(CONTINUOUS_SOURCES))} "
            "source — use processingTime=<interval> instead"
        )
    if sink not in CONTINUOUS_SINKS:
        raise ValueError(
            f"{query_name}: continuous trigger not supported: its sink ({sink}) only runs in "
            f"micro-batches; continuous processing writes to {'/'.join(sorted(CONTINUOUS_SINKS))} "
            "— use processingTime=<interval> instead"
        )


def as_location(folder: Location | Path) -> Location:
    """``folder`` as a :class:`Location` (a ``Path`` is a local folder)."""
    return folder if isinstance(folder, Location) else Location.local(folder)


class Tables:
    """Tables of one pipeline under ``root`` in one ``fmt``.

    ``root/<name>`` holds the table's files; ``root`` is a local folder or an S3 prefix
    (a :class:`~streamwatch.model.location.Location`; Spark reaches it as ``s3a://…``, which
    needs ``hadoop-aws``). Schemas of tables written by streams are remembered so Parquet
    tables can be read back as streams.
    """

    def __init__(self, spark: SparkSession, fmt: TableFormat, root: Location | Path) -> None:
        self.spark = spark
        self.format: TableFormat = fmt
        self.root = as_location(root)
        self._schemas: dict[str, StructType] = {}

    def path(self, name: str) -> str:
        """Table ``name``'s folder as Spark names it (absolute local path or ``s3a://…``)."""
        return (self.root / name).spark_uri

    def write_static(self, df: DataFrame, name: str) -> None:
        """Overwrite table ``name`` with a batch DataFrame (dimensions, lookups)."""
        df.write.format(self.format).mode("overwrite").save(self.path(name))
        self._schemas[name] = df.schema

    def read(self, name: str) -> DataFrame:
        """Batch read of table ``name`` (for Parquet, only committed files are listed; with the
        schema its writer was started with, so a table with no file yet reads empty instead of
        failing schema inference)."""
        reader = self.spark.read.format(self.format)
        if self.format == "parquet" and name in self._schemas:
            reader = reader.schema(self._schemas[name])
        return reader.load(self.path(name))

    def read_stream(self, name: str, max_files_per_trigger: int | None = None) -> DataFrame:
        """Streaming read of table ``name``, at most ``max_files_per_trigger`` files (Parquet)
        or commit files (Delta) per micro-batch when given; raises ``KeyError`` when a Parquet
        table's schema is unknown (its writer has not been started in this process)."""
        reader = self.spark.readStream.format(self.format)
        if max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", int(max_files_per_trigger))
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
        checkpoint: Location | Path,
        query_name: str,
        trigger: Trigger | str = DEFAULT_TRIGGER,
        output_mode: str = "append",
        sink: Sink = "table",
        merge_keys: tuple[str, ...] = (),
    ) -> StreamingQuery:
        """Start a streaming query writing ``df`` to table ``name`` (``sink="table"``) or to
        the memory table ``query_name`` (``sink="memory"``): the writer of
        :meth:`stream_writer` with ``trigger`` set, started after the table folder is created
        (and, for Delta, the empty table initialised).

        ``checkpoint`` is the query's checkpoint folder; ``trigger`` a
        :class:`~streamwatch.analysis.triggers.Trigger` (or its spec, parsed here). Raises
        ``ValueError`` for a bad trigger spec and pyspark's ``AnalysisException`` for query shapes Spark rejects (append
        on an aggregation without watermark, sorting a stream, an output mode the sink does
        not support …). ``merge_keys`` (Delta tables only; ignored for Parquet) keeps the table
        by an idempotent ``MERGE`` per micro-batch, see :func:`merge_batch`.
        """
        kwargs = as_trigger(trigger).kwargs()  # a bad spec raises before the schema is remembered
        writer = self.stream_writer(df, name, checkpoint=checkpoint, query_name=query_name, output_mode=output_mode,
                                    sink=sink, merge_keys=merge_keys)
        if kwargs:  # pyspark rejects trigger() without arguments; the default is no call
            # kwargs() holds exactly one of trigger()'s keywords; pyspark's overloads take one
            # named keyword each and none has realTime, so no overload matches **kwargs
            writer = writer.trigger(**kwargs)  # type: ignore[call-overload]
        if sink == "table":
            path = self.path(name)
            if self.root.is_local:  # an object store has no folders to make: keys are created by writes
                Path(path).mkdir(parents=True, exist_ok=True)
            if self.format == "delta":
                # a downstream readStream needs the table to exist before the first commit
                self.spark.createDataFrame([], df.schema).write.format("delta").mode("ignore").save(path)
        return writer.start()

    def stream_writer(
        self,
        df: DataFrame,
        name: str,
        *,
        checkpoint: Location | Path,
        query_name: str,
        output_mode: str = "append",
        sink: Sink = "table",
        merge_keys: tuple[str, ...] = (),
    ) -> DataStreamWriter:
        """The ``DataStreamWriter`` :meth:`write_stream` starts, configured but NOT started
        (also for ``streamwatch compat``): query name, output mode, checkpoint option, sink
        format (``delta``/``parquet``/``memory``, or ``foreachBatch`` for a Delta MERGE or a
        Parquet ``complete`` table) and, for a format sink, the table folder as its ``path``
        option. No trigger is set (the caller picks one). Nothing is written: the table folder
        is neither created nor initialised; only ``df``'s schema is remembered (table sink), so
        a downstream layer's :meth:`read_stream` of a Parquet table works as after a start."""
        checkpoint = as_location(checkpoint)
        writer = (
            df.writeStream.queryName(query_name)
            .outputMode(output_mode)
            .option("checkpointLocation", checkpoint.spark_uri)
        )
        if sink == "memory":
            return writer.format("memory")
        path = self.path(name)
        self._schemas[name] = df.schema
        if self.format == "delta":
            if merge_keys:
                return writer.foreachBatch(merge_batch(path, merge_keys, checkpoint))
            return writer.format("delta").option("path", path)
        if output_mode == "complete":
            return writer.foreachBatch(_overwrite_parquet(path))
        return writer.format("parquet").option("path", path)


def _overwrite_parquet(path: str) -> BatchFunction:
    """foreachBatch function: replace the Parquet table at ``path`` with the batch's rows."""

    def overwrite(batch_df: DataFrame, batch_id: int) -> None:  # noqa: ARG001 - Spark's signature
        batch_df.write.mode("overwrite").parquet(path)

    return overwrite


def merge_batch(path: str, keys: tuple[str, ...], checkpoint: Location | Path) -> BatchFunction:
    """foreachBatch function: ``MERGE`` a micro-batch into the Delta table at ``path`` on
    ``keys`` (matched rows updated with every column, others inserted).

    Idempotent across retries: the merge runs with Delta's ``txnAppId`` = the streaming query
    id (read from ``<checkpoint>/metadata``, stable across restarts — the id Delta's own
    streaming sink uses) and ``txnVersion`` = the batch id, set on the micro-batch's own
    (per-query cloned) session, so Delta skips a batch id it already committed for that query
    (its ``txn`` action), as Delta's docs recommend for ``foreachBatch``. The inspector maps
    batches to Delta versions through the same ``txn``. Batch rows must be unique per key."""
    import json

    def merge(batch_df: DataFrame, batch_id: int) -> None:
        from delta.tables import DeltaTable

        from streamwatch.checkpoint.fs import open_storage

        storage, folder = open_storage(as_location(checkpoint).fsspec_uri)  # local or s3:// (fsspec)
        app_id = json.loads(storage.read(storage.join(folder, "metadata")))["id"]
        session = batch_df.sparkSession
        session.conf.set("spark.databricks.delta.write.txnAppId", app_id)
        session.conf.set("spark.databricks.delta.write.txnVersion", str(batch_id))
        try:
            cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
            (DeltaTable.forPath(session, path).alias("t")
             .merge(batch_df.alias("s"), cond)
             .whenMatchedUpdateAll().whenNotMatchedInsertAll().execute())
        finally:
            session.conf.unset("spark.databricks.delta.write.txnAppId")
            session.conf.unset("spark.databricks.delta.write.txnVersion")

    return merge
