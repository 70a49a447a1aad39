"""Read recordings and Spark event logs that live in object storage (any fsspec URL:
``s3://bucket/jobs/events.jsonl``, ``gs://…``, ``memory://…``).

A recording there is a series of segment objects ``<url>.1``, ``<url>.2`` … written by
:class:`~streamwatch.events.segments.SegmentRecorder` (plus, possibly, a whole recording
uploaded as ``<url>`` itself). :func:`read_remote_recording` reads them in number order;
with ``follow`` it polls the listing and reads each new segment as it appears — objects are
written whole, so a segment is never seen half-written.

A Spark event log at a URL (a file, or a rolling ``eventlog_v2_*`` folder) is copied to a
temporary folder and read by :mod:`streamwatch.events.eventlog` (no follow).
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import shutil
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from streamwatch.events.eventlog import read_event_log
from streamwatch.events.segments import list_segments, open_fs
from streamwatch.events.source import EventSourceError, ReadReport, recording_lines

REMOTE_POLL_S = 1.0  # listing an object store costs a request: poll once a second by default


def _fs(url: str, storage_options: Mapping[str, Any] | None) -> tuple[Any, str]:
    try:
        return open_fs(url, storage_options)
    except OSError as e:
        raise EventSourceError(str(e)) from None


def _cat(fs: Any, path: str) -> bytes | None:
    try:
        data: bytes = fs.cat_file(path)
        return data
    except FileNotFoundError:
        return None  # removed (keep=) between listing and reading
    except OSError as e:
        raise EventSourceError(f"{path}: {e.strerror or e}") from None


def _info(fs: Any, path: str) -> dict[str, Any] | None:
    with contextlib.suppress(Exception):  # not every filesystem caches listings
        fs.invalidate_cache(posixpath.dirname(path))
    try:
        info: dict[str, Any] = fs.info(path)
        return info
    except FileNotFoundError:
        return None
    except OSError as e:
        raise EventSourceError(f"{path}: {e.strerror or e}") from None


def detect_remote_format(url: str, storage_options: Mapping[str, Any] | None = None) -> str:
    """``"recording"`` (segments ``<url>.N`` or a JSONL object with ``kind`` lines) or
    ``"eventlog"`` (a folder, a compressed object, or lines with Spark's ``Event`` key).
    Raises :class:`EventSourceError` when nothing is there or it is neither."""
    fs, inner = _fs(url, storage_options)
    try:
        if list_segments(fs, inner):
            return "recording"
    except OSError as e:  # e.g. a folder name longer than the file system allows
        raise EventSourceError(f"{url}: {e.strerror or e}") from None
    info = _info(fs, inner)
    if info is None:
        raise EventSourceError(f"{url}: no such object (and no {posixpath.basename(inner)}.N segments)")
    if info.get("type") == "directory":
        return "eventlog"
    from streamwatch.events.codecs import codec_for

    if codec_for(Path(posixpath.basename(inner))) is not None:
        return "eventlog"
    try:
        with fs.open(inner, "rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        raise EventSourceError(f"{url}: {e.strerror or e}") from None
    first = next((ln.strip() for ln in head.splitlines() if ln.strip()), b"")
    if first.startswith(b'{"Event"') or b'"Event":' in first[:200]:
        return "eventlog"
    if b'"kind"' in first or not first:
        return "recording"
    raise EventSourceError(f"{url}: neither a streamwatch recording nor a Spark event log")


def read_remote_recording(url: str, report: ReadReport | None = None, *, follow: bool = False,
                          stop: threading.Event | None = None, poll_s: float = REMOTE_POLL_S,
                          storage_options: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """Model objects from the recording at ``url``: segments ``<url>.1`` … in number order,
    then the object ``<url>`` itself if there is one. Headers go to ``report.header``.

    With ``follow``, keeps listing every ``poll_s`` seconds and reads each new segment once,
    until ``stop`` is set (before any segment exists, too). Raises :class:`EventSourceError`
    when nothing is there (without ``follow``) or the store cannot be read."""
    report = report if report is not None else ReadReport()
    fs, inner = _fs(url, storage_options)
    stop = stop or threading.Event()
    seen: set[int] = set()
    whole_read = False
    while True:
        try:
            segments = list_segments(fs, inner)
        except OSError as e:
            raise EventSourceError(f"{url}: {e.strerror or e}") from None
        for n, seg in segments:
            if n in seen:
                continue
            seen.add(n)
            data = _cat(fs, seg)
            if data is not None:
                yield from recording_lines(io.BytesIO(data), report, posixpath.basename(seg))
            if stop.is_set():
                return
        if not whole_read:
            whole_read = True
            info = _info(fs, inner)
            if info is not None and info.get("type") != "directory":
                data = _cat(fs, inner)
                if data is not None:
                    yield from recording_lines(io.BytesIO(data), report, posixpath.basename(inner))
            elif not segments and not follow:
                raise EventSourceError(f"{url}: no such object (and no {posixpath.basename(inner)}.N segments)")
        if not follow or stop.wait(poll_s):
            return


def read_remote_event_log(url: str, report: ReadReport | None = None,
                          storage_options: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """Events of a Spark event log at ``url`` (a file or a rolling ``eventlog_v2_*`` folder),
    copied to a temporary folder first (removed afterwards). Raises
    :class:`EventSourceError` when it cannot be copied."""
    report = report if report is not None else ReadReport()
    fs, inner = _fs(url, storage_options)
    tmp = Path(tempfile.mkdtemp(prefix="streamwatch-eventlog-"))
    try:
        local = tmp / posixpath.basename(inner.rstrip("/"))
        try:
            info = fs.info(inner)
            if info.get("type") == "directory":
                local.mkdir()
                for name in fs.ls(inner, detail=False):
                    fs.get_file(name, str(local / posixpath.basename(str(name).rstrip("/"))))
            else:
                fs.get_file(inner, str(local))
        except OSError as e:
            raise EventSourceError(f"{url}: {e.strerror or e}") from None
        yield from read_event_log(local, report)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_remote_events(url: str, report: ReadReport | None = None, *, follow: bool = False,
                       stop: threading.Event | None = None, poll_s: float | None = None,
                       storage_options: Mapping[str, Any] | None = None) -> Iterator[Any]:
    """:func:`read_remote_recording` or :func:`read_remote_event_log`, by
    :func:`detect_remote_format`; a URL with nothing there yet is followed as a recording.
    ``follow`` is supported for recordings only (an event log is read once)."""
    report = report if report is not None else ReadReport()
    poll = REMOTE_POLL_S if poll_s is None else poll_s
    try:
        fmt = detect_remote_format(url, storage_options)
    except EventSourceError:
        if not follow:
            raise
        fmt = "recording"
    if fmt == "recording":
        return read_remote_recording(url, report, follow=follow, stop=stop, poll_s=poll,
                                     storage_options=storage_options)
    return read_remote_event_log(url, report, storage_options)


__all__ = ["REMOTE_POLL_S", "detect_remote_format", "read_remote_event_log", "read_remote_events",
           "read_remote_recording"]
