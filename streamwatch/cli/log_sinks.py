"""Where ``streamwatch log`` sends what a run produces: the recording (:class:`RecordSink`
over a JSONL file, stdout or fsspec segments), the ``--prometheus`` endpoint
(:func:`serve_prometheus`) and the backend's ``emit`` fanning listener events out to them
(:func:`emitter`). The recorders, Spark and the metrics server are imported when a run starts."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamwatch.errors import one_line

if TYPE_CHECKING:  # imported when a run starts
    from pyspark.sql import SparkSession

    from streamwatch.events.bus import EventBusStats
    from streamwatch.events.jsonl import JsonlRecorder
    from streamwatch.events.segments import SegmentRecorder
    from streamwatch.metrics import PrometheusSink

Say = Callable[[str], None]


@dataclass(frozen=True)
class Recording:
    """Where and how the events are written: ``out`` (a file, ``-`` for stdout, or an fsspec
    URL stored as segment objects), ``flush_every`` events per write flush, ``max_bytes``
    (bytes) to rotate or cut a segment at, ``segment_seconds`` (s) between segments of a URL."""

    out: str
    flush_every: int = 1
    max_bytes: int | None = None
    segment_seconds: float | None = None


class RecordSink:
    """The recorder as a sink: a write failure (disk full, file too large) is said once on
    stderr and the objects after it counted; the queries keep running. Called from the event
    bus's thread (listener events) and the driver thread (``query-health`` records): the
    failure bookkeeping is under a lock, the recorder has its own."""

    def __init__(self, recorder: JsonlRecorder | SegmentRecorder, out: str, say: Say) -> None:
        self.recorder = recorder
        self.out = out
        self.say = say
        self.lost_events = 0
        self.error: str | None = None
        self._lock = threading.Lock()

    def __call__(self, obj: object) -> None:
        with self._lock:
            if self.error is not None:
                self.lost_events += 1
                return
            try:
                self.recorder.write(obj)
            except OSError as e:
                self.error = e.strerror or str(e)
                self.lost_events += 1
                self.say(f"cannot write {self.out}: {self.error} — recording stopped, the queries keep running")

    def close(self, stats: EventBusStats) -> bool:
        """Write the bus's counters (unless recording stopped) and close; True when events
        were lost (each said on stderr)."""
        from streamwatch.model.events import ListenerStats

        try:
            if self.error is None:
                self.recorder.write(ListenerStats(published=stats.published, delivered=stats.delivered,
                                                  dropped=stats.dropped, sink_errors=stats.sink_errors))
            self.recorder.close()
        except OSError as e:
            if self.error is None:
                self.say(f"cannot write {self.out}: {e.strerror}" if e.strerror else str(e))
            self.error = self.error or e.strerror or str(e)
        if self.error is not None:
            self.say(f"{self.lost_events} events not recorded ({self.out}: {self.error})")
        return self.error is not None


def open_sink(spark: SparkSession, facts: Mapping[str, str], rec: Recording, say: Say) -> RecordSink | None:
    """The recording of ``rec.out`` with its header (Spark's session plus ``facts``: pipeline,
    trigger, remote); None (said on stderr) when it cannot be opened."""
    from streamwatch.events.segments import open_recorder
    from streamwatch.spark.record import session_header

    try:
        recorder = open_recorder(rec.out, header=session_header(spark, dict(facts)), flush_every=rec.flush_every,
                                 max_bytes=rec.max_bytes, segment_seconds=rec.segment_seconds)
    except OSError as e:
        say(f"cannot write {rec.out}: {e.strerror}" if e.strerror else str(e))
        return None
    return RecordSink(recorder, rec.out, say)


def serve_prometheus(port: int | None, say: Say) -> PrometheusSink | None:
    """The ``--prometheus`` endpoint on 127.0.0.1:``port``; None without one or when the port
    cannot be served (said on stderr)."""
    if port is None:
        return None
    try:
        from streamwatch.metrics import PrometheusSink

        metrics = PrometheusSink(port)
    except OSError as e:
        say(f"cannot serve Prometheus metrics on port {port}: {e.strerror or e}")
        return None
    say(f"Prometheus metrics on http://127.0.0.1:{metrics.port}/metrics")
    return metrics


def emitter(sinks: list[Callable[[object], None]], failed: list[str], say: Say) -> Callable[[object], None]:
    """The backend's ``emit``: listener events to ``sinks``, a failed query's exception (one
    line) appended to ``failed``, the runtime's notices said on stderr."""
    from streamwatch.model.events import Event, QueryTerminated
    from streamwatch.model.runtime import QueryNotRun, QueryQueued, RuntimeNotice

    def emit(obj: object) -> None:
        if isinstance(obj, Event):
            for sink in sinks:
                sink(obj)
            if isinstance(obj, QueryTerminated) and obj.failed:
                failed.append(one_line(obj.exception, 1000))
                say(f"query {obj.id} failed: {failed[-1][:300]}")
            elif isinstance(obj, QueryTerminated) and obj.exception:
                say(f"query {obj.id} stopped (Spark reported, caused by the stop: "
                    f"{obj.exception.splitlines()[0][:200]})")
        elif isinstance(obj, QueryQueued):
            say(f"{obj.query_name} queued: waits for {', '.join(obj.waiting_for)} to finish ({obj.trigger})")
        elif isinstance(obj, QueryNotRun):
            say(f"{obj.query_name} not run: {obj.reason}")
        elif isinstance(obj, RuntimeNotice):
            say(obj.message)
        # a SessionInfo is the backend's view of our session; ours (with the executor count) is said

    return emit
