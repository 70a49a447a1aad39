"""``streamwatch.record(spark, path)``: record a running application's streaming query events
as JSONL (the production use: two lines in the user's own job).

    import streamwatch
    rec = streamwatch.record(spark, "/var/log/myjob/events.jsonl")
    # or, when the job runs elsewhere: streamwatch.record(spark, "s3://bucket/myjob/events.jsonl")
    ...                       # start queries as usual; every listener event is recorded
    rec.stop()                # or let the process exit: the recorder flushes at exit too

Spark → :class:`PublishingListener` (never blocks Spark's listener thread) → bounded
:class:`EventBus` (drop-oldest, counted) → :class:`JsonlRecorder` on the bus's own thread.

``spark`` may be a Spark Connect session (``SparkSession.builder.remote("sc://…")``): the
listener then runs in this client process and receives the events of the queries this
session starts over gRPC (see :mod:`streamwatch.spark.connect`); the recording format is
the same.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from streamwatch.events.bus import EventBus
from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader
from streamwatch.events.redact import redact_conf
from streamwatch.events.runs import RunTracker
from streamwatch.events.segments import SegmentRecorder, open_recorder
from streamwatch.model.events import ListenerStats
from streamwatch.spark.connect import add_listener, connect_header, is_connect_session
from streamwatch.spark.listener import PublishingListener


def session_header(spark: SparkSession, app: Mapping[str, Any] | None = None) -> RecordingHeader:
    """The recording header for ``spark``: Spark version, application id and name, master,
    and the Spark conf with secrets redacted; ``app`` adds fields (e.g. ``pipeline``). For a
    Spark Connect session see :func:`streamwatch.spark.connect.connect_header` (adds
    ``remote`` and ``sessionId``)."""
    if is_connect_session(spark):
        return connect_header(spark, app)
    sc = spark.sparkContext
    facts: dict[str, Any] = {"sparkVersion": spark.version, "appId": sc.applicationId,
                             "appName": sc.appName, "master": sc.master}
    facts.update(app or {})
    conf = redact_conf(dict(sc.getConf().getAll()))
    return RecordingHeader(time_ms=int(time.time() * 1000), source="listener", app=facts, conf=conf)


class Recording:
    """A running recording (returned by :func:`record`). ``stop()`` removes the listener,
    delivers every accepted event, writes a final ``stats`` line (drops, sink errors) and
    closes the file; it is idempotent and also runs at interpreter exit. Usable as a context
    manager. Extra ``sinks`` (callables taking a model object) receive every event too."""

    def __init__(self, spark: SparkSession, recorder: JsonlRecorder | SegmentRecorder, capacity: int = 10_000,
                 sinks: tuple[Callable[[Any], None], ...] = ()) -> None:
        self.spark = spark
        self.recorder = recorder
        self.path = recorder.path
        self.bus = EventBus(capacity=capacity, name="streamwatch-recorder")
        self.runs = RunTracker()
        self.bus.add_sink(self.runs)
        self.bus.add_sink(self._write)
        for s in sinks:
            self.bus.add_sink(s)
        self.listener = PublishingListener(self.bus.publish)
        self._stopped = False
        self._lock = threading.Lock()
        try:
            add_listener(spark, self.listener)  # Spark Connect: raises rather than record nothing
        except BaseException:
            self.bus.close(0)
            raise
        atexit.register(self.stop)

    def _write(self, event: object) -> None:
        """The bus's sink for the recording (the recorder's ``write`` tells whether it wrote a
        line; a bus sink returns nothing)."""
        self.recorder.write(event)

    def stats(self) -> ListenerStats:
        """Counters so far: published, delivered, dropped, sink errors, conversion errors and
        the longest listener callback (ms)."""
        return self.listener.stats(self.bus)

    def stop(self, timeout: float = 5.0) -> ListenerStats:
        """Stop recording (see the class docstring). When no query is active any more, first
        waits up to ``timeout`` s for Spark to deliver the pending ``QueryTerminatedEvent``s.
        Never raises for a stopped SparkSession; returns the final counters."""
        with self._lock:
            if self._stopped:
                return self.stats()
            self._stopped = True
        with contextlib.suppress(Exception):  # pragma: no cover
            atexit.unregister(self.stop)
        connect = is_connect_session(self.spark)
        try:
            if not connect and not self.spark.streams.active:
                # events Spark already posted (a QueryTerminatedEvent is posted before
                # awaitTermination returns) reach the listener however busy the machine is
                self.spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(int(max(timeout, 60) * 1000))
        except Exception:  # the session is gone already, or a listener holds the bus
            pass
        with contextlib.suppress(Exception):  # the session is gone already
            # Connect: the terminated events come over gRPC from the server, after the query
            # stopped; waiting for them is waiting for the event itself
            if not self.spark.streams.active:
                self.runs.wait_all_terminated(self.bus, timeout)
        with contextlib.suppress(Exception):  # the session is gone already
            self.spark.streams.removeListener(self.listener)
        self.bus.close(timeout)
        stats = self.stats()
        try:
            self.recorder.write(stats)
        finally:
            self.recorder.close()
        return stats

    def __enter__(self) -> Recording:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def record(spark: SparkSession, path: str | Path | None, *, flush_every: int = 1, max_bytes: int | None = None,
           keep: int | None = None, capacity: int = 10_000, app: Mapping[str, Any] | None = None,
           sinks: tuple[Callable[[Any], None], ...] = (), segment_seconds: float | None = None,
           storage_options: Mapping[str, Any] | None = None) -> Recording:
    """Record every ``StreamingQueryListener`` event of ``spark`` to ``path`` (JSONL; ``"-"``
    or None: stdout) until the returned :class:`Recording` is stopped.

    ``path`` is a local file (appended to) or an fsspec URL such as
    ``s3://bucket/job/events.jsonl`` (needs ``s3fs``; credentials as boto3 finds them, or
    ``storage_options``): object stores cannot append, so the recording is written as
    segment objects ``events.jsonl.1``, ``.2`` … — one every ``segment_seconds`` (default 5 s)
    while events arrive, or at ``max_bytes`` (default 8 MB) — which
    ``streamwatch replay --follow URL`` picks up as they appear.

    ``flush_every``: events per flush of a local file (1: each event is on disk at once,
    ``tail -f`` works); ``max_bytes``: rotate a local file at this size (bytes) into
    ``path.1``, ``path.2``…; ``keep``: rotated segments kept (None: all); ``capacity``: events
    queued before the oldest is dropped (counted). Raises ``OSError`` when ``path`` cannot be
    opened (a missing bucket, too), ``ValueError`` for bad settings, and
    :class:`streamwatch.spark.connect.ConnectError` when a Spark Connect server will not
    register the listener."""
    recorder = open_recorder(path, header=session_header(spark, app), flush_every=flush_every,
                             max_bytes=max_bytes, keep=keep, segment_seconds=segment_seconds,
                             storage_options=storage_options)
    try:
        return Recording(spark, recorder, capacity=capacity, sinks=sinks)
    except BaseException:
        recorder.close()
        raise
