"""streamwatch's JSONL recording format and its writer (the recorder).

One JSON object per line, every line carrying the schema version ``v``:

* ``{"v":1,"kind":"header","time":<epoch ms>,"source":"listener","app":{…},"conf":{…}}`` —
  first line of every file (and of every rotated segment); ``conf`` is the Spark conf with
  secrets redacted (:mod:`streamwatch.events.redact`);
* ``{"v":1,"kind":"started"|"progress"|"idle"|"terminated","t":<epoch ms recorded>,"event":{…}}``
  — ``event`` is Spark's own JSON for the listener event (``StreamingQueryProgress.json`` for
  progress; ``id``/``runId``/``name``/``timestamp``/``exception``/``errorClassOnException``);
* ``{"v":1,"kind":"stats","t":…,"event":{"published":…,"dropped":…,"sinkErrors":…}}`` — the
  hand-off counters, written when a recording stops;
* ``{"v":1,"kind":"unsupported","event":{"eventClass":…,"reason":…,"line":…}}`` — a Spark
  event-log line that was recognised but cannot be modelled (Spark 2.0.x).

Rotation (``max_bytes``): when the active file reaches the size, it is renamed to
``<path>.1``, ``<path>.2``, … (1 is the oldest) and a fresh ``<path>`` is started, so
``tail -F`` and :func:`streamwatch.events.reader.read_recording` see every event exactly once.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Self

import orjson

from streamwatch.events.redact import redact_conf
from streamwatch.model.events import (
    Event,
    ListenerStats,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
    UnsupportedEvent,
)

SCHEMA_VERSION = 1
EVENT_KINDS = ("started", "progress", "idle", "terminated", "stats")


@dataclass(frozen=True, slots=True)
class RecordingHeader:
    """First line of a recording: when it started (epoch ms), what produced it
    (``listener`` or ``eventlog``), application facts (``sparkVersion``, ``appId``,
    ``appName``, ``master``, ``pipeline`` …) and the redacted Spark conf."""

    kind = "header"
    time_ms: int
    source: str = "listener"
    app: Mapping[str, Any] = field(default_factory=dict)
    conf: Mapping[str, Any] = field(default_factory=dict)

    def to_line(self) -> dict[str, Any]:
        return {"v": SCHEMA_VERSION, "kind": "header", "time": self.time_ms, "source": self.source,
                "app": dict(self.app), "conf": redact_conf(self.conf)}

    @classmethod
    def from_line(cls, d: Mapping[str, Any]) -> RecordingHeader:
        return cls(time_ms=int(d.get("time") or 0), source=str(d.get("source") or "listener"),
                   app=dict(d.get("app") or {}), conf=redact_conf(d.get("conf") or {}))


@dataclass(frozen=True, slots=True)
class DerivedRecord:
    """A record streamwatch derived during a recording (not a listener event), e.g.
    ``query-health``: its ``kind`` and its documented JSON ``body``. Recorded as
    ``{"v", "kind", "t", "event": body}``; :func:`decode` skips its kind (unknown to readers)."""

    kind: str
    body: Mapping[str, Any]


def encode(obj: Any, recorded_ms: int | None = None) -> bytes:
    """One JSONL line (with the trailing newline) for a model object: an ``Event``,
    ``ListenerStats``, ``UnsupportedEvent``, :class:`RecordingHeader` or :class:`DerivedRecord`
    (whose kind must not be a listener kind). Raises ``TypeError`` for anything else."""
    if isinstance(obj, RecordingHeader):
        line: dict[str, Any] = obj.to_line()
    elif isinstance(obj, DerivedRecord) and obj.kind not in (*EVENT_KINDS, "header", "unsupported"):
        line = {"v": SCHEMA_VERSION, "kind": obj.kind,
                "t": int(time.time() * 1000) if recorded_ms is None else recorded_ms, "event": dict(obj.body)}
    elif isinstance(obj, UnsupportedEvent):
        line = {"v": SCHEMA_VERSION, "kind": "unsupported",
                "event": {"eventClass": obj.event_class, "reason": obj.reason, "line": obj.line}}
    elif isinstance(obj, (QueryStarted, QueryIdle, QueryTerminated, QueryProgress, ListenerStats)):
        line = {"v": SCHEMA_VERSION, "kind": obj.kind,
                "t": int(time.time() * 1000) if recorded_ms is None else recorded_ms, "event": obj.to_dict()}
    else:
        raise TypeError(f"cannot record {type(obj).__name__}")
    return orjson.dumps(line, option=orjson.OPT_NON_STR_KEYS) + b"\n"


_SEGMENT = re.compile(r"\.(\d+)$")


def rotated_segments(path: Path) -> list[Path]:
    """Rotated segments of ``path`` oldest first (``path.1``, ``path.2`` …), not the active
    file itself."""
    found = []
    if path.parent.is_dir():
        for p in path.parent.iterdir():
            if p.name.startswith(path.name + "."):
                m = _SEGMENT.search(p.name[len(path.name):])
                if m and p.name == f"{path.name}.{m.group(1)}":
                    found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


class Recorder:
    """What every recorder shares: ``write(obj)`` (also as ``recorder(obj)``, an
    :class:`~streamwatch.events.bus.EventBus` sink) encodes ``obj`` with :func:`encode` outside the
    lock, then, under ``self._lock`` and unless ``self._closed``, hands the line to
    :meth:`_append`; ``with recorder:`` closes it. Subclasses set ``_lock``/``_closed`` and
    implement :meth:`_append`, ``flush`` and ``close``."""

    _lock: threading.Lock
    _closed: bool

    def __call__(self, obj: Any) -> None:
        self.write(obj)

    def write(self, obj: Any) -> bool:
        """Record ``obj``; True when accepted, False when it is not a recordable object or the
        recorder is closed. Raises ``OSError`` when the line cannot be written or stored (see
        the subclass's :meth:`_append`)."""
        try:
            line = encode(obj)
        except TypeError:
            return False
        with self._lock:
            if self._closed:
                return False
            self._append(line)
        return True

    def _append(self, line: bytes) -> None:
        """Take one encoded line (called with the lock held, recorder open)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JsonlRecorder(Recorder):
    """Writes model objects as JSONL to ``path`` (``"-"`` or None: stdout).

    ``flush_every`` events per flush (1, the default, makes ``tail -f`` see each event at
    once; larger values batch writes); ``max_bytes`` rotates the file at that size (bytes);
    ``keep`` is how many rotated segments to keep (None: all). Thread-safe: ``write`` is
    meant to be an :class:`~streamwatch.events.bus.EventBus` sink. Objects it cannot record
    (``RuntimeNotice``, ``SessionInfo`` …) are ignored. Raises ``OSError`` when the file cannot
    be opened; ``close`` flushes and is idempotent.
    """

    def __init__(self, path: str | Path | None = None, *, header: RecordingHeader | None = None,
                 flush_every: int = 1, max_bytes: int | None = None, keep: int | None = None,
                 stream: IO[bytes] | None = None) -> None:
        if flush_every < 1:
            raise ValueError("flush_every must be >= 1")
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be >= 1")
        self.path = None if path in (None, "-") else Path(path)
        self.header = header or RecordingHeader(time_ms=int(time.time() * 1000))
        self.flush_every = flush_every
        self.max_bytes = max_bytes if self.path is not None else None
        self.keep = keep
        self.written = 0
        self.rotations = 0
        self._lock = threading.Lock()
        self._pending = 0
        self._closed = False
        self._owns = self.path is not None
        if self.path is not None:
            if not self.path.parent.exists():  # a file in the way: open() says "Not a directory"
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh: IO[bytes] = open(self.path, "ab")  # noqa: SIM115 - held until close() / the next rotation
        else:
            self._fh = stream if stream is not None else sys.stdout.buffer
        self._size = self._fh.tell() if self.path is not None else 0
        self._emit(encode(self.header))
        self._flush()

    def _append(self, line: bytes) -> None:
        """Write the line, flush every ``flush_every`` lines, rotate at ``max_bytes``. Raises
        ``OSError`` on a write failure (disk full)."""
        self._emit(line)
        self.written += 1
        self._pending += 1
        if self._pending >= self.flush_every:
            self._flush()
        if self.max_bytes is not None and self._size >= self.max_bytes:
            self._rotate()

    def flush(self) -> None:
        with self._lock:
            if not self._closed:
                self._flush()

    def close(self) -> None:
        """Flush what is buffered and close the file (stdout is flushed, not closed)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._flush()
            if self._owns:
                self._fh.close()

    def _emit(self, line: bytes) -> None:
        self._fh.write(line)
        self._size += len(line)

    def _flush(self) -> None:
        self._pending = 0
        with contextlib.suppress(ValueError):  # closed stdout
            self._fh.flush()

    def _rotate(self) -> None:
        assert self.path is not None
        self._flush()
        self._fh.close()
        segments = rotated_segments(self.path)
        last = int(segments[-1].name.rsplit(".", 1)[1]) if segments else 0  # rotated_segments: "<name>.<digits>"
        os.replace(self.path, self.path.with_name(f"{self.path.name}.{last + 1}"))
        self.rotations += 1
        if self.keep is not None:
            segments = rotated_segments(self.path)
            for old in segments[: max(0, len(segments) - self.keep)]:
                old.unlink(missing_ok=True)
        self._fh = open(self.path, "ab")  # noqa: SIM115 - held until close() / the next rotation
        self._size = 0
        self._emit(encode(self.header))


def decode(line: bytes | str) -> Event | ListenerStats | UnsupportedEvent | RecordingHeader | None:
    """The model object for one JSONL line (an event, ``ListenerStats``, ``UnsupportedEvent``
    or :class:`RecordingHeader`); None for an unknown kind (a newer writer's addition).
    Raises ``ValueError`` for invalid JSON, a newer schema version, or a malformed event."""
    from streamwatch.model.events import event_from_json

    d = orjson.loads(line)
    if not isinstance(d, dict) or "kind" not in d:
        raise ValueError("not a streamwatch JSONL line (no 'kind')")
    v = d.get("v")
    if not isinstance(v, int) or v > SCHEMA_VERSION:
        raise ValueError(f"unsupported recording schema version {v!r} (this streamwatch reads ≤ {SCHEMA_VERSION})")
    kind = d["kind"]
    ev = d.get("event") or {}
    try:
        if kind == "header":
            return RecordingHeader.from_line(d)
        if kind == "unsupported":
            return UnsupportedEvent(str(ev.get("eventClass", "")), str(ev.get("reason", "")), int(ev.get("line") or 0))
        if not isinstance(kind, str) or kind not in EVENT_KINDS:
            return None
        return event_from_json(kind, ev)
    except KeyError as e:
        raise ValueError(f"malformed {kind} event: missing {e}") from None
    except (TypeError, AttributeError, OverflowError) as e:  # a field of the wrong JSON type
        raise ValueError(f"malformed {kind} event: {e}") from None


__all__ = ["SCHEMA_VERSION", "DerivedRecord", "JsonlRecorder", "ListenerStats", "Recorder", "RecordingHeader", "decode", "encode",
           "rotated_segments"]
