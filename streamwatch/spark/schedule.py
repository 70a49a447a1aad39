"""Medallion order for one-shot triggers, and stops that let the running micro-batch commit.

Under ``availableNow``/``once`` a streaming query plans its input once, when it starts: a
silver query started together with bronze finds bronze's table (nearly) empty and ends
without a batch. :class:`OrderedRun` therefore starts each layer only after every upstream
layer of the run has finished (the DAG of :attr:`streamwatch.pipeline.Layer.upstream`), one
thread per layer waiting on a condition — independent branches (flights' bronze and weather)
run at the same time.

:func:`graceful_stop` is the one way streamwatch stops a query. ``StreamingQuery.stop()``
marks the query terminated, cancels its Spark jobs and interrupts its thread wherever it is:
in the middle of a micro-batch (the batch stays planned, ``offsets/N`` without ``commits/N``;
a task writing a part file fails with ``TASK_WRITE_FAILED``, which Spark reports as the
query's exception), or while it writes ``offsets/N`` (a ``.N.<uuid>.tmp`` is left:
``Interrupted while joining on … setPermission`` in spark.log). Waiting for the running batch's
progress and calling ``stop()`` then is not enough either: under the default trigger (and a
``processingTime`` trigger whose batches take longer than the interval) ``MicroBatchExecution``
plans the next batch (``offsets/N+1``) a few milliseconds after ``commits/N``, before a poll of
``lastProgress`` can see the commit, so ``stop()`` lands in that next batch — 16 of 18 busy
queries kept a planned batch in the reproduction of issue 32.

So a stop uses Spark's own loop (``MicroBatchExecution.executeOneBatch``): the query thread
checks ``isActive`` before it plans each batch (and ``runBatch`` interrupts itself when the
query stopped between planning and running), plans (``constructNextBatch``) and commits
(``markMicroBatchEnd``) holding the query's ``awaitProgressLock``, and ends by itself, with no
exception, when it finds the query terminated after a batch. :class:`_Drain` holds that lock,
so the thread can neither plan nor commit, and waits until the thread is parked on it: parked
at its commit (or just after it), the query is marked terminated and the lock released — the
batch commits and the thread ends without planning another; parked before planning, nothing is
in flight, so the lock is released and the batch it plans is the one that commits; sleeping
until the next ``processingTime`` trigger, it is marked terminated first and its sleep
interrupted (it plans nothing when it wakes). When the grace runs out, the lock is released
and ``stop()`` interrupts what runs; the run id is returned as *forced*. Where the JVM
objects are out of reach (Spark Connect, continuous or async-progress queries, pyspark not in
pinned-thread mode) the stop falls back to waiting for the running batch's progress before
``stop()`` (the race above remains there). Every run we stop is remembered in
``stop_requested`` so an exception Spark still reports for it is recorded as a stop, not a
failure.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from streamwatch.analysis.triggers import Trigger
from streamwatch.model.runtime import QueryNotRun, QueryQueued, RuntimeNotice

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.streaming.query import StreamingQuery

    from streamwatch.spark.runner import PipelineRunner

#: default bound (s) a stop waits for the running micro-batch to commit (a busy 2-core machine
#: runs the bundled pipelines' batches in 10-20 s)
STOP_GRACE_S = 30.0

#: final states of a layer in an :class:`OrderedRun`
FINAL = frozenset({"done", "failed", "stopped", "not-run"})


def _position(q: StreamingQuery) -> tuple[bool, int]:
    """(a micro-batch is running, id of the last finished batch or -1)."""
    try:
        active = bool(q.status.get("isTriggerActive"))
        last = q.lastProgress
        return active, int(last["batchId"]) if last else -1
    except Exception:  # noqa: BLE001 - a query that just terminated
        return False, -1


def _stop(q: StreamingQuery) -> None:
    with contextlib.suppress(Exception):  # never raises: stopping is best effort
        q.stop()


#: longest single wait (ms) of a drain, so the deadline is checked often
_POLL_MS = 50


def _pinned_threads() -> bool:
    """True when every Python thread talks to its own JVM thread (pyspark's pinned-thread
    mode, py4j ``ClientServer``): a lock taken through py4j is then released by the JVM
    thread that took it."""
    try:
        from py4j.clientserver import ClientServer
        from pyspark import SparkContext

        return isinstance(SparkContext._gateway, ClientServer)
    except Exception:  # noqa: BLE001 - no gateway: Spark Connect or no Spark here
        return False


class _Drain:
    """Stop one micro-batch query of this JVM at a batch boundary (see the module docstring).
    Raises from the constructor when the query's JVM objects are out of reach."""

    def __init__(self, q: StreamingQuery) -> None:
        if not _pinned_threads():
            raise RuntimeError("pyspark is not in pinned-thread mode")
        se = q._jsq.streamingQuery()  # classic pyspark only (Spark Connect's query has no _jsq)
        if se.getClass().getSimpleName() != "MicroBatchExecution":
            raise RuntimeError(f"not a plain micro-batch query: {se.getClass().getName()}")
        from pyspark import SparkContext

        jvm = SparkContext._jvm
        assert jvm is not None
        self.q = q
        self.gate = se.awaitProgressLock()
        self.thread = se.queryExecutionThread()
        self.state = se.state()
        package = self.state.get().getClass().getName().rsplit(".", 1)[0]
        self.terminated = jvm.java.lang.Class.forName(f"{package}.TERMINATED$").getField("MODULE$").get(None)
        self.jvm = jvm
        self.ms = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
        self.held = False
        self.before: object | None = None  # the state replaced by TERMINATED (None: not marked)

    def _frames(self) -> list[str]:
        """The query thread's stack, innermost frame first (``Class.method(File.java:N)``)."""
        carrier = self.jvm.java.lang.Throwable()  # three calls, not one per frame
        carrier.setStackTrace(self.thread.getStackTrace())
        text = str(self.jvm.org.apache.commons.lang3.exception.ExceptionUtils.getStackTrace(carrier))
        return [line.strip()[3:] for line in text.splitlines() if line.strip().startswith("at ")]

    @staticmethod
    def _sleeping(frames: list[str]) -> bool:
        """The thread sleeps between triggers: in ``Clock.waitTillTime`` (``processingTime``)
        or the no-data polling delay of ``executeOneBatch``, not inside a batch."""
        rest = [f for f in frames if ".Thread.sleep" not in f]
        return (len(rest) < len(frames) and bool(rest) and ("Clock.waitTillTime" in rest[0] or "executeOneBatch" in rest[0])
                and not any("runBatch" in f or "constructNextBatch" in f for f in frames))

    def _mark(self) -> None:
        if self.before is None:
            self.before = self.state.getAndSet(self.terminated)

    def _unmark(self) -> None:
        if self.before is not None:
            self.state.compareAndSet(self.terminated, self.before)
            self.before = None

    def _release(self) -> None:
        if self.held:
            self.held = False
            self.gate.unlock()

    def _left_ms(self, deadline: float) -> int:
        return int((deadline - time.monotonic()) * 1000)

    def run(self, deadline: float) -> bool:
        """True when the query's thread ended without being interrupted mid-batch (or was
        interrupted while sleeping between triggers, after it was marked terminated);
        False when ``deadline`` (``time.monotonic()``) came first. Never leaves the lock held."""
        try:
            while True:
                if not self.thread.isAlive():
                    return True
                left = self._left_ms(deadline)
                if left <= 0:
                    return False
                if not self.held:
                    # the thread holds the lock while it plans or commits: wait until it is done
                    self.held = bool(self.gate.tryLock(min(left, _POLL_MS), self.ms))
                    continue
                if self.gate.hasQueuedThread(self.thread):  # parked on our lock: stands still
                    if any("constructNextBatch" in f for f in self._frames()):
                        # about to plan; nothing in flight. It passed its isActive check before
                        # any mark of ours, so undo that and let it plan and run this batch.
                        self._unmark()
                        self._release()
                        while self.gate.hasQueuedThread(self.thread) and self._left_ms(deadline) > 0:
                            self.thread.join(5)
                        continue
                    # at its commit or just after it: it commits, finds the query terminated, ends
                    self._mark()
                    self._release()
                    self.thread.join(max(1, self._left_ms(deadline)))
                    return not self.thread.isAlive()
                if self._sleeping(self._frames()):
                    self._mark()
                    if self._sleeping(self._frames()):
                        # marked while asleep: it plans nothing when it wakes; wake it now
                        # (Spark's stop() treats the interruption as the stop it is)
                        self._release()
                        _stop(self.q)
                        return True
                    continue  # it woke meanwhile: it ends, or parks before planning (undone)
                self.thread.join(_POLL_MS)  # a batch runs: it parks on the lock at its commit
        finally:
            self._release()


