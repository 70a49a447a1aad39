"""Read streamwatch recordings (JSONL, rotated segments, followed while written) and tell
them apart from Spark event logs.

:func:`read_events` is the one entry point front-ends use: it yields model objects from a
recording or from a Spark event log (:mod:`streamwatch.events.eventlog`) alike.
"""

from __future__ import annotations

import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from streamwatch.events.eventlog import read_event_log
from streamwatch.events.jsonl import rotated_segments
from streamwatch.events.remote import read_remote_events
from streamwatch.events.segments import is_url, local_path
from streamwatch.events.source import EventSourceError, ReadReport, decoded_line, recording_lines, tail_lines

__all__ = ["DETECT_LINES", "EventSourceError", "ReadReport", "detect_format", "read_events", "read_recording"]


#: Lines :func:`detect_format` looks at for one it recognises.
DETECT_LINES = 50


def detect_format(path: Path) -> str:
    """``"recording"`` or ``"eventlog"`` for ``path``. A directory is an event log (a rolling
    ``eventlog_v2_*`` folder); a compressed file (``.gz``/``.zstd``/``.zst``/``.lz4``/
    ``.snappy``/``.lzf``) is an event log; otherwise the first recognisable line among the first
    :data:`DETECT_LINES` decides (``Event`` key: Spark's ``JsonProtocol``; ``kind``: a
    recording), so a corrupt first line does not hide the rest. Raises
    :class:`EventSourceError` (also for a FIFO or device, which are never opened blocking)."""
    if not path.exists():
        raise EventSourceError(f"{path}: no such file or directory")
    if path.is_dir():
        return "eventlog"
    from streamwatch.events.codecs import codec_for

    if codec_for(path) is not None:
        return "eventlog"
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block open() for ever
            raise EventSourceError(f"{path}: not a regular file")
        first = None
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh):  # the first recognisable line decides; garbage is skipped
                line = raw.strip()
                if not line:
                    continue
                if n >= DETECT_LINES:
                    break
                first = line if first is None else first
                try:
                    d = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(d, dict) and "Event" in d:
                    return "eventlog"
                if isinstance(d, dict) and "kind" in d:
                    return "recording"
        if first is not None:  # nothing parses (e.g. one line, still being written): guess
            if first.startswith(b'{"Event"') or b'"Event":' in first[:200]:
                return "eventlog"
            if b'"kind"' in first:
                return "recording"
    except OSError as e:
        raise EventSourceError(f"{path}: {e.strerror or e}") from None
    if path.stat().st_size == 0:
        return "recording"  # an empty file being written: follow it as a recording
    raise EventSourceError(f"{path}: neither a streamwatch recording nor a Spark event log")


def read_recording(path: str | Path, report: ReadReport | None = None, *, follow: bool = False,
                   stop: threading.Event | None = None, poll_s: float = 0.2) -> Iterator[Any]:
    """Model objects from the recording at ``path`` in write order: rotated segments
    (``path.1`` … oldest first), then ``path`` itself. Headers go to ``report.header``.

    With ``follow``, keeps reading ``path`` as another process appends to it (and across its
    rotations, like ``tail -F``) until ``stop`` is set. Raises :class:`EventSourceError` when
    ``path`` cannot be opened."""
    path = Path(path)
    report = report if report is not None else ReadReport()
    if follow:
        for raw in tail_lines(path, stop or threading.Event(), poll_s, lambda: rotated_segments(path)):
            yield from decoded_line(raw, report, path.name)
        return
    segments_read = 0
    for seg in rotated_segments(path):
        segments_read += 1
        try:
            with open(seg, "rb") as fh:
                yield from recording_lines(fh, report, seg.name)
        except FileNotFoundError:  # removed by keep= while we read
            continue
    if not follow:
        try:
            fh = open(path, "rb")  # noqa: SIM115 - only the open may say "missing"; `with fh` below closes it
        except FileNotFoundError:
            if segments_read:  # segments copied from an object store: no active file
                return
            raise EventSourceError(f"{path}: no such file") from None
        with fh:
            yield from recording_lines(fh, report, path.name)
        return


def read_events(path: str | Path, report: ReadReport | None = None, *, follow: bool = False,
                stop: threading.Event | None = None, poll_s: float | None = None) -> Iterator[Any]:
    """Model objects from a recording or a Spark event log (see :func:`detect_format`).

    Event logs yield ``Event``s and ``UnsupportedEvent``s; recordings also ``ListenerStats``.
    ``follow`` is supported for recordings and plain (uncompressed) event-log files. ``path``
    may be an fsspec URL (``s3://…``): recordings stored as segment objects are read (and
    followed) by :mod:`streamwatch.events.remote`. ``poll_s``: seconds between looks for new
    data when following (default 0.2 s locally, 1 s on an object store). Raises :class:`EventSourceError` for an
    unreadable or unrecognised ``path``."""
    report = report if report is not None else ReadReport()
    if is_url(path):
        return read_remote_events(str(path), report, follow=follow, stop=stop, poll_s=poll_s)
    path = local_path(path)
    poll_s = 0.2 if poll_s is None else poll_s
    if rotated_segments(path) or (not path.exists() and follow):  # rotated: a recording
        return read_recording(path, report, follow=follow, stop=stop, poll_s=poll_s)
    if follow and path.is_file() and not _has_complete_line(path):  # its writer is mid-first-line
        return _after_first_line(path, report, stop or threading.Event(), poll_s)
    try:
        fmt = detect_format(path)
    except EventSourceError:
        if follow and (rotated_segments(path) or not path.exists()):  # rotated away as we looked
            return read_recording(path, report, follow=True, stop=stop, poll_s=poll_s)
        raise
    if fmt == "recording":
        return read_recording(path, report, follow=follow, stop=stop, poll_s=poll_s)
    return read_event_log(path, report, follow=follow, stop=stop, poll_s=poll_s)


def _has_complete_line(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return True  # let detect_format report it
    return b"\n" in head or len(head) == 1 << 16


def _after_first_line(path: Path, report: ReadReport, stop: threading.Event, poll_s: float) -> Iterator[Any]:
    """Follow ``path`` once its first line is complete (an empty or half-written first line
    cannot tell a recording from an event log)."""
    while not stop.is_set() and path.is_file() and not _has_complete_line(path):
        stop.wait(poll_s)
    if not stop.is_set():
        yield from read_events(path, report, follow=True, stop=stop, poll_s=poll_s)
