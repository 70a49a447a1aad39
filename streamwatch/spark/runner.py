"""Run a pipeline's layers as streaming queries (no textual import)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from streamwatch.model.runtime import QueryPlan, RunPlan
from streamwatch.pipeline import LayerContext, Pipeline, Workspace
from streamwatch.spark.tables import Tables


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
    ``max_files_per_trigger``)."""

    def __init__(
        self,
        spark: SparkSession,
        pipeline: Pipeline,
        workspace: Workspace,
        table_format: str,
        options: dict[str, Any] | None = None,
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
        )
        for d in self.ctx.landing.values():
            d.mkdir(parents=True, exist_ok=True)
        self.queries: list[StreamingQuery] = []
        self._by_layer: dict[str, StreamingQuery] = {}
        self._set_up = False

    def setup(self) -> None:
        if not self._set_up and self.pipeline.setup:
            self.pipeline.setup(self.ctx)
        self._set_up = True

    def _layer(self, name: str):
        for layer in self.pipeline.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"pipeline {self.pipeline.name!r} has no layer {name!r}")

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

    def _start_layer(self, layer, trigger: str) -> StreamingQuery:
        df = layer.build(self.ctx)
        q = self.tables.write_stream(
            df,
            layer.table,
            checkpoint=self.workspace.checkpoint(self.pipeline.name, layer.name),
            query_name=self.pipeline.query_name(layer),
            trigger=trigger,
            output_mode=layer.output_mode,
        )
        self.queries.append(q)
        self._by_layer[layer.name] = q
        return q

    def start(self, trigger: str = "processingTime=2 seconds") -> list[StreamingQuery]:
        """Start every layer concurrently (upstream first); returns the queries."""
        self.setup()
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
