"""The Spark half of ``streamwatch compat``: load the changed query (``MODULE:FUNCTION``
returning a configured, not started ``DataStreamWriter``), read its shape from the analyzed
logical plan and the writer's settings without running a batch, and ``--verify`` by starting
it with ``availableNow`` on a temporary copy of the checkpoint (and of a file sink folder).

Loading is here; reading the shape is :mod:`streamwatch.spark.compat_shape` (the writer's
settings are private fields of ``org.apache.spark.sql.classic.DataStreamWriter``, read through
JVM reflection) and ``--verify`` is :mod:`streamwatch.spark.compat_verify`; their public names
are importable from here.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import TYPE_CHECKING

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.spark.compat_shape import SchemaJson, shape
from streamwatch.spark.compat_verify import ResumedSource, SparkAnswer, verify

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    from streamwatch.spark.tables import TableFormat

__all__ = ["QueryLoadError", "ResumedSource", "SchemaJson", "SparkAnswer", "bundled_writer", "load_writer", "shape",
           "verify"]


class QueryLoadError(StreamwatchError):
    """MODULE:FUNCTION cannot be imported or called, or does not return a DataStreamWriter;
    an unknown bundled pipeline or layer. Exit 2 (usage)."""

    exit_code = ExitCode.USAGE


def load_writer(spec: str, spark: SparkSession, search_path: str | None = None) -> DataStreamWriter:
    """Import ``MODULE:FUNCTION`` (MODULE may also be a ``.py`` file path) and call
    ``FUNCTION(spark)``. Raises :class:`QueryLoadError`."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    mod_name, sep, func = spec.rpartition(":")
    if not sep or not mod_name or not func:
        raise QueryLoadError(f"{spec!r}: expected MODULE:FUNCTION")
    try:
        if mod_name.endswith(".py"):
            s = importlib.util.spec_from_file_location(f"streamwatch_compat_{abs(hash(mod_name))}", mod_name)
            if s is None or s.loader is None:
                raise QueryLoadError(f"{mod_name}: cannot load")
            module = importlib.util.module_from_spec(s)
            s.loader.exec_module(module)
        else:
            if search_path and search_path not in sys.path:
                sys.path.insert(0, search_path)
            module = importlib.import_module(mod_name)
        fn = getattr(module, func)
    except (ImportError, AttributeError, OSError, SyntaxError) as e:
        raise QueryLoadError(f"{spec}: {type(e).__name__}: {e}") from None
    writer = fn(spark)
    if not isinstance(writer, DataStreamWriter):
        raise QueryLoadError(f"{spec} returned {type(writer).__name__}, not a DataStreamWriter (return df.writeStream…, not started)")
    return writer


def bundled_writer(spark: SparkSession, pipeline_name: str, layer: str, workspace: str,
                   table_format: TableFormat | None = None) -> DataStreamWriter:
    """The configured, not started ``DataStreamWriter`` of a bundled (or plugged-in) pipeline's
    layer, as ``streamwatch run`` would start it over the workspace at ``workspace`` (tables of
    ``table_format``; None: ``delta`` when the layer's table has a ``_delta_log``, else
    ``parquet``), see :meth:`PipelineRunner.layer_writer`. Raises :class:`QueryLoadError`
    for an unknown pipeline or layer, or a layer Spark cannot build (e.g. a static table it
    reads is missing)."""
    from pathlib import Path

    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner, QueryRejected

    try:
        pipeline = get_pipeline(pipeline_name)
        target = pipeline.layer(layer)
    except KeyError as e:
        raise QueryLoadError(e.args[0]) from None
    ws = Workspace(Path(workspace))
    table = ws.table(pipeline.name, target.table)
    fmt: TableFormat = table_format or ("delta" if table.is_local and (Path(table) / "_delta_log").is_dir() else "parquet")
    runner = PipelineRunner(spark, pipeline, ws, fmt)
    try:
        return runner.layer_writer(layer)
    except QueryRejected as e:
        raise QueryLoadError(str(e)) from None