def _await_progress(q: StreamingQuery, deadline: float) -> bool:
    """The fallback: wait until the batch running now has reported its progress (or the query
    is between batches); False when ``deadline`` came first."""
    try:
        active, running_after = _position(q)
        while active and q.isActive:
            if time.monotonic() >= deadline:
                return False
            # returns at once when it terminates meanwhile; pyspark's stub says int, it takes
            # seconds as a float (timeout * 1000 ms)
            q.awaitTermination(0.02)  # type: ignore[arg-type]
            now_active, last = _position(q)
            if not now_active or last > running_after:
                return True
        return True
    except Exception:  # noqa: BLE001 - it failed or its JVM side is gone: stop() is then a no-op
        return True


def _stop_at_boundary(q: StreamingQuery, deadline: float) -> bool:
    """Stop ``q`` once its running batch committed (True), or at ``deadline`` (False)."""
    try:
        drain: _Drain | None = _Drain(q)
    except Exception:  # noqa: BLE001 - Spark Connect, continuous, another Spark: fall back
        drain = None
    try:
        graceful = drain.run(deadline) if drain is not None else _await_progress(q, deadline)
    except Exception:  # noqa: BLE001 - the JVM side went away meanwhile
        graceful = True
    _stop(q)  # a no-op once the thread has ended; else Spark interrupts what runs
    return graceful


