"""Recordings on object stores (``s3://…``, ``gs://…``, ``memory://…`` — any fsspec URL):
immutable segment objects instead of one growing file.

Object stores cannot append, and an object only becomes visible once it is written in full.
So :class:`SegmentRecorder` keeps the current segment in memory and writes it as one object
(``<path>.1``, ``<path>.2``, … — the same names as a rotated local recording, 1 the oldest)
when it reaches ``max_bytes``, when it is ``segment_seconds`` old, on ``flush()`` and on
``close()``. Every segment starts with its own header line, so each one is readable alone.
Readers (:mod:`streamwatch.events.remote`) read the segments in number order and, when
following, pick up new ones as they appear.

:func:`open_recorder` chooses: a local path (or ``file://``) gets the appending
:class:`~streamwatch.events.jsonl.JsonlRecorder`, any other URL a :class:`SegmentRecorder`.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from streamwatch.checkpoint.fs import StorageError
from streamwatch.checkpoint.fs import open_fs as checkpoint_open_fs
from streamwatch.events.jsonl import JsonlRecorder, Recorder, RecordingHeader, encode

DEFAULT_SEGMENT_BYTES = 8_000_000
DEFAULT_SEGMENT_SECONDS = 5.0
# stores whose first path component is a bucket/container that must exist already
_BUCKET_STORES = {"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl", "oss", "r2", "b2"}


def is_url(path: object) -> bool:
    """True for an fsspec URL other than ``file://`` (``s3://b/k``, ``memory://x``…)."""
    return isinstance(path, str) and "://" in path and not path.startswith("file://")


def local_path(path: str | Path) -> Path:
    """``path`` as a local :class:`~pathlib.Path` (``file://`` prefix removed)."""
    if isinstance(path, str) and path.startswith("file://"):
        return Path(path[len("file://"):] or "/")
    return Path(path)


def open_fs(url: str, storage_options: Mapping[str, Any] | None = None) -> tuple[Any, str]:
    """(fsspec filesystem, path inside it) for ``url``, opened by the checkpoint reader's
    :func:`streamwatch.checkpoint.fs.open_fs` so recordings and checkpoints on ``s3://``,
    ``abfss://``/``az://`` and ``gs://`` share one configuration (credentials, emulators,
    uncached Azure/GCS listings). Raises ``OSError`` (``cannot open URL: why``) when the
    library for the URL's scheme is not installed (naming the ``pip install`` to run), fsspec
    has no implementation for it, or the URL is malformed."""
    try:
        return checkpoint_open_fs(url, dict(storage_options or {}))
    except StorageError as e:
        why = str(e).removeprefix(f"{url}: ")
        if why.startswith("cannot open (") and why.endswith(")"):
            why = why[len("cannot open ("):-1]
        raise OSError(f"cannot open {url}: {why}") from None


def segment_number(name: str, base: str) -> int | None:
    """N for a segment object named ``<base>.N``; None for anything else."""
    if name.startswith(base + "."):
        rest = name[len(base) + 1:]
        if re.fullmatch(r"\d+", rest):
            return int(rest)
    return None


def list_segments(fs: Any, path: str) -> list[tuple[int, str]]:
    """(N, object path) of every ``<path>.N`` segment, oldest first, listing afresh (fsspec
    caches listings). A missing folder or bucket gives []."""
    parent, base = posixpath.split(path.rstrip("/"))
    with contextlib.suppress(Exception):  # not every filesystem caches
        fs.invalidate_cache(parent)
    try:
        names = fs.ls(parent, detail=False)
    except (FileNotFoundError, NotADirectoryError):
        return []
    found = []
    for full in names:
        n = segment_number(posixpath.basename(str(full).rstrip("/")), base)
        if n is not None:
            found.append((n, str(full).rstrip("/")))
    return sorted(found)


