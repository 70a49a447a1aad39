"""Run a pipeline's layers as streaming queries, and the live backend of the dashboard.

Data flows one way: Spark → :class:`PublishingListener` → :class:`EventBus` → ``emit``
(the dashboard's ``post_message``, a recorder …). Nothing here imports textual.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from streamwatch.events.bus import EventBus
from streamwatch.feeder import Feeder
from streamwatch.model.runtime import QueryPlan, RunPlan, RuntimeNotice, SessionInfo
from streamwatch.pipeline import LayerContext, Pipeline, Workspace
from streamwatch.spark.listener import PublishingListener
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
        self._set_up = False

    def setup(self) -> None:
        if not self._set_up and self.pipeline.setup:
            self.pipeline.setup(self.ctx)
        self._set_up = True

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


class LiveBackend:
    """Everything the dashboard runs in-process, with no textual import: the SparkSession
    (created here unless ``spark`` is given), the listener, the pipeline's queries, and a
    feeder landing data. Model objects go to ``emit`` through a bounded :class:`EventBus`.

    ``start(emit)`` blocks for the Spark start-up (~6 s): call it from a worker thread.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        workspace: Workspace,
        trigger: str = "processingTime=2 seconds",
        spark: SparkSession | None = None,
        table_format: str | None = None,
        land_every_s: float = 1.0,
        initial_files: int = 10,
        max_files: int | None = None,
        options: dict[str, Any] | None = None,
        ui: bool = True,
    ) -> None:
        self.pipeline = pipeline
        self.workspace = workspace
        self.trigger = trigger
        self.plan = plan_run(pipeline, workspace, trigger)
        self._spark = spark
        self._owns_spark = spark is None
        self._table_format = table_format
        self._land_every_s = land_every_s
        self._initial_files = initial_files
        self._max_files = max_files
        self._options = options
        self._ui = ui
        self.bus = EventBus()
        self.runner: PipelineRunner | None = None
        self.feeders: list[Feeder] = []
        self._listener: PublishingListener | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def start(self, emit: Callable[[object], None]) -> SessionInfo:
        """Start Spark, the listener, the queries and the feeders; returns the session info
        (also emitted). Raises whatever Spark raises (the caller shows it)."""
        self.bus.add_sink(emit)
        emit(RuntimeNotice("info", "starting Spark…"))
        if self._spark is None:
            from streamwatch.spark.session import SessionConfig, create_session
            from streamwatch.spark.tableformat import TableFormatDecision, decide_table_format

            decision = (
                TableFormatDecision(self._table_format, "chosen by the caller")  # type: ignore[arg-type]
                if self._table_format
                else decide_table_format()
            )
            self._spark, info = create_session(
                SessionConfig(workspace=self.workspace.root, ui=self._ui, table_format=decision)
            )
        else:
            fmt = self._table_format or "parquet"
            info = SessionInfo(
                spark_version=self._spark.version,
                master=self._spark.sparkContext.master,
                ui_url=self._spark.sparkContext.uiWebUrl,
                table_format=fmt,  # type: ignore[arg-type]
                table_format_reason="session supplied by the caller",
            )
        emit(info)
        with self._lock:
            if self._stopped:  # quit while Spark was starting
                if self._owns_spark:
                    self._spark.stop()
                return info
            self._listener = PublishingListener(self.bus.publish)
            self._spark.streams.addListener(self._listener)
            for source in self.pipeline.sources:
                feeder = Feeder(
                    source.factory(self.workspace.landing(self.pipeline.name, source.name)),
                    every_s=self._land_every_s,
                    initial_files=self._initial_files,
                    max_files=self._max_files,
                    on_error=lambda e, s=source.name: emit(RuntimeNotice("error", f"landing {s}: {e}")),
                )
                self.feeders.append(feeder.start())
            self.runner = PipelineRunner(self._spark, self.pipeline, self.workspace, info.table_format, self._options)
            emit(RuntimeNotice("info", f"starting {len(self.pipeline.layers)} queries ({self.trigger})"))
            self.runner.start(self.trigger)
        emit(RuntimeNotice("info", "queries running"))
        return info

    def stop(self) -> None:
        """Stop feeders and queries, deliver queued events, and stop Spark if we started it.
        Safe to call more than once and before ``start`` finished."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for f in self.feeders:
                f.stop()
            if self.runner:
                self.runner.stop()
        self.bus.close(timeout=2.0)
        if self._spark is not None:
            if self._listener is not None:
                try:
                    self._spark.streams.removeListener(self._listener)
                except Exception:
                    pass
            if self._owns_spark:
                self._spark.stop()