def graceful_stop(queries: Iterable[StreamingQuery], stop_requested: set[str],
                  grace_s: float = STOP_GRACE_S) -> set[str]:
    """Stop ``queries``, each at a batch boundary (see the module docstring): the micro-batch
    running when the stop was asked for commits and no further batch is planned, so the
    checkpoint's last ``offsets/N`` has its ``commits/N``. The queries are stopped at the same
    time, all within ``grace_s`` seconds; every query's run id is added to ``stop_requested``
    first. A query whose batch is still running when the grace runs out is stopped anyway
    (``StreamingQuery.stop()``: that batch stays planned and Spark runs it again on restart).
    Returns the run ids stopped that way (the grace ran out). Never raises."""
    active: list[StreamingQuery] = []
    for q in queries:
        try:
            if q.isActive:
                stop_requested.add(str(q.runId))
                active.append(q)
        except Exception:  # noqa: BLE001 - a query object whose JVM side is gone
            continue
    deadline = time.monotonic() + max(0.0, grace_s)
    forced: set[str] = set()
    lock = threading.Lock()

    def one(q: StreamingQuery) -> None:
        if not _stop_at_boundary(q, deadline):
            with lock:
                forced.add(str(q.runId))

    threads = [threading.Thread(target=one, args=(q,), name="streamwatch-stop", daemon=True) for q in active[1:]]
    for t in threads:
        t.start()
    if active:
        one(active[0])
    for t in threads:
        t.join()
    return forced


class OrderedRun:
    """Run ``layers`` of ``runner``'s pipeline with a one-shot ``trigger`` (``availableNow``
    or ``once``, :attr:`Trigger.one_shot`) in DAG order: a
    layer starts once every upstream layer *in this run* is ``done``; a layer whose upstream
    failed or was stopped, or that was still queued when :meth:`cancel` came, is ``not-run``.

    ``notify`` receives :class:`QueryQueued` (at :meth:`start`, for each layer that waits),
    :class:`QueryNotRun` and error :class:`RuntimeNotice` objects. ``lock`` is held while a
    query starts (the caller's lock, so a concurrent stop never misses a query being started).
    ``state`` maps layer → ``queued``/``running``/``done``/``failed``/``stopped``/``not-run``;
    ``errors`` maps layer → the exception that failed it (``start_errors``: those that kept
    the query from starting)."""

    def __init__(self, runner: PipelineRunner, layers: Iterable[str], trigger: Trigger,
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

    def start(self) -> OrderedRun:
        """Announce the queued layers and start one thread per layer; returns ``self``."""
        q = self.runner.pipeline.query_name
        for name in self.layers:
            ups = self._upstream(name)
            if ups:
                self._notify(QueryQueued(q(self.runner.pipeline.layer(name)),
                                         tuple(q(self.runner.pipeline.layer(u)) for u in ups), self.trigger.spec))
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
        exc: Exception | None
        try:
            q.awaitTermination()
            exc = q.exception()
        except Exception as e:  # noqa: BLE001 - StreamingQueryException, or the session stopped
            exc = e
        stopped = str(q.runId) in self.runner.stop_requested
        if exc is not None and not stopped:
            self.errors[name] = exc
        self._set(name, "stopped" if stopped else "failed" if exc is not None else "done")
