"""What every event source shares (recordings, Spark event logs, object stores): the error
and the read report, decoding recording lines, and following a growing file (``tail -F``).
The bottom of :mod:`streamwatch.events`' readers: it imports none of them."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from streamwatch.errors import ExitCode, StreamwatchError, one_line
from streamwatch.events.jsonl import RecordingHeader, decode
from streamwatch.model.events import Event, ListenerStats, UnsupportedEvent

#: What a recording line holds once decoded (the header is kept in the report, not yielded).
Recorded = Event | ListenerStats | UnsupportedEvent


class EventSourceError(StreamwatchError):
    """A path that is neither a recording nor a Spark event log, or cannot be read. The
    message is one line meant for the user."""

    exit_code = ExitCode.UNREADABLE


@dataclass
class ReadReport:
    """What reading skipped: ``bad_lines`` (invalid JSON / malformed events, with the first
    few ``problems`` as text), ``unknown`` lines of kinds this version does not know, and the
    ``header`` of the recording (None for an event log without one)."""

    header: RecordingHeader | None = None
    bad_lines: int = 0
    unknown: int = 0
    unsupported: int = 0
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < 5:
            self.problems.append(text)


def recording_lines(fh: IO[bytes], report: ReadReport, where: str) -> Iterator[Recorded]:
    """Model objects of the complete lines of a recording file ``fh`` (``where`` names it in
    problems); a truncated last line and bad lines are counted in ``report``."""
    for n, raw in enumerate(fh, 1):
        if not raw.strip():
            continue
        if not raw.endswith(b"\n"):  # a line still being written; a finished file ends in \n
            report.problem(f"{where}:{n}: truncated last line")
            continue
        yield from decoded_line(raw, report, f"{where}:{n}")


def decoded_line(raw: bytes, report: ReadReport, where: str) -> Iterator[Recorded]:
    """The model object of one recording line (none for the header, unknown or bad lines,
    which are counted in ``report``)."""
    try:
        obj = decode(raw)
    except ValueError as e:
        report.problem(f"{where}: {one_line(e, 1000)}")
        return
    if obj is None:
        report.unknown += 1
    elif isinstance(obj, RecordingHeader):
        if report.header is None:
            report.header = obj
    else:
        if isinstance(obj, UnsupportedEvent):
            report.unsupported += 1
        yield obj


def tail_lines(path: Path, stop: threading.Event, poll_s: float = 0.2,
               segments: Callable[[], list[Path]] | None = None) -> Iterator[bytes]:
    """Complete lines (ending in ``\\n``) of ``path`` from its start, then as they are
    appended, until ``stop`` is set — like ``tail -F``: before ``path`` exists, and across
    rotations. ``segments()`` lists rotated files oldest first; each one not read yet is read
    in full before ``path`` is (re)opened, so a writer that rotates faster than we poll loses
    nothing (files are told apart by inode)."""
    fh: IO[bytes] | None = None
    seen: set[int] = set()
    buf = b""
    try:
        while not stop.is_set():
            if fh is None:
                for seg in segments() if segments else ():
                    try:
                        with open(seg, "rb") as sfh:
                            ino = os.fstat(sfh.fileno()).st_ino
                            if ino in seen:
                                continue
                            seen.add(ino)
                            yield from (raw for raw in sfh if raw.strip() and raw.endswith(b"\n"))
                    except FileNotFoundError:
                        continue
                try:
                    fh = open(path, "rb")  # noqa: SIM115 - followed across polls, reopened on rotation
                except FileNotFoundError:
                    stop.wait(poll_s)
                    continue
                buf = b""
                if segments and _unseen_segment(segments(), seen, os.fstat(fh.fileno()).st_ino):
                    fh.close()  # rotated between our listing and the open: read that segment first
                    fh = None
                    continue
            chunk = fh.read(1 << 16)
            if not chunk:
                try:  # at EOF: has the file been rotated away (a new inode at ``path``)?
                    rotated = os.stat(path).st_ino != os.fstat(fh.fileno()).st_ino
                except FileNotFoundError:
                    rotated = False  # renamed, the new one not created yet
                if not rotated:
                    stop.wait(poll_s)
                    continue
                # what was written between our last read and the rotation is read like any
                # chunk (it may finish a line begun in ``buf``); the file is left only once a
                # read after the rotation finds nothing more
                chunk = fh.read()
                if not chunk:
                    seen.add(os.fstat(fh.fileno()).st_ino)
                    fh.close()
                    fh = None
                    continue
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                if raw.strip():
                    yield raw + b"\n"
    finally:
        if fh is not None:
            fh.close()


def _unseen_segment(segs: list[Path], seen: set[int], active: int) -> bool:
    for seg in segs:
        try:
            ino = os.stat(seg).st_ino
        except FileNotFoundError:
            continue
        if ino not in seen and ino != active:
            return True
    return False