class SegmentRecorder(Recorder):
    """Writes model objects as JSONL segment objects ``<url>.1``, ``<url>.2`` … (see the module
    docstring); the same interface as :class:`~streamwatch.events.jsonl.JsonlRecorder`
    (``write``/``flush``/``close``/``written``/``rotations``).

    ``max_bytes``: a segment is written once it holds this many bytes (default 8 MB);
    ``segment_seconds``: … or once its first event is this old (default 5 s, checked by a
    background thread — the delay a follower sees); ``keep``: segments kept (None: all; older
    ones are deleted). Numbering continues after the segments already there, so a restarted
    job appends to the same recording. Raises ``OSError`` when the bucket (or the folder of a
    non-bucket store) does not exist or cannot be listed. A failed upload raises ``OSError``
    from ``write``/``flush``/``close`` and is retried at the next one: events are kept, in
    order, until they are stored."""

    def __init__(self, url: str, *, header: RecordingHeader | None = None,
                 max_bytes: int | None = None, segment_seconds: float | None = None,
                 keep: int | None = None, storage_options: Mapping[str, Any] | None = None) -> None:
        if max_bytes is not None and max_bytes < 1:
            raise ValueError("max_bytes must be >= 1")
        if segment_seconds is not None and segment_seconds <= 0:
            raise ValueError("segment_seconds must be > 0")
        if keep is not None and keep < 1:
            raise ValueError("keep must be >= 1")
        self.path = url
        self.header = header or RecordingHeader(time_ms=int(time.time() * 1000))
        self.max_bytes = max_bytes or DEFAULT_SEGMENT_BYTES
        self.segment_seconds = segment_seconds or DEFAULT_SEGMENT_SECONDS
        self.keep = keep
        self.fs, self._inner = open_fs(url, storage_options)
        self._check_location(url)
        existing = list_segments(self.fs, self._inner)
        self._next = (existing[-1][0] + 1) if existing else 1
        self.written = 0
        self.rotations = 0  # segments stored
        self.upload_errors = 0
        self._lock = threading.Lock()
        self._pending: list[tuple[str, bytes]] = []  # finished segments not stored yet
        self._buf = bytearray()
        self._events = 0
        self._opened = 0.0
        self._closed = False
        self._start_segment()
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._tick, name="streamwatch-segments", daemon=True)
        self._timer.start()

    def _check_location(self, url: str) -> None:
        scheme = urlsplit(url).scheme.lower()
        parent = posixpath.dirname(self._inner.rstrip("/"))
        try:
            if scheme in _BUCKET_STORES:
                bucket = self._inner.lstrip("/").split("/", 1)[0]
                if not bucket or not self.fs.exists(bucket):
                    raise FileNotFoundError(f"bucket {bucket!r} does not exist")
            elif parent:
                self.fs.makedirs(parent, exist_ok=True)
        except OSError as e:
            raise OSError(f"cannot write {url}: {e}") from None
        except Exception as e:  # noqa: BLE001 - a store client's own error types
            raise OSError(f"cannot write {url}: {type(e).__name__}: {e}") from None

    def _start_segment(self) -> None:
        self._buf = bytearray(encode(self.header))
        self._events = 0
        self._opened = time.monotonic()

    def _append(self, line: bytes) -> None:
        """Add the line to the current segment; store the segment once it holds ``max_bytes``.
        Raises ``OSError`` when storing a full segment fails (the segment is kept and
        retried)."""
        if self._events == 0:
            self._opened = time.monotonic()
        self._buf += line
        self._events += 1
        self.written += 1
        if len(self._buf) >= self.max_bytes:
            self._seal()
            self._store()

    def flush(self) -> None:
        """Store the current segment now if it holds any event (raises ``OSError`` on failure)."""
        with self._lock:
            if self._closed:
                return
            if self._events:
                self._seal()
            self._store()

    def close(self) -> None:
        """Store the last segment (also when the recording holds no event at all, so its header
        exists) and stop the timer. Idempotent; raises ``OSError`` when segments could not be
        stored (they are lost then)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._events or (self.rotations == 0 and not self._pending):
                self._seal()
        self._stop.set()
        if self._timer is not threading.current_thread():
            self._timer.join(5)
        with self._lock:
            self._store()

    def _seal(self) -> None:
        self._pending.append((f"{self._inner}.{self._next}", bytes(self._buf)))
        self._next += 1
        self._start_segment()

    def _store(self) -> None:
        while self._pending:
            name, data = self._pending[0]
            try:
                self.fs.pipe_file(name, data)
            except Exception as e:  # noqa: BLE001 - s3fs/botocore raise various types
                self.upload_errors += 1
                raise OSError(f"cannot write {name}: {e}") from None
            self._pending.pop(0)
            self.rotations += 1
        if self.keep is not None:
            segs = list_segments(self.fs, self._inner)
            for _, old in segs[: max(0, len(segs) - self.keep)]:
                with contextlib.suppress(Exception):  # already gone, or not allowed: keep going
                    self.fs.rm_file(old)

    def _tick(self) -> None:
        step = min(1.0, self.segment_seconds / 4)
        while not self._stop.wait(step):
            with self._lock:
                if self._closed:
                    return
                due = self._events and time.monotonic() - self._opened >= self.segment_seconds
                if not due and not self._pending:
                    continue
                if due:
                    self._seal()
                with contextlib.suppress(OSError):  # counted in upload_errors; retried at the next tick
                    self._store()


def open_recorder(path: str | Path | None, *, header: RecordingHeader | None = None, flush_every: int = 1,
                  max_bytes: int | None = None, keep: int | None = None, segment_seconds: float | None = None,
                  storage_options: Mapping[str, Any] | None = None) -> JsonlRecorder | SegmentRecorder:
    """The recorder for ``path``: ``"-"``/None → stdout, a local path or ``file://`` → an
    appending :class:`JsonlRecorder` (rotating at ``max_bytes`` into ``FILE.1`` …), any other
    fsspec URL → a :class:`SegmentRecorder` (``flush_every`` does not apply; a segment is
    stored every ``segment_seconds`` or ``max_bytes``). Raises ``OSError`` when the target
    cannot be written and ``ValueError`` for bad settings."""
    if is_url(path):
        return SegmentRecorder(str(path), header=header, max_bytes=max_bytes, segment_seconds=segment_seconds,
                               keep=keep, storage_options=storage_options)
    if path not in (None, "-"):
        path = local_path(path)
    return JsonlRecorder(path, header=header, flush_every=flush_every, max_bytes=max_bytes, keep=keep)


__all__ = ["DEFAULT_SEGMENT_BYTES", "DEFAULT_SEGMENT_SECONDS", "SegmentRecorder", "is_url", "list_segments",
           "local_path", "open_fs", "open_recorder", "segment_number"]
