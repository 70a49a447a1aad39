"""The live backend's controls — the optional :class:`~streamwatch.backends.base.Backend`
capabilities the dashboard detects: start, stop and restart one query or the whole pipeline,
change a trigger, land files now, read a query's output table. They act on the state a
:class:`~streamwatch.spark.live.LiveBackend` keeps (its runner, triggers, lock, one-shot runs
and data factories). Nothing here imports textual.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from streamwatch.analysis.fmt import grace_ran_out
from streamwatch.analysis.triggers import Trigger, as_trigger
from streamwatch.backends.base import Backend
from streamwatch.events.bus import EventBus
from streamwatch.model.runtime import RunPlan, RuntimeNotice
from streamwatch.pipeline import DataFactory, Pipeline
from streamwatch.spark.runner import PipelineRunner
from streamwatch.spark.schedule import OrderedRun


class LiveControls(Backend):
    """The controls of :class:`~streamwatch.spark.live.LiveBackend` (its base class), on the
    attributes declared here, which ``LiveBackend.__init__`` sets. Every stop lets the running
    micro-batch commit (up to ``stop_grace_s`` s); queries stopped because the grace ran out
    are said in a warning :class:`RuntimeNotice` and added to :attr:`forced_queries`."""

    pipeline: Pipeline
    plan: RunPlan
    runner: PipelineRunner | None
    bus: EventBus
    stop_grace_s: float
    #: query name → the trigger it runs with (changed by :meth:`set_trigger`)
    trigger_of: dict[str, Trigger]
    #: query name → that trigger's spec, as the dashboard shows it
    triggers: dict[str, str]
    #: landing source name → its data factory (one ``land`` at a time)
    factories: dict[str, DataFactory]
    #: names of the queries stopped because the stop grace ran out, in the order said
    forced_queries: list[str]
    _lock: threading.RLock
    _ordered: list[OrderedRun]  # one-shot runs started by set_trigger/start_pipeline
    _layer_of: dict[str, str]  # query name → layer name

    @contextlib.contextmanager
    def _noting_forced(self) -> Iterator[None]:
        """Around a stop: queries the runner stopped meanwhile because the grace ran out are
        said in one warning notice (and added to :attr:`forced_queries`)."""
        runner = self.runner
        before = frozenset(runner.forced_stops) if runner is not None else frozenset()
        try:
            yield
        finally:
            runner = self.runner
            if runner is not None and runner.forced_stops - before:
                names = runner.query_names(runner.forced_stops - before)
                self.forced_queries += names
                self.bus.publish(RuntimeNotice("warning", grace_ran_out(names, self.stop_grace_s)))

    def _runner(self) -> PipelineRunner:
        if self.runner is None:
            raise RuntimeError("the pipeline has not started yet")
        return self.runner

    def _layer(self, query_name: str) -> str:
        try:
            return self._layer_of[query_name]
        except KeyError:
            raise KeyError(f"unknown query {query_name!r}") from None

    def _is_active(self, query_name: str) -> bool:
        q = self._runner().query(self._layer(query_name))
        return q is not None and q.isActive

    def start_query(self, query_name: str) -> None:
        """Start one query with its trigger (no-op when it runs). Raises ``KeyError`` for an
        unknown query, ``RuntimeError`` before the pipeline started, and what Spark raises."""
        with self._lock:
            if not self._is_active(query_name):
                with self._noting_forced():
                    self._runner().start_layer(self._layer(query_name), self.trigger_of[query_name])

    def stop_query(self, query_name: str) -> None:
        """Stop one query (its checkpoint stays; start resumes from it)."""
        with self._lock, self._noting_forced():
            self._runner().stop_layer(self._layer(query_name), self.stop_grace_s)

    def restart_query(self, query_name: str) -> None:
        """Stop, then start one query from its checkpoint."""
        with self._lock, self._noting_forced():
            self._runner().start_layer(self._layer(query_name), self.trigger_of[query_name])

    def start_pipeline(self) -> None:
        """Start every query that is not running: those with a one-shot trigger in DAG order
        (each after its upstream layers finished), the others at once, upstream first."""
        idle = [q.query_name for q in self.plan.queries if not self._is_active(q.query_name)]
        for trigger in dict.fromkeys(self.trigger_of[n] for n in idle):
            names = [n for n in idle if self.trigger_of[n] == trigger]
            if trigger.one_shot:
                self._run_ordered(names, trigger)
            else:
                for name in names:
                    self.start_query(name)

    def stop_pipeline(self) -> None:
        """Stop every query, downstream first (queued one-shot layers will not start)."""
        with self._lock:
            for run in self._ordered:
                run.cancel()
            if self.runner and self.runner.ordered:
                self.runner.ordered.cancel()
        for q in reversed(self.plan.queries):
            self.stop_query(q.query_name)

    def _run_ordered(self, names: list[str], trigger: Trigger) -> OrderedRun:
        runner = self._runner()
        layers = [self._layer(n) for n in names]
        with self._lock:
            for old in [*self._ordered, *([runner.ordered] if runner.ordered else [])]:
                old.cancel()  # its queued layers are superseded by this run
            with self._noting_forced():
                for name in reversed(layers):  # a restart: stop downstream first
                    runner.stop_layer(name, self.stop_grace_s)
            run = OrderedRun(runner, layers, trigger, self.bus.publish, self._lock)
            self._ordered.append(run)
        return run.start()

    def restart_pipeline(self) -> None:
        self.stop_pipeline()
        self.start_pipeline()

    def land(self, count: int = 1, source: str | None = None) -> list[Path]:
        """Land ``count`` more files now into ``source`` (default: every landing source);
        returns the landed paths ([] when the data set is exhausted). ``KeyError`` for an
        unknown source."""
        if not self.factories:
            raise RuntimeError("the pipeline has not started yet")
        names = [source] if source else list(self.factories)
        landed: list[Path] = []
        for name in names:
            if name not in self.factories:
                raise KeyError(f"unknown source {name!r}; known: {', '.join(self.factories)}")
            landed += self.factories[name].land(count)
        return landed

    def set_trigger(self, trigger: Trigger | str, query_name: str | None = None) -> None:
        """Restart ``query_name`` (or every query) with ``trigger`` — the dashboard's
        :class:`~streamwatch.analysis.triggers.Trigger`, or a spec a caller of this Python API
        gives (parsed here, once). Raises ``ValueError`` for a bad spec and ``KeyError`` for an
        unknown query (nothing is restarted then)."""
        parsed = as_trigger(trigger)
        names = [query_name] if query_name else [q.query_name for q in self.plan.queries]
        for name in names:
            self._layer(name)
        for name in names:
            self.trigger_of[name] = parsed
            self.triggers[name] = parsed.spec
        if parsed.one_shot:
            self._run_ordered(names, parsed)
            return
        for name in names:
            with self._lock, self._noting_forced():
                self._runner().start_layer(self._layer(name), parsed)

    def read_results(self, query_name: str, limit: int = 100) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Current rows of a query's output table (memory sink: its in-memory table):
        (column names, up to ``limit`` rows)."""
        runner = self._runner()
        layer = self.pipeline.layer(self._layer(query_name))
        df = runner.spark.table(query_name) if layer.sink == "memory" else runner.tables.read(layer.table)
        rows = df.limit(limit).collect()
        return list(df.columns), [tuple(r) for r in rows]
