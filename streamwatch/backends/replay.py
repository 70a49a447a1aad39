"""Replay a recording or a Spark event log into the dashboard (no pyspark).

:class:`ReplayBackend` is a :class:`~streamwatch.backends.base.Backend` with no controls: its ``plan`` lists
the queries found in the file; ``start(emit)`` starts a thread that emits the recorded model
objects with their original spacing divided by ``speed`` (0: as fast as possible), and with
``follow`` keeps emitting what another process appends.
"""

from __future__ import annotations

import posixpath
import threading
import time
from collections.abc import Callable
from pathlib import Path

from streamwatch.backends.base import Backend
from streamwatch.events.jsonl import RecordingHeader
from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from streamwatch.events.segments import is_url, local_path
from streamwatch.model.events import Event, QueryProgress, QueryStarted
from streamwatch.model.runtime import QueryPlan, RecordedSession, RunPlan, RuntimeNotice

MAX_GAP_S = 5.0  # a longer pause in the recording is replayed as this many seconds (before speed)


def recorded_session(header: RecordingHeader) -> RecordedSession:
    """The dashboard's header facts from a recording header or an event log's application
    events (see :class:`RecordingHeader`)."""
    app = header.app

    def text(key: str) -> str | None:
        value = app.get(key)
        return None if value is None else str(value)

    return RecordedSession(source=header.source, spark_version=text("sparkVersion"), master=text("master"),
                           app_id=text("appId"), app_name=text("appName"), pipeline=text("pipeline"),
                           started_ms=header.time_ms or None, trigger=text("trigger"))


def _query_names(path: str | Path) -> list[str]:
    names: list[str] = []
    for obj in read_events(path, ReadReport()):
        if isinstance(obj, (QueryStarted, QueryProgress)):
            name = obj.name or obj.id
            if name not in names:
                names.append(name)
    return names


class ReplayBackend(Backend):
    """Feeds the events of ``path`` (recording or Spark event log) to the dashboard.

    ``speed``: replay speed factor (2 = twice as fast as recorded; 0 = no waiting); gaps longer
    than 5 s are shortened to 5 s. Events are due on a schedule kept against the clock, so
    the time spent emitting (or a busy machine) does not slow the replay down: a late event is
    emitted at once and the ones after it keep their recorded times. ``follow``: after the end, keep reading what is appended
    (``tail -F``) until ``stop()``. Raises :class:`EventSourceError` from the constructor when
    ``path`` is unreadable or unrecognised (unless ``follow`` and it does not exist yet).

    ``path`` may be an fsspec URL (``s3://bucket/job/events.jsonl``): a recording written as
    segment objects is read in segment order and, with ``follow``, new segments are picked up
    every ``poll_s`` seconds (default 1 s on a URL, 0.2 s for a local file)."""

    def __init__(self, path: str | Path, speed: float = 1.0, follow: bool = False,
                 poll_s: float | None = None) -> None:
        if speed < 0:
            raise ValueError("speed must be >= 0")
        local = None if is_url(path) else local_path(path)
        self.path: str | Path = local if local is not None else str(path)
        self.speed = speed
        self.follow = follow
        self.poll_s = poll_s
        if local is None:
            try:
                names = _query_names(self.path)
            except EventSourceError:
                if not follow:
                    raise
                names = []  # nothing written yet: follow it anyway
        else:
            names = _query_names(local) if local.exists() or not follow else []
        name = posixpath.basename(str(self.path).rstrip("/"))
        self.plan = RunPlan(
            pipeline=f"replay {name}",
            description=("following " if follow else "replaying ") + str(self.path),
            queries=tuple(QueryPlan(query_name=n, layer="", checkpoint="", table="") for n in names),
            landing=(),
            trigger="replay",
        )
        self.report = ReadReport()
        self.emitted = 0
        self.done = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, emit: Callable[[object], None]) -> None:
        """Start the replay thread and return at once."""
        self._thread = threading.Thread(target=self._run, args=(emit,), name="streamwatch-replay", daemon=True)
        self._thread.start()

    def _run(self, emit: Callable[[object], None]) -> None:
        emit(RuntimeNotice("info", f"{self.plan.description} at {self.speed:g}×" if self.speed else self.plan.description))
        last_ms: int | None = None
        # the schedule: event k is due at ``clock0 + due`` (its capped, speed-scaled offset into
        # the recording), so time spent emitting does not accumulate as drift
        clock0 = time.monotonic()
        due = 0.0
        header_sent = False
        try:
            for obj in read_events(self.path, self.report, follow=self.follow, stop=self._stop, poll_s=self.poll_s):
                if self._stop.is_set():
                    return
                if not header_sent and self.report.header is not None:
                    emit(recorded_session(self.report.header))
                    header_sent = True
                if isinstance(obj, Event) and self.speed > 0 and obj.timestamp_ms is not None:
                    if last_ms is None:
                        clock0 = time.monotonic()
                    elif obj.timestamp_ms > last_ms:
                        due += min((obj.timestamp_ms - last_ms) / 1000, MAX_GAP_S) / self.speed
                        wait = clock0 + due - time.monotonic()
                        if wait < -MAX_GAP_S:  # far behind (a followed file was idle): start afresh
                            clock0, wait = time.monotonic() - due, 0.0
                        if wait > 0 and self._stop.wait(wait):
                            return
                    last_ms = obj.timestamp_ms
                emit(obj)
                self.emitted += 1
            r = self.report
            if not header_sent:  # read to the end: the header, or — none in the file — the file's name
                emit(recorded_session(r.header) if r.header is not None
                     else RecordedSession(source="file", app_name=posixpath.basename(str(self.path).rstrip("/"))))
            tail = f" ({r.unsupported} unsupported legacy events)" if r.unsupported else ""
            bad = f"; {r.bad_lines} unreadable lines skipped" if r.bad_lines else ""
            emit(RuntimeNotice("warning" if bad else "info", f"replay finished: {self.emitted} events{tail}{bad}"))
        except EventSourceError as e:
            emit(RuntimeNotice("error", str(e)))
        finally:
            self.done.set()

    def stop(self) -> None:
        """Stop the replay (idempotent)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
