"""Run a pipeline's layers as streaming queries (no textual import)."""

from __future__ import annotations

from typing import Any, Mapping

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.runtime import QueryPlan, RunPlan
from streamwatch.pipeline import OUTPUT_MODES, Layer, LayerContext, Pipeline, Workspace
from streamwatch.spark.tables import Tables, check_continuous, trigger_kwargs


class QueryRejected(StreamwatchError, ValueError):
    """Spark refused to start a layer's query (an invalid query shape for its output mode or
    trigger: append on an aggregation without watermark, sorting a stream, an output mode
    the sink does not support, continuous on a file source …). ``str()`` is one line:
    ``<query name>: <Spark's message>``; ``condition`` is Spark's error condition when known
    (e.g. ``STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION``)."""

    exit_code = ExitCode.ERRORS

    def __init__(self, message: str, condition: str | None = None) -> None:
        super().__init__(message)
        self.condition = condition


def _one_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0].strip() if text else type(e).__name__


def plan_run(pipeline: Pipeline, workspace: Workspace, trigger: str) -> RunPlan:
    """The queries, checkpoints and landing folders a run of ``pipeline`` will use."""
    return RunPlan(
        pipeline=pipeline.name,
        description=pipeline.description,
        queries=tuple(
            QueryPlan(
                query_name=pipeline.query_name(layer),
                layer=layer.name,
                checkpoint=str(workspace.checkpoint(pipeline.name, layer.name)),
                table=str(workspace.table(pipeline.name, layer.table)),
            )
            for layer in pipeline.layers
        ),
        landing=tuple((s.name, str(workspace.landing(pipeline.name, s.name))) for s in pipeline.sources),
        trigger=trigger,
    )


