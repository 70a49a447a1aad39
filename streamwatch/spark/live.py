"""The dashboard's live backend: Spark session, listener, pipeline queries and feeders.

Data flows one way: Spark → :class:`PublishingListener` → :class:`EventBus` → ``emit``
(the dashboard's ``post_message``, a recorder …). Nothing here imports textual.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from streamwatch.analysis.triggers import Trigger, parse_trigger
from streamwatch.backends.base import Control
from streamwatch.events.bus import EventBus
from streamwatch.events.runs import RunTracker
from streamwatch.feeder import Feeder, LandingBacklog
from streamwatch.model.events import QueryTerminated
from streamwatch.model.runtime import RuntimeNotice, SessionInfo
from streamwatch.pipeline import DataFactory, Pipeline, Workspace
from streamwatch.spark.connect import add_listener, connect_session_info, is_connect_session
from streamwatch.spark.kafka_lag import LagPoller
from streamwatch.spark.listener import PublishingListener
from streamwatch.spark.live_controls import LiveControls
from streamwatch.spark.runner import PipelineRunner, plan_run
from streamwatch.spark.schedule import STOP_GRACE_S, OrderedRun

#: unread files of a landing source at which the feeder's schedule holds (about one bronze
#: micro-batch of the bundled pipelines: maxFilesPerTrigger 5-12)
PACE_BACKLOG = 10


class LiveBackend(LiveControls):
    """Everything the dashboard runs in-process, with no textual import: the SparkSession
    (created here unless ``spark`` is given), the listener, the pipeline's queries, and a
    feeder landing data. Model objects go to ``emit`` through a bounded :class:`EventBus`.

    ``start(emit)`` blocks for the Spark start-up (~6 s): call it from a worker thread.
    ``output_modes`` overrides layers' output modes (``{"gold": "update"}``, see
    :meth:`streamwatch.pipeline.Pipeline.output_modes`); Spark's refusal of a query shape
    makes ``start`` raise :class:`streamwatch.spark.runner.QueryRejected`. ``trigger`` is the
    spec the user gave (``processingTime=2 seconds``), parsed here once: a bad one raises
    :class:`~streamwatch.analysis.triggers.TriggerError`.

    Triggers: ``availableNow``/``once`` (at start, :meth:`set_trigger`, :meth:`start_pipeline`)
    run each layer to completion after all of its upstream layers (medallion DAG of
    ``plan``); waiting queries are announced with :class:`~streamwatch.model.runtime.QueryQueued`
    (and :class:`~streamwatch.model.runtime.QueryNotRun` when they will not start). Other
    triggers start every layer at once. Every stop lets the running micro-batch commit (up to
    ``stop_grace_s`` s) and plans no further batch; a run we stopped arrives as
    ``QueryTerminated(stop_requested=True)``. Queries stopped because the grace ran out (their
    batch stays planned) are named in a warning :class:`RuntimeNotice` (one per stop action)
    and in :attr:`forced_queries`. The controls (start/stop/restart, triggers, landing, results)
    are :class:`~streamwatch.spark.live_controls.LiveControls`'.
    """

    CONTROLS = frozenset(Control)

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
        master: str | None = None,
        output_modes: dict[str, str] | None = None,
        stop_grace_s: float = STOP_GRACE_S,
    ) -> None:
        self.pipeline = pipeline
        self.stop_grace_s = stop_grace_s
        self.workspace = workspace
        #: the trigger every query starts with (the spec given, parsed here once)
        self.trigger = parse_trigger(trigger)
        self.plan = plan_run(pipeline, workspace, trigger)
        self._spark = spark
        self._owns_spark = spark is None
        self._table_format = table_format
        self._land_every_s = land_every_s
        self._initial_files = initial_files
        self._max_files = max_files
        self._options = options
        self._ui = ui
        self._master = master  # Spark master URL; None: STREAMWATCH_MASTER or local[*]
        self.bus = EventBus()
        #: query runs started/terminated, so :meth:`stop` can wait for the terminated events
        self.runs = RunTracker()
        self.bus.add_sink(self.runs)
        self.runner: PipelineRunner | None = None
        self.feeders: list[Feeder] = []
        self.factories: dict[str, DataFactory] = {}  # each a _LockedFactory
        self._listener: PublishingListener | None = None
        self._lag: LagPoller | None = None  # consumer lag of the queries reading Kafka
        self._lock = threading.RLock()
        self._ordered: list[OrderedRun] = []  # one-shot runs started by set_trigger/start_pipeline
        self._stopped = False
        #: names of the queries stopped because the stop grace ran out, in the order said
        self.forced_queries: list[str] = []  # see Backend.forced_queries
        self._layer_of = {q.query_name: q.layer for q in self.plan.queries}
        #: query name → the trigger it runs with, and its spec as shown (changed by :meth:`set_trigger`)
        self.trigger_of: dict[str, Trigger] = {q.query_name: self.trigger for q in self.plan.queries}
        self.triggers: dict[str, str] = {q.query_name: trigger for q in self.plan.queries}
        self._output_modes = dict(output_modes or {})  # layer → mode overrides for this run
        #: query name → output mode (append/update/complete)
        self.output_modes: dict[str, str] = {
            pipeline.query_name(layer): self._output_modes.get(layer.name, layer.output_mode)
            for layer in pipeline.layers
        }

    def start(self, emit: Callable[[object], None]) -> SessionInfo:
        """Start Spark, the listener, the queries and the feeders; returns the session info
        (also emitted). Raises whatever Spark raises (the caller shows it)."""
        self.bus.add_sink(emit)
        emit(RuntimeNotice("info", "starting Spark…"))
        spark, info = self._open_session()
        emit(info)
        with self._lock:
            if self._stopped:  # quit while Spark was starting
                if self._owns_spark:
                    spark.stop()
                return info
            self._listener = PublishingListener(self._publish)
            add_listener(spark, self._listener)
            for source in self.pipeline.sources:
                factory = _LockedFactory(source.factory(self.workspace.landing(self.pipeline.name, source.name)))
                self.factories[source.name] = factory
                feeder = Feeder(
                    factory,
                    every_s=self._land_every_s,
                    initial_files=self._initial_files,
                    max_files=self._max_files,
                    on_error=partial(_landing_error, emit, source.name),
                    hold=self._pacing(source.name),
                )
                self.feeders.append(feeder.start())
            self.runner = PipelineRunner(spark, self.pipeline, self.workspace, info.table_format, self._options,
                                         output_modes=self._output_modes)
            self.output_modes = {
                self.pipeline.query_name(layer): self.runner.output_mode(layer) for layer in self.pipeline.layers
            }
            emit(RuntimeNotice("info", f"starting {len(self.pipeline.layers)} queries ({self.plan.trigger})"))
            note = self.trigger.note
            if note:
                emit(RuntimeNotice("warning", note))
            self.runner.start(self.trigger, notify=self.bus.publish, lock=self._lock)
            bootstrap = (self._options or {}).get("kafka_bootstrap")
            kafka = {self.pipeline.query_name(la): self.workspace.checkpoint(self.pipeline.name, la.name).fsspec_uri
                     for la in self.pipeline.layers if la.source == "kafka"}
            if bootstrap and kafka:
                self._lag = LagPoller(kafka, bootstrap, self.bus.publish).start()
        emit(RuntimeNotice("info", "queries running"))
        return info

    def _open_session(self) -> tuple[SparkSession, SessionInfo]:
        """Create the SparkSession (unless the caller gave one) and describe it: version,
        master, UI address, table format, executors."""
        spark = self._spark
        if spark is None:
            from streamwatch.spark.session import SessionConfig, create_session, default_master
            from streamwatch.spark.tableformat import decide_table_format

            decision = decide_table_format(forced=self._table_format)
            self._spark, info = create_session(
                SessionConfig(workspace=self.workspace.local, master=self._master or default_master(), ui=self._ui,
                              table_format=decision)
            )
            return self._spark, info
        if is_connect_session(spark):  # Spark Connect: no SparkContext on this side
            return spark, connect_session_info(spark, self._table_format)
        from streamwatch.spark.session import context_master, executor_count, local_cores

        return spark, SessionInfo(
            spark_version=spark.version,
            master=context_master(spark.sparkContext),
            ui_url=spark.sparkContext.uiWebUrl,
            table_format="delta" if self._table_format == "delta" else "parquet",
            table_format_reason="session supplied by the caller",
            executors=executor_count(spark),
            local_cores=local_cores(spark),
        )

    def _pacing(self, source: str) -> Callable[[], bool] | None:
        """The feeder's hold for landing ``source``: while :data:`PACE_BACKLOG` or more of its
        files are unread by the queries reading it (their file-source logs say), the schedule
        lands nothing — the demo keeps pace with what this machine processes instead of
        growing a backlog (``:land N`` and ``streamwatch land`` still land at once). None
        (fixed pace) when a reading query's checkpoint is not on this machine."""
        readers = [self.workspace.checkpoint(self.pipeline.name, layer.name)
                   for layer in self.pipeline.layers if source in layer.landing]
        if not readers or not all(cp.is_local for cp in readers):
            return None
        backlog = LandingBacklog(self.workspace.landing(self.pipeline.name, source), [Path(cp) for cp in readers])
        return lambda: backlog.unread() >= PACE_BACKLOG

    def _publish(self, event: object) -> None:
        """The listener's hand-off: a terminated run that we stopped is marked
        ``stop_requested`` (its exception, if Spark reports one, is detail of our stop)."""
        runner = self.runner
        if (isinstance(event, QueryTerminated) and runner is not None
                and event.run_id in runner.stop_requested and not event.stop_requested):
            event = dataclasses.replace(event, stop_requested=True)
        self.bus.publish(event)

    def wait_finished(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s until :meth:`all_finished` (a one-shot run's whole DAG has
        run and every terminated event reached the sinks); True when it did."""
        import time

        deadline = time.monotonic() + timeout
        for run in self._one_shot_runs():
            if not run.wait(max(0.0, deadline - time.monotonic())):
                return False
        return self.runs.wait_all_terminated(self.bus, max(0.0, deadline - time.monotonic())) and self.all_finished()

    def _one_shot_runs(self) -> list[OrderedRun]:
        return [*self._ordered, *([self.runner.ordered] if self.runner and self.runner.ordered else [])]

    def all_finished(self) -> bool:
        """True once every run has terminated with no one-shot run still waiting to start a
        downstream layer (``availableNow``: the whole DAG done), or — for other triggers — once
        queries have started and every run has terminated."""
        runs = self._one_shot_runs()
        if runs:
            return all(r.finished for r in runs) and self.runs.all_terminated()
        return self.runs.started > 0 and self.runs.all_terminated()

    @property
    def start_errors(self) -> dict[str, BaseException]:
        """Layer → why a one-shot run could not start its query (Spark refused it …)."""
        return {k: v for r in self._one_shot_runs() for k, v in r.start_errors.items()}

    def stop(self, timeout: float = 10.0) -> None:
        """Stop feeders and queries, wait (up to ``timeout`` s) until Spark has delivered
        every run's ``QueryTerminatedEvent`` to ``emit``, then stop Spark if we started it.
        Safe to call more than once and before ``start`` finished."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            for f in self.feeders:
                f.stop()
            if self._lag is not None:
                self._lag.stop()
            for run in self._ordered:
                run.cancel()
            if self.runner:
                with self._noting_forced():
                    self.runner.stop(self.stop_grace_s)
        self.runs.wait_all_terminated(self.bus, timeout)
        self.bus.close(timeout=2.0)
        if self._spark is not None:
            if self._listener is not None:
                with contextlib.suppress(Exception):  # the session is gone already
                    self._spark.streams.removeListener(self._listener)
            if self._owns_spark:
                self._spark.stop()


def _landing_error(emit: Callable[[object], None], source: str, e: Exception) -> None:
    """The feeder's ``on_error`` for landing ``source``: an error notice to ``emit``."""
    emit(RuntimeNotice("error", f"landing {source}: {e}"))


class _LockedFactory:
    """A data factory shared by the feeder thread and ``land`` controls: one ``land`` at a
    time, so file numbering never collides."""

    def __init__(self, factory: DataFactory) -> None:
        self._factory = factory
        self._lock = threading.Lock()

    def land(self, n_files: int = 1) -> list[Path]:
        with self._lock:
            return self._factory.land(n_files)

    @property
    def exhausted(self) -> bool:
        return self._factory.exhausted
