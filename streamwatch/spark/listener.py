"""``StreamingQueryListener`` adapter: Spark callbacks → model events → a non-blocking
publish function (usually :meth:`streamwatch.events.bus.EventBus.publish`).

Spark calls listeners on its listener-bus thread (for PySpark, through a Py4J callback).
Each callback here converts the event and hands it over in O(1); it never blocks and never
raises into Spark: a conversion failure is counted in ``conversion_errors`` and dropped.

The fast path: PySpark's own wrapper converts every Java event field by field
(``StreamingQueryProgress.fromJObject``: one Py4J round trip per field, per source, per state
operator — dozens per progress event, all competing with the query for the driver's cores).
:class:`PublishingListener` instead implements Spark's ``PythonStreamingQueryListener``
interface itself and asks the JVM for the event's event-log line in a single call
(``org.apache.spark.util.JsonProtocol.sparkEventToJsonString``, the serializer Spark's
``EventLoggingListener`` uses), then parses it with the event-log reader
(:func:`streamwatch.events.eventlog.parse_line`). So a live event, its recording and the same
event read back from Spark's event log are one parse of one JSON text, rates at full
precision. Should that call fail (another Spark build), the event is converted the PySpark way.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    SourceProgress,
    StreamingQueryListener,
    StreamingQueryProgress,
)

from streamwatch.events.bus import EventBus
from streamwatch.events.eventlog import parse_line
from streamwatch.model.events import Event, ListenerStats, QueryIdle, QueryProgress, QueryStarted, QueryTerminated

#: a pyspark listener event (``QueryStartedEvent`` …)
E = TypeVar("E")


def _s(value: Any) -> str | None:
    return None if value is None else str(value)


def started_from_spark(event: QueryStartedEvent) -> QueryStarted:
    """From ``QueryStartedEvent`` (id, runId, name, timestamp)."""
    return QueryStarted(id=str(event.id), run_id=str(event.runId), timestamp=_s(event.timestamp), name=_s(event.name))


def _exact_rates(target: dict[str, Any], obj: StreamingQueryProgress | SourceProgress) -> None:
    """Spark 4.2's ``StreamingQueryProgress.json`` rounds rates to 0.1 rows/s, while event logs
    (Jackson) keep the doubles; pyspark has already fetched the doubles into ``obj``, so put
    them back into ``target`` (``obj``'s JSON, parsed; NaN/infinite: the key is left out, as
    Spark does)."""
    rates = (("inputRowsPerSecond", obj.inputRowsPerSecond), ("processedRowsPerSecond", obj.processedRowsPerSecond))
    for key, value in rates:
        if isinstance(value, float):
            if math.isfinite(value):
                target[key] = value
            else:
                target.pop(key, None)


def progress_from_spark(event: QueryProgressEvent) -> QueryProgress:
    """From ``QueryProgressEvent``: parses ``event.progress.json`` (Spark's own JSON), so the
    listener, recordings and event logs share one parser; rates (rows/s) are taken at full
    precision from the progress object (see :func:`_exact_rates`)."""
    progress = event.progress
    d = json.loads(progress.json)
    try:
        _exact_rates(d, progress)
        # one source list of one progress: a length mismatch raises, keeping Spark's rounded rates
        for sd, sp in zip(d.get("sources") or (), progress.sources, strict=True):
            _exact_rates(sd, sp)
    except Exception:  # keep Spark's rounded values rather than lose the event
        pass
    return QueryProgress.from_dict(d)


def idle_from_spark(event: QueryIdleEvent) -> QueryIdle:
    """From ``QueryIdleEvent`` (id, runId, timestamp)."""
    return QueryIdle(id=str(event.id), run_id=str(event.runId), timestamp=_s(event.timestamp))


def terminated_from_spark(event: QueryTerminatedEvent) -> QueryTerminated:
    """From ``QueryTerminatedEvent`` (exception text and error class, pyspark 3.5+'s
    ``errorClassOnException``; None when clean)."""
    return QueryTerminated(
        id=str(event.id),
        run_id=str(event.runId),
        timestamp=None,
        exception=_s(event.exception),
        error_class=_s(event.errorClassOnException),
    )


class PublishingListener(StreamingQueryListener):
    """Converts every listener event to a model object and calls ``publish`` with it.

    ``publish`` must itself be non-blocking (``EventBus.publish`` is). Counts
    ``conversion_errors``, ``callbacks`` and the longest callback (``max_callback_s``, s)."""

    def __init__(self, publish: Callable[[Event], None]) -> None:
        self._publish = publish
        self._lock = threading.Lock()
        self.conversion_errors = 0
        self.callbacks = 0
        self.max_callback_s = 0.0  # longest time one callback spent here (s)
        self.fallbacks = 0  # events converted the PySpark way because the one-call route failed
        self._to_json: Any = None  # JsonProtocol.sparkEventToJsonString, looked up once
        self._jwrapper: Any = None  # the JVM listener, made on first use (py4j JavaObject)

    @property
    def _jlistener(self) -> Any:
        """The JVM side PySpark registers in ``spark.streams.addListener(self)``: Spark's
        ``PythonStreamingQueryListenerWrapper`` around :class:`_JavaCallbacks` (overrides
        PySpark's, which converts events field by field)."""
        if self._jwrapper is None:
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            assert jvm is not None, "no JVM: a classic (not Spark Connect) session registers this"
            try:
                self._to_json = jvm.org.apache.spark.util.JsonProtocol.sparkEventToJsonString
            except Exception:  # not this Spark build: every event takes the PySpark route
                self._to_json = None
            self._jwrapper = jvm.PythonStreamingQueryListenerWrapper(_JavaCallbacks(self))
        return self._jwrapper

    def _from_java(self, jevent: Any, from_jobject: Callable[[Any], E], convert: Callable[[E], Event]) -> None:
        """One Java event (from :class:`_JavaCallbacks`): its event-log JSON in one Py4J call,
        parsed as Spark's event log is; else ``convert`` of pyspark's event (``from_jobject``,
        e.g. ``QueryProgressEvent.fromJObject``: the field-by-field route)."""
        def via_json(ev: Any) -> Event:
            obj = None
            if self._to_json is not None:
                try:
                    obj = parse_line(self._to_json(ev).encode())
                except Exception:
                    obj = None
            if obj is None:
                with self._lock:
                    self.fallbacks += 1
                obj = convert(from_jobject(ev))
            return obj

        self._hand_over(via_json, jevent)

    def _hand_over(self, convert: Callable[[E], Event], event: E) -> None:
        t0 = time.perf_counter()
        try:
            self._publish(convert(event))
        except Exception:
            with self._lock:
                self.conversion_errors += 1
        spent = time.perf_counter() - t0
        with self._lock:
            self.callbacks += 1
            if spent > self.max_callback_s:
                self.max_callback_s = spent

    def stats(self, bus: EventBus | None = None) -> ListenerStats:
        """This listener's counters, with ``bus``'s (published, delivered, dropped, sink
        errors) when given: the model's view of the hand-off's health."""
        b = bus.stats() if bus is not None else None
        with self._lock:
            return ListenerStats(
                published=b.published if b else self.callbacks - self.conversion_errors,
                delivered=b.delivered if b else 0,
                dropped=b.dropped if b else 0,
                sink_errors=b.sink_errors if b else 0,
                conversion_errors=self.conversion_errors,
                max_callback_ms=round(self.max_callback_s * 1000, 3),
            )

    def onQueryStarted(self, event: QueryStartedEvent) -> None:  # noqa: N802 - Spark's name
        self._hand_over(started_from_spark, event)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:  # noqa: N802
        self._hand_over(progress_from_spark, event)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:  # noqa: N802
        self._hand_over(idle_from_spark, event)

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:  # noqa: N802
        self._hand_over(terminated_from_spark, event)


class _JavaCallbacks:
    """Implements Spark's ``org.apache.spark.sql.streaming.PythonStreamingQueryListener`` Java
    interface through Py4J (as PySpark's ``JStreamingQueryListener`` does) and passes the Java
    event objects, unconverted, to :meth:`PublishingListener._from_java`."""

    def __init__(self, owner: PublishingListener) -> None:
        self._owner = owner

    def onQueryStarted(self, jevent: Any) -> None:  # noqa: N802 - Spark's name
        self._owner._from_java(jevent, QueryStartedEvent.fromJObject, started_from_spark)

    def onQueryProgress(self, jevent: Any) -> None:  # noqa: N802
        self._owner._from_java(jevent, QueryProgressEvent.fromJObject, progress_from_spark)

    def onQueryIdle(self, jevent: Any) -> None:  # noqa: N802
        self._owner._from_java(jevent, QueryIdleEvent.fromJObject, idle_from_spark)

    def onQueryTerminated(self, jevent: Any) -> None:  # noqa: N802
        self._owner._from_java(jevent, QueryTerminatedEvent.fromJObject, terminated_from_spark)

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