class PipelineRunner:
    """Starts and stops the layers of ``pipeline`` in ``spark`` with tables of ``table_format``
    under ``workspace``. ``options`` reach each layer's ``build`` (e.g.
    ``max_files_per_trigger``: files per micro-batch for landing and table reads).
    ``output_modes`` overrides a layer's output mode for this run (``{"gold": "update"}``);
    raises ``ValueError`` for an unknown layer or mode.

    Starting a layer raises :class:`QueryRejected` (one clear line) when Spark refuses the
    query shape or the trigger, and ``ValueError`` for an unknown trigger spec."""

    def __init__(
        self,
        spark: SparkSession,
        pipeline: Pipeline,
        workspace: Workspace,
        table_format: str,
        options: dict[str, Any] | None = None,
        *,
        output_modes: Mapping[str, str] | None = None,
    ) -> None:
        self.spark = spark
        self.pipeline = pipeline
        self.workspace = workspace
        self.tables = Tables(spark, table_format, workspace.root / "tables" / pipeline.name)  # type: ignore[arg-type]
        self.ctx = LayerContext(
            spark=spark,
            tables=self.tables,
            landing={s.name: workspace.landing(pipeline.name, s.name) for s in pipeline.sources},
            options=dict(options or {}),
            archive={s.name: workspace.archive(pipeline.name, s.name) for s in pipeline.sources},
        )
        self.output_modes: dict[str, str] = {}
        for layer_name, mode in (output_modes or {}).items():
            pipeline.layer(layer_name)
            if mode not in OUTPUT_MODES:
                raise ValueError(f"unknown output mode {mode!r} for layer {layer_name!r}: use {', '.join(OUTPUT_MODES)}")
            self.output_modes[layer_name] = mode
        for d in self.ctx.landing.values():
            d.mkdir(parents=True, exist_ok=True)
        self.queries: list[StreamingQuery] = []
        self._by_layer: dict[str, StreamingQuery] = {}
        self._set_up = False

    def setup(self) -> None:
        if not self._set_up and self.pipeline.setup:
            self.pipeline.setup(self.ctx)
        self._set_up = True

    def _layer(self, name: str) -> Layer:
        return self.pipeline.layer(name)

    def output_mode(self, layer: Layer) -> str:
        """The output mode ``layer`` runs with in this run."""
        return self.output_modes.get(layer.name, layer.output_mode)

    def start_layer(self, name: str, trigger: str = "processingTime=2 seconds") -> StreamingQuery:
        """(Re)start one layer's query; stops its running query first. Upstream Parquet tables
        must have been started once in this process (their schema is needed). Raises
        ``KeyError`` for an unknown layer."""
        self.setup()
        self.stop_layer(name)
        return self._start_layer(self._layer(name), trigger)

    def stop_layer(self, name: str) -> None:
        """Stop one layer's query if it runs (``KeyError`` for an unknown layer)."""
        self._layer(name)
        q = self._by_layer.pop(name, None)
        if q is not None:
            try:
                q.stop()
            except Exception:
                pass

    def query(self, name: str) -> StreamingQuery | None:
        """The current query of layer ``name`` (None when not started)."""
        return self._by_layer.get(name)

    def check_trigger(self, trigger: str) -> None:
        """Raise ``ValueError`` for an unknown trigger spec and :class:`QueryRejected` when a
        layer cannot run under it (continuous on file sources or table sinks)."""
        if "continuous" not in trigger_kwargs(trigger):
            return
        for layer in self.pipeline.layers:
            source = self.tables.format if layer.source == "table" else layer.source
            mode = self.output_mode(layer)
            sink = "memory" if layer.sink == "memory" else self.tables.format
            if (sink == "parquet" and mode == "complete") or (sink == "delta" and layer.merge_keys):
                sink = "foreachBatch"
            try:
                check_continuous(self.pipeline.query_name(layer), source, sink)
            except ValueError as e:
                raise QueryRejected(str(e), "CONTINUOUS_UNSUPPORTED") from None

    def _start_layer(self, layer: Layer, trigger: str) -> StreamingQuery:
        self.check_trigger(trigger)
        name = self.pipeline.query_name(layer)
        mode = self.output_mode(layer)
        try:
            df = layer.build(self.ctx)
            q = self.tables.write_stream(
                df,
                layer.table,
                checkpoint=self.workspace.checkpoint(self.pipeline.name, layer.name),
                query_name=name,
                trigger=trigger,
                output_mode=mode,
                sink=layer.sink,  # type: ignore[arg-type]
                merge_keys=layer.merge_keys,
            )
        except AnalysisException as e:
            condition = e.getCondition() if hasattr(e, "getCondition") else None
            raise QueryRejected(f"{name} ({mode} mode): Spark rejected the query: {_one_line(e)}", condition) from None
        self.queries.append(q)
        self._by_layer[layer.name] = q
        return q

    def start(self, trigger: str = "processingTime=2 seconds") -> list[StreamingQuery]:
        """Start every layer concurrently (upstream first); returns the queries. On
        :class:`QueryRejected` the layers already started are stopped before it propagates."""
        self.check_trigger(trigger)
        self.setup()
        try:
            return self._start_all(trigger)
        except Exception:
            self.stop()
            raise

    def _start_all(self, trigger: str) -> list[StreamingQuery]:
        for layer in self.pipeline.layers:
            self._start_layer(layer, trigger)
        return list(self.queries)

    def run_available_now(self, timeout_s: float | None = None) -> None:
        """Run each layer with ``availableNow`` to completion, upstream first, so every layer
        sees all of its input. Raises pyspark's ``StreamingQueryException`` when one fails."""
        self.setup()
        for layer in self.pipeline.layers:
            q = self._start_layer(layer, "availableNow")
            q.awaitTermination(timeout_s)
            if q.isActive:
                q.stop()
                raise TimeoutError(f"{q.name} did not finish within {timeout_s} s")
            if q.exception() is not None:
                raise q.exception()  # type: ignore[misc]

    def stop(self) -> None:
        """Stop every query (downstream first); never raises."""
        for q in reversed(self.queries):
            try:
                q.stop()
            except Exception:
                pass
