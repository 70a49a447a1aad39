"""Run a pipeline's layers as streaming queries (no textual import)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from pyspark import __version__ as _pyspark_version
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from streamwatch.analysis.triggers import Trigger, as_trigger
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.pipeline import OUTPUT_MODES, Layer, LayerContext, Pipeline, Workspace, plan_run
from streamwatch.spark.schedule import STOP_GRACE_S, OrderedRun, graceful_stop
from streamwatch.spark.tables import TableFormat, Tables, as_sink, check_continuous

__all__ = ["PipelineRunner", "QueryRejected", "plan_run", "spark_condition"]


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


@contextlib.contextmanager
def _session_conf(spark: SparkSession, conf: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """Set a layer's Spark SQL settings while its query starts (the query copies the session's
    settings at start), then restore the previous values (unset ones are unset again)."""
    saved = [(k, spark.conf.get(k, None)) for k, _ in conf]
    for k, v in conf:
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, old in saved:
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)


#: pyspark 4.0 renamed ``PySparkException.getErrorClass`` to ``getCondition`` (the old name
#: warns, FutureWarning); pyspark 3.5 has only ``getErrorClass``
_HAS_GET_CONDITION = int(_pyspark_version.split(".", 1)[0]) >= 4


def spark_condition(e: PySparkException) -> str | None:
    """Spark's error condition of ``e`` (``SparkThrowable.getCondition``, named error class
    before Spark 4.0, e.g. ``STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION``); None when the
    JVM error carries none."""
    return e.getCondition() if _HAS_GET_CONDITION else e.getErrorClass()


def _one_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0].strip() if text else type(e).__name__


class PipelineRunner:
    """Starts and stops the layers of ``pipeline`` in ``spark`` with tables of ``table_format``
    under ``workspace``. ``options`` reach each layer's ``build`` (e.g.
    ``max_files_per_trigger``: files per micro-batch for landing and table reads).
    ``output_modes`` overrides a layer's output mode for this run (``{"gold": "update"}``);
    raises ``ValueError`` for an unknown layer or mode.

    Starting a layer raises :class:`QueryRejected` (one clear line) when Spark refuses the
    query shape or the trigger, and ``ValueError`` for an unknown trigger spec. Triggers are
    :class:`~streamwatch.analysis.triggers.Trigger` objects; a spec string given instead (a
    caller of this Python API) is parsed once, where it enters."""

    def __init__(
        self,
        spark: SparkSession,
        pipeline: Pipeline,
        workspace: Workspace,
        table_format: TableFormat,
        options: dict[str, Any] | None = None,
        *,
        output_modes: Mapping[str, str] | None = None,
    ) -> None:
        self.spark = spark
        self.pipeline = pipeline
        self.workspace = workspace
        self.tables = Tables(spark, table_format, workspace.root / f"tables/{pipeline.name}")
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
        #: run ids of the queries streamwatch stopped (their terminated event is a stop)
        self.stop_requested: set[str] = set()
        #: run ids stopped while a micro-batch still ran (the grace bound ran out)
        self.forced_stops: set[str] = set()
        #: the one-shot run in progress (availableNow/once in DAG order), if any
        self.ordered: OrderedRun | None = None
        #: held while a one-shot run starts a query and while :meth:`stop` runs
        self.lock = threading.RLock()

    def setup(self) -> None:
        if not self._set_up and self.pipeline.setup:
            self.pipeline.setup(self.ctx)
        self._set_up = True

    def _layer(self, name: str) -> Layer:
        return self.pipeline.layer(name)

    def output_mode(self, layer: Layer) -> str:
        """The output mode ``layer`` runs with in this run."""
        return self.output_modes.get(layer.name, layer.output_mode)

    def start_layer(self, name: str, trigger: Trigger | str = "processingTime=2 seconds") -> StreamingQuery:
        """(Re)start one layer's query; stops its running query first (gracefully). Upstream
        Parquet tables must have been started once in this process (their schema is needed).
        Raises ``KeyError`` for an unknown layer and ``ValueError`` for a bad trigger spec
        (before anything stops)."""
        parsed = as_trigger(trigger)
        self.setup()
        self.stop_layer(name)
        return self._start_layer(self._layer(name), parsed)

    def stop_layer(self, name: str, grace_s: float = STOP_GRACE_S) -> list[str]:
        """Stop one layer's query if it runs, letting its running micro-batch commit first
        (up to ``grace_s`` s, see :func:`streamwatch.spark.schedule.graceful_stop`). Returns
        the query name when the grace ran out (its batch stays planned), else ``[]``.
        ``KeyError`` for an unknown layer."""
        self._layer(name)
        q = self._by_layer.pop(name, None)
        if q is None:
            return []
        forced = graceful_stop([q], self.stop_requested, grace_s)
        self.forced_stops |= forced
        return self.query_names(forced)

    def query_names(self, run_ids: set[str] | frozenset[str]) -> list[str]:
        """The names of the queries of this runner whose run ids are in ``run_ids`` (the
        query id where a query has no name), in start order."""
        names = []
        for q in self.queries:
            try:
                if str(q.runId) in run_ids:
                    names.append(q.name or str(q.id))
            except Exception:  # noqa: BLE001 - a query object whose JVM side is gone
                continue
        return names

    def query(self, name: str) -> StreamingQuery | None:
        """The current query of layer ``name`` (None when not started)."""
        return self._by_layer.get(name)

    def check_trigger(self, trigger: Trigger | str) -> None:
        """Raise ``ValueError`` for an unknown trigger spec and :class:`QueryRejected` when a
        layer cannot run under it (continuous on file sources or table sinks)."""
        if not as_trigger(trigger).continuous:
            return
        for layer in self.pipeline.layers:
            source = self.tables.format if layer.source == "table" else layer.source
            mode = self.output_mode(layer)
            sink: str = "memory" if layer.sink == "memory" else self.tables.format
            if (sink == "parquet" and mode == "complete") or (sink == "delta" and layer.merge_keys):
                sink = "foreachBatch"
            try:
                check_continuous(self.pipeline.query_name(layer), source, sink)
            except ValueError as e:
                raise QueryRejected(str(e), "CONTINUOUS_UNSUPPORTED") from None

    def layer_writer(self, name: str) -> DataStreamWriter:
        """The ``DataStreamWriter`` :meth:`start_layer` would start for layer ``name``,
        configured (query name, this run's output mode, checkpoint, table) but NOT started,
        for ``streamwatch compat``. The layer's upstream layers are built first (their
        DataFrames only, nothing starts) so a Parquet upstream's schema is known. The
        pipeline's ``setup`` does not run: static tables a layer reads must exist (they do in
        the workspace its checkpoint belongs to). Nothing is written. Raises ``KeyError`` for
        an unknown layer and :class:`QueryRejected` when Spark refuses to build a layer."""
        target = self._layer(name)
        needed = {target.name}
        pending = list(target.upstream)
        while pending:
            up = pending.pop()
            if up not in needed:
                needed.add(up)
                pending.extend(self._layer(up).upstream)
        writer = None
        for layer in self.pipeline.topological_layers():
            if layer.name not in needed:
                continue
            qname = self.pipeline.query_name(layer)
            try:
                writer = self.tables.stream_writer(
                    layer.build(self.ctx), layer.table,
                    checkpoint=self.workspace.checkpoint(self.pipeline.name, layer.name), query_name=qname,
                    output_mode=self.output_mode(layer), sink=as_sink(layer.sink),
                    merge_keys=layer.merge_keys,
                )
            except AnalysisException as e:
                raise QueryRejected(f"{qname}: Spark cannot build the query: {_one_line(e)}", spark_condition(e)) from None
        assert writer is not None
        return writer

    def _start_layer(self, layer: Layer, trigger: Trigger) -> StreamingQuery:
        self.check_trigger(trigger)
        name = self.pipeline.query_name(layer)
        mode = self.output_mode(layer)
        try:
            with _session_conf(self.spark, layer.conf):
                df = layer.build(self.ctx)
                q = self.tables.write_stream(
                    df,
                    layer.table,
                    checkpoint=self.workspace.checkpoint(self.pipeline.name, layer.name),
                    query_name=name,
                    trigger=trigger,
                    output_mode=mode,
                    sink=as_sink(layer.sink),
                    merge_keys=layer.merge_keys,
                )
        except AnalysisException as e:
            raise QueryRejected(f"{name} ({mode} mode): Spark rejected the query: {_one_line(e)}",
                                spark_condition(e)) from None
        self.queries.append(q)
        self._by_layer[layer.name] = q
        return q

    def start(self, trigger: Trigger | str = "processingTime=2 seconds", notify: Callable[[object], None] | None = None,
              lock: Any = None) -> list[StreamingQuery]:
        """Start the pipeline; returns the queries started so far.

        Continuous triggers (``default``, ``processingTime``, ``continuous``) start every layer
        at once, upstream first (each picks up upstream output on its next trigger); on
        :class:`QueryRejected` the layers already started are stopped before it propagates.
        One-shot triggers (``availableNow``, ``once``) start an :class:`OrderedRun` in the
        background (``self.ordered``): each layer runs to completion after all of its
        upstream layers; ``notify`` gets its ``QueryQueued``/``QueryNotRun`` objects and
        ``lock`` is held while each query starts."""
        parsed = as_trigger(trigger)
        self.check_trigger(parsed)
        self.setup()
        if parsed.one_shot:
            self.ordered = OrderedRun(self, self.pipeline.layer_names(), parsed, notify,
                                      lock if lock is not None else self.lock).start()
            return list(self.queries)
        try:
            for layer in self.pipeline.topological_layers():
                self._start_layer(layer, parsed)
            return list(self.queries)
        except Exception:
            self.stop()
            raise

    def run_available_now(self, timeout_s: float | None = None, trigger: Trigger | str = "availableNow",
                          notify: Callable[[object], None] | None = None) -> None:
        """Run the pipeline with a one-shot trigger (``availableNow`` or ``once``) and wait:
        each layer runs to completion after all of its upstream layers, so every layer sees
        all of its input. Raises ``TimeoutError`` (after stopping the queries) when the run
        does not finish within ``timeout_s`` s, and the first failed layer's exception
        (pyspark's ``StreamingQueryException`` or :class:`QueryRejected`)."""
        parsed = as_trigger(trigger)
        if not parsed.one_shot:
            raise ValueError(f"run_available_now needs availableNow or once, not {parsed.spec!r}")
        self.start(parsed, notify)
        run = self.ordered
        assert run is not None
        if not run.wait(timeout_s):
            self.stop()
            raise TimeoutError(f"{self.pipeline.name}: the {parsed.spec} run did not finish within {timeout_s} s "
                               f"({', '.join(f'{k} {v}' for k, v in run.state.items())})")
        for name in run.layers:
            if name in run.errors:
                raise run.errors[name]

    def stop(self, grace_s: float = STOP_GRACE_S) -> list[str]:
        """Stop every query, each once its running micro-batch has committed (up to
        ``grace_s`` s in all, the queries at the same time); a one-shot run starts no further
        layer. Returns the names of the queries stopped because the grace ran out (their batch
        stays planned; also in :attr:`forced_stops` by run id). Never raises."""
        with self.lock:
            if self.ordered is not None:
                self.ordered.cancel()
            forced = graceful_stop(reversed(self.queries), self.stop_requested, grace_s)
            self.forced_stops |= forced
            return self.query_names(forced)
