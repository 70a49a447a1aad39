"""Spark event logs → model events.

Spark's ``EventLoggingListener`` writes one ``JsonProtocol`` JSON object per line; the
Structured Streaming listener events appear as
``{"Event":"org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgressEvent","progress":{…}}``
(and ``…$QueryStartedEvent``/``$QueryIdleEvent``/``$QueryTerminatedEvent`` with their fields
at the top level). This reads

* a single event-log file, plain or compressed (:mod:`streamwatch.events.codecs`),
* a rolling event-log directory ``eventlog_v2_<appId>/`` (``spark.eventLog.rolling.enabled``)
  whose ``events_<index>_<appId>[.<codec>]`` files are read in index order,
* a ``spark.eventLog.dir`` holding exactly one application.

Spark 2.0.0/2.0.1 wrote ``StreamingQueryListener$QueryProgress``/``$QueryTerminated`` (renamed
in 2.1, with a different shape); they become :class:`UnsupportedEvent` — Spark's own
``ReplayListenerBus`` skips them too (``StreamingQueryListenerSuite``).

Only lines that mention a streaming or application event are JSON-parsed (a substring test
first), which is what makes reading large logs fast.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from streamwatch.errors import one_line
from streamwatch.events.codecs import UnsupportedCodec, codec_for, open_decompressed
from streamwatch.events.jsonl import RecordingHeader
from streamwatch.events.redact import redact_pairs
from streamwatch.events.source import EventSourceError, ReadReport, tail_lines
from streamwatch.model.events import UnsupportedEvent, event_from_json

LISTENER_PREFIX = "org.apache.spark.sql.streaming.StreamingQueryListener$"
_KINDS = {
    "QueryStartedEvent": "started",
    "QueryProgressEvent": "progress",
    "QueryIdleEvent": "idle",
    "QueryTerminatedEvent": "terminated",
}
_LEGACY = {"QueryStarted", "QueryProgress", "QueryTerminated"}
_APP_EVENTS = (b'"SparkListenerApplicationStart"', b'"SparkListenerLogStart"', b'"SparkListenerEnvironmentUpdate"')
_ROLLING_FILE = re.compile(r"^events_(\d+)_")


def event_log_files(path: Path) -> list[Path]:
    """The files of the event log at ``path`` in reading order. Raises
    :class:`EventSourceError` for an empty directory or one with several applications."""
    if not path.is_dir():
        return [path]
    rolling = sorted(
        (int(m.group(1)), p) for p in path.iterdir() if (m := _ROLLING_FILE.match(p.name)) and p.is_file()
    )
    if rolling:
        return [p for _, p in rolling]
    apps = sorted(p for p in path.iterdir() if not p.name.startswith(".") and not p.name.endswith(".crc"))
    if len(apps) == 1:
        return event_log_files(apps[0])
    if not apps:
        raise EventSourceError(f"{path}: empty directory, no event log in it")
    names = ", ".join(p.name for p in apps[:5])
    raise EventSourceError(f"{path}: holds {len(apps)} applications' event logs ({names}…); pass one of them")


def _loads(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            return json.loads(raw)  # Jackson may write NaN/Infinity tokens
        except (RecursionError, UnicodeDecodeError) as e:  # deeper than orjson's limit / not UTF-8
            raise ValueError(f"not JSON ({type(e).__name__})") from None


def parse_line(raw: bytes, line_no: int = 0) -> Any:
    """The model object for one event-log line: an ``Event``, an :class:`UnsupportedEvent`,
    or None for lines that are not streaming listener events. Raises ``ValueError`` for a
    streaming event line that is not valid JSON or lacks its ids."""
    if b"StreamingQueryListener$" not in raw:
        return None
    d = _loads(raw)
    cls = str(d.get("Event", "")) if isinstance(d, dict) else ""
    if not cls.startswith(LISTENER_PREFIX):
        return None
    short = cls[len(LISTENER_PREFIX):]
    kind = _KINDS.get(short)
    if kind is None:
        reason = ("Spark 2.0.x listener event (renamed in Spark 2.1; Spark's ReplayListenerBus skips it too)"
                  if short in _LEGACY else "unknown streaming listener event")
        return UnsupportedEvent(cls, reason, line_no)
    body = d.get("progress") if kind == "progress" else d
    if not isinstance(body, dict):
        raise ValueError(f"{short} without its fields")
    try:
        return event_from_json(kind, body)
    except KeyError as e:
        raise ValueError(f"{short} without {e}") from None
    except (TypeError, AttributeError, OverflowError) as e:  # a field of the wrong JSON type
        raise ValueError(f"{short} with a malformed field ({e})") from None


class _AppFacts:
    """Builds the :class:`RecordingHeader` of an event log from its application events."""

    def __init__(self, report: ReadReport) -> None:
        self.report = report
        self.app: dict[str, Any] = {}
        self.conf: dict[str, Any] = {}
        self.time_ms = 0

    def see(self, raw: bytes) -> None:
        try:
            self._see(raw)
        except (ValueError, TypeError, AttributeError, OverflowError):  # a malformed application event
            return

    def _see(self, raw: bytes) -> None:
        d = _loads(raw)
        if not isinstance(d, dict):
            return
        ev = d.get("Event")
        if ev == "SparkListenerLogStart":
            self.app["sparkVersion"] = d.get("Spark Version")
        elif ev == "SparkListenerApplicationStart":
            self.app.update(appName=d.get("App Name"), appId=d.get("App ID"))
            self.time_ms = int(d.get("Timestamp") or 0)
        elif ev == "SparkListenerEnvironmentUpdate":
            props = redact_pairs(d.get("Spark Properties") or {})
            self.conf = dict(props) if isinstance(props, dict) else {k: v for k, v in props}
            self.app.setdefault("master", self.conf.get("spark.master"))
        self.report.header = RecordingHeader(self.time_ms, "eventlog", dict(self.app), self.conf)


def _lines_of(files: list[Path], report: ReadReport) -> Iterator[tuple[str, int, bytes]]:
    for f in files:
        try:
            with open_decompressed(f) as fh:
                n = 0
                try:
                    for raw in fh:
                        n += 1
                        yield f.name, n, raw
                except Exception as e:  # noqa: BLE001 - truncated/corrupt stream: EOFError, zlib.error, LZ4BlockError, ZstdError…
                    if not str(e).startswith("I/O operation on closed file"):
                        report.problem(f"{f.name}: stopped at a truncated or corrupt block ({e})")
        except UnsupportedCodec as e:
            raise EventSourceError(str(e)) from None
        except FileNotFoundError:
            raise EventSourceError(f"{f}: no such file") from None
        except PermissionError as e:
            raise EventSourceError(f"{f}: {e.strerror}") from None


def read_event_log(path: str | Path, report: ReadReport | None = None, *, follow: bool = False,
                   stop: threading.Event | None = None, poll_s: float = 0.2) -> Iterator[Any]:
    """Model objects from the Spark event log at ``path`` (file or rolling directory), in
    order. Application facts (Spark version, app id/name, redacted Spark properties) go to
    ``report.header``. ``follow`` keeps reading a plain, uncompressed event-log file as Spark
    appends to it. Raises :class:`EventSourceError` for unreadable input; bad lines are
    counted in ``report``, never raised."""
    path = Path(path)
    report = report if report is not None else ReadReport()
    files = event_log_files(path)
    facts = _AppFacts(report)
    if follow and len(files) == 1 and codec_for(files[0]) is None:
        lines: Iterator[tuple[str, int, bytes]] = (
            (files[0].name, n, raw) for n, raw in enumerate(tail_lines(files[0], stop or threading.Event(), poll_s), 1)
        )
    else:
        lines = _lines_of(files, report)
    for name, n, raw in lines:
        if b"StreamingQueryListener$" not in raw:
            if b'"SparkListener' in raw[:40] and any(a in raw[:60] for a in _APP_EVENTS):
                facts.see(raw)
            continue
        try:
            obj = parse_line(raw, n)
        except ValueError as e:
            report.problem(f"{name}:{n}: {one_line(e)}")
            continue
        if obj is None:
            continue
        if isinstance(obj, UnsupportedEvent):
            report.unsupported += 1
        yield obj


