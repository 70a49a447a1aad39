"""The dashboard's live backend: Spark session, listener, pipeline queries and feeders.

Data flows one way: Spark → :class:`PublishingListener` → :class:`EventBus` → ``emit``
(the dashboard's ``post_message``, a recorder …). Nothing here imports textual.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from pyspark.sql import SparkSession

from streamwatch.events.bus import EventBus
from streamwatch.feeder import Feeder
from streamwatch.model.runtime import RuntimeNotice, SessionInfo
from streamwatch.pipeline import Pipeline, Workspace
from streamwatch.spark.listener import PublishingListener
from streamwatch.spark.runner import PipelineRunner, plan_run


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
