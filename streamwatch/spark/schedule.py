"""Medallion order for one-shot triggers, and stops that let the running micro-batch commit.

Under ``availableNow``/``once`` a streaming query plans its input once, when it starts: a
silver query started together with bronze finds bronze's table (nearly) empty and ends
without a batch. :class:`OrderedRun` therefore starts each layer only after every upstream
layer of the run has finished (the DAG of :attr:`streamwatch.pipeline.Layer.upstream`), one
thread per layer waiting on a condition — independent branches (flights' bronze and weather)
run at the same time.

:func:`graceful_stop` is the one way streamwatch stops a query. ``StreamingQuery.stop()``
cancels the query's Spark jobs and interrupts its thread; when that lands while a task writes
a part file, the task fails with ``TASK_WRITE_FAILED`` (the interrupt closes the output
channel: ``ClosedByInterruptException``) and, because the job then fails as a *stage failure*
rather than a cancelled job group, Spark's ``StreamExecution.isInterruptionException`` does
not recognise it and the query terminates with that exception. So a stop first waits (bounded)
until the micro-batch running when the stop was asked for has committed (its progress is
reported after ``commits/N``; ``status.isTriggerActive`` false: between batches), then calls
``stop()`` at once — under a ``processingTime`` trigger the query is then waiting for its next
trigger, and an interrupt there is a clean stop; every run we stop is remembered in ``stop_requested`` so an
exception Spark still reports for it (the bound ran out, or the next trigger fired in the
instant before ``stop()``) is recorded as a stop, not a failure.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable, Iterable

from streamwatch.model.runtime import QueryNotRun, QueryQueued, RuntimeNotice

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.streaming import StreamingQuery

    from streamwatch.spark.runner import PipelineRunner

#: default bound (s) a stop waits for the running micro-batch to commit
STOP_GRACE_S = 10.0

#: final states of a layer in an :class:`OrderedRun`
FINAL = frozenset({"done", "failed", "stopped", "not-run"})


def _position(q: "StreamingQuery") -> tuple[bool, int]:
    """(a micro-batch is running, id of the last finished batch or -1)."""
    try:
        active = bool(q.status.get("isTriggerActive"))
        last = q.lastProgress
        return active, int(last["batchId"]) if last else -1
    except Exception:  # noqa: BLE001 - a query that just terminated
        return False, -1


def _stop(q: "StreamingQuery") -> None:
    try:
        q.stop()
    except Exception:  # noqa: BLE001 - never raises: stopping is best effort
        pass


def graceful_stop(queries: Iterable["StreamingQuery"], stop_requested: set[str],
                  grace_s: float = STOP_GRACE_S) -> set[str]:
    """Stop ``queries`` (in the order given), each as soon as the micro-batch it was running
    when the stop was asked for has committed (Spark reports a query's progress after its
    ``commits/N``), or at once when it was between batches. Every query's run id is added to
    ``stop_requested`` first. A query whose batch is still running after ``grace_s`` seconds
    is stopped anyway (that batch stays in flight and is re-run on restart). Returns the run
    ids stopped that way (bound ran out). Never raises."""
    pending: list[tuple["StreamingQuery", int]] = []
    for q in queries:
        try:
            if q.isActive:
                stop_requested.add(str(q.runId))
                active, last = _position(q)
                if not active:
                    _stop(q)
                else:
                    pending.append((q, last))
        except Exception:  # noqa: BLE001 - a query object whose JVM side is gone
            continue
    forced: set[str] = set()
    deadline = time.monotonic() + max(0.0, grace_s)
    while pending:
        for item in list(pending):
            q, running_after = item
            active, last = _position(q)
            done = not q.isActive or not active or last > running_after
            if done or time.monotonic() >= deadline:
                if not done:
                    forced.add(str(q.runId))
                _stop(q)
                pending.remove(item)
        if pending:
            # wait on the query itself: returns at once when it terminates meanwhile
            try:
                pending[0][0].awaitTermination(0.02)
            except Exception:  # noqa: BLE001 - it failed: stop() is then a no-op
                pass
    return forced


def is_one_shot(trigger: str) -> bool:
    """True for ``availableNow`` and ``once``: triggers that process what is there and end."""
    from streamwatch.analysis.triggers import trigger_kwargs

    kw = trigger_kwargs(trigger)
    return "availableNow" in kw or "once" in kw


class OrderedRun:
    """Run ``layers`` of ``runner``'s pipeline with a one-shot ``trigger`` in DAG order: a
    layer starts once every upstream layer *in this run* is ``done``; a layer whose upstream
    failed or was stopped, or that was still queued when :meth:`cancel` came, is ``not-run``.

    ``notify`` receives :class:`QueryQueued` (at :meth:`start`, for each layer that waits),
    :class:`QueryNotRun` and error :class:`RuntimeNotice` objects. ``lock`` is held while a
    query starts (the caller's lock, so a concurrent stop never misses a query being started).
    ``state`` maps layer → ``queued``/``running``/``done``/``failed``/``stopped``/``not-run``;
    ``errors`` maps layer → the exception that failed it (``start_errors``: those that kept
    the query from starting)."""

    def __init__(self, runner: "PipelineRunner", layers: Iterable[str], trigger: str,
                 notify: Callable[[object], None] | None = None, lock: threading.RLock | threading.Lock | None = None) -> None:
        self.runner = runner
        self.trigger = trigger
        order = [layer.name for layer in runner.pipeline.topological_layers()]
        wanted = set(layers)
        self.layers = [name for name in order if name in wanted]
        self._notify = notify or (lambda obj: None)
        self._lock = lock if lock is not None else threading.RLock()
        self._cond = threading.Condition()
        self._cancelled = False
        self.state: dict[str, str] = {name: "queued" for name in self.layers}
        self.errors: dict[str, BaseException] = {}
        #: layer → the exception that kept its query from starting (Spark refused it …)
        self.start_errors: dict[str, BaseException] = {}
        self._threads: list[threading.Thread] = []

    def _upstream(self, name: str) -> list[str]:
        return [u for u in self.runner.pipeline.upstream_of(name) if u in self.state]

    def start(self) -> "OrderedRun":
        """Announce the queued layers and start one thread per layer; returns ``self``."""
        q = self.runner.pipeline.query_name
        for name in self.layers:
            ups = self._upstream(name)
            if ups:
                self._notify(QueryQueued(q(self.runner.pipeline.layer(name)),
                                         tuple(q(self.runner.pipeline.layer(u)) for u in ups), self.trigger))
        for name in self.layers:
            t = threading.Thread(target=self._run_layer, args=(name,), name=f"streamwatch-ordered-{name}", daemon=True)
            self._threads.append(t)
            t.start()
        return self

    def cancel(self) -> None:
        """Start no further query: queued layers become ``not-run`` (running ones are the
        caller's to stop)."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    @property
    def finished(self) -> bool:
        """True when every layer of the run is in a final state."""
        with self._cond:
            return all(s in FINAL for s in self.state.values())

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` s (None: no limit) until every layer is final; True then."""
        with self._cond:
            return self._cond.wait_for(lambda: all(s in FINAL for s in self.state.values()), timeout)

    def _set(self, name: str, state: str) -> None:
        with self._cond:
            self.state[name] = state
            self._cond.notify_all()

    def _run_layer(self, name: str) -> None:
        pipeline = self.runner.pipeline
        qname = pipeline.query_name(pipeline.layer(name))
        ups = self._upstream(name)
        with self._cond:
            self._cond.wait_for(lambda: self._cancelled or all(self.state[u] in FINAL for u in ups))
            bad = [u for u in ups if self.state[u] != "done"]
        if self._cancelled or bad:
            why = "the run was stopped" if self._cancelled else (
                f"upstream {', '.join(pipeline.query_name(pipeline.layer(u)) for u in bad)} "
                f"{'/'.join(sorted({self.state[u] for u in bad}))}")
            self._notify(QueryNotRun(qname, why))
            self._set(name, "not-run")
            return
        try:
            with self._lock:
                if self._cancelled:
                    self._notify(QueryNotRun(qname, "the run was stopped"))
                    self._set(name, "not-run")
                    return
                self._set(name, "running")
                q = self.runner.start_layer(name, self.trigger)
        except Exception as e:  # noqa: BLE001 - reported, downstream layers become not-run
            self.errors[name] = e
            self.start_errors[name] = e
            self._notify(RuntimeNotice("error", f"{qname}: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"))
            self._set(name, "failed")
            return
        try:
            q.awaitTermination()
            exc = q.exception()
        except Exception as e:  # noqa: BLE001 - StreamingQueryException, or the session stopped
            exc = e
        stopped = str(q.runId) in self.runner.stop_requested
        if exc is not None and not stopped:
            self.errors[name] = exc  # type: ignore[assignment]
        self._set(name, "stopped" if stopped else "failed" if exc is not None else "done")
