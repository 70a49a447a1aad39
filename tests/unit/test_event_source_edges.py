"""Following a recording across rotations (streamwatch.events.source.tail_lines, ``tail -F``)
at the exact moments the mutation run of bench/MUTATION.md found unpinned, and what a
recording's bad, unknown and unsupported lines count.

A writer acting "while the reader waits" or "between the reader's listing and its open" is
staged without threads or sleeps: the reader's own hooks run the writer's next step — the
``stop`` event's ``wait`` (called exactly when the reader has reached the end of the file
and polls) and the ``segments`` listing callback. Files, renames and inodes are real."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader, encode, rotated_segments
from streamwatch.events.reader import ReadReport, read_recording
from streamwatch.events.source import tail_lines
from tests.unit.test_jsonl import _progress

HEADER = RecordingHeader(1_700_000_000_000, app={"appId": "tail-1"})
H = encode(HEADER)
A, A2, B, C = (encode(_progress(i)) for i in (1, 2, 3, 4))


class WriterAtEachPoll(threading.Event):
    """A real stop event whose ``wait`` (the reader at end of file, polling) first runs the
    writer's next step; once every step has run, it is set, and the follow ends."""

    def __init__(self, *steps: Callable[[], None]) -> None:
        super().__init__()
        self.steps = list(steps)
        self.polls = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.polls += 1
        if self.steps:
            self.steps.pop(0)()
            return False
        self.set()
        return True


class Listing:
    """``rotated_segments(path)`` as the reader's ``segments`` callback; ``after[n]`` runs
    once the n-th listing (0-based) is taken and before it is returned — a writer acting
    between the reader's listing and what it does next."""

    def __init__(self, path: Path, after: dict[int, Callable[[], None]] | None = None) -> None:
        self.path, self.after, self.calls = path, after or {}, 0

    def __call__(self) -> list[Path]:
        found = rotated_segments(self.path)
        step = self.after.get(self.calls)
        self.calls += 1
        if step:
            step()
        return found


def _rotate(path: Path, n: int, new: bytes | None) -> None:
    """What a rotating writer does: ``path`` → ``path.n``, then a new ``path`` with ``new``."""
    os.replace(path, path.with_name(f"{path.name}.{n}"))
    if new is not None:
        path.write_bytes(new)


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as fh:
        fh.write(data)


def test_a_rotation_seen_at_end_of_file_reopens_the_new_file_once(tmp_path):
    path = tmp_path / "rec.jsonl"
    path.write_bytes(H + A)
    stop = WriterAtEachPoll(lambda: _rotate(path, 1, H + B))
    got = list(tail_lines(path, stop, 0, Listing(path)))
    assert got == [H, A, H, B]  # the new file read; the rotated one (seen) not read again


def test_lines_written_to_the_renamed_file_before_the_new_one_exists_are_kept(tmp_path):
    """logrotate's "create" mode: the writer keeps writing to the renamed file until it
    reopens ``path``; while ``path`` is missing the reader stays on the renamed file."""
    path = tmp_path / "rec.jsonl"
    path.write_bytes(H + A)
    stop = WriterAtEachPoll(
        lambda: _rotate(path, 1, None),  # renamed; no new file yet
        lambda: _append(path.with_name("rec.jsonl.1"), A2),  # the writer's last line, to the old file
        lambda: path.write_bytes(H + B),  # then the new file
    )
    assert list(tail_lines(path, stop, 0, Listing(path))) == [H, A, A2, H, B]


def test_a_rotation_between_listing_and_open_reads_the_rotated_file_first(tmp_path):
    path = tmp_path / "rec.jsonl"
    path.write_bytes(H + A)
    # the writer rotates right after the reader's first listing, before it opens ``path``
    listing = Listing(path, {0: lambda: _rotate(path, 1, H + B)})
    got = list(tail_lines(path, WriterAtEachPoll(), 0, listing))
    assert got == [H, A, H, B]


def test_two_rotations_and_a_deleted_segment_between_listing_and_open(tmp_path):
    path = tmp_path / "rec.jsonl"
    path.write_bytes(H + A)

    def twice() -> None:  # the writer rotates twice: rec.jsonl.1 (A), rec.jsonl.2 (B), rec.jsonl (C)
        _rotate(path, 1, H + B)
        _rotate(path, 2, H + C)

    def keep_one() -> None:  # and its keep=1 removes rec.jsonl.1 just after the reader listed it
        path.with_name("rec.jsonl.1").unlink()

    listing = Listing(path, {0: twice, 1: keep_one})
    got = list(tail_lines(path, WriterAtEachPoll(), 0, listing))
    assert got == [H, B, H, C]  # A was deleted before it could be read; B is not skipped


def test_two_rotations_while_the_reader_waits(tmp_path):
    path = tmp_path / "rec.jsonl"
    path.write_bytes(H + A)

    def twice() -> None:
        _rotate(path, 1, H + B)
        _rotate(path, 2, H + C)

    got = list(tail_lines(path, WriterAtEachPoll(twice), 0, Listing(path)))
    assert got == [H, A, H, B, H, C]  # rec.jsonl.1 (read already) skipped, rec.jsonl.2 read


def test_stop_before_the_file_exists_ends_cleanly(tmp_path):
    stop = WriterAtEachPoll()
    assert list(tail_lines(tmp_path / "never.jsonl", stop, 0, Listing(tmp_path / "never.jsonl"))) == []
    assert stop.polls == 1


def test_follow_through_read_recording_with_a_real_rotating_writer(tmp_path):
    path = tmp_path / "rec.jsonl"
    rec = JsonlRecorder(path, header=HEADER, max_bytes=len(H) + 1)  # rotates at each event
    rec.write(_progress(1))
    stop = WriterAtEachPoll(lambda: rec.write(_progress(2)), lambda: rec.write(_progress(3)), rec.close)
    report = ReadReport()
    got = [e.batch_id for e in read_recording(path, report, follow=True, stop=stop, poll_s=0)]
    assert got == [1, 2, 3] and rec.rotations >= 2
    assert (report.bad_lines, report.header) == (0, HEADER)


# -- what a recording's lines count ---------------------------------------------------------

def test_unknown_and_unsupported_lines_are_counted_each(tmp_path):
    path = tmp_path / "rec.jsonl"
    unsupported = b'{"v":1,"kind":"unsupported","event":{"eventClass":"org.x.E","reason":"new","line":3}}\n'
    newer = b'{"v":1,"kind":"something-new","event":{}}\n'
    path.write_bytes(H + A + unsupported + newer + B + unsupported + newer + newer + C)
    report = ReadReport()
    objs = list(read_recording(path, report))
    assert [type(o).__name__ for o in objs] == ["QueryProgress", "UnsupportedEvent", "QueryProgress",
                                                "UnsupportedEvent", "QueryProgress"]
    assert (report.unsupported, report.unknown, report.bad_lines) == (2, 3, 0)


def test_a_bad_line_problem_is_cut_at_1000_characters(tmp_path):
    path = tmp_path / "rec.jsonl"
    version = "9" * 2000
    path.write_bytes(H + b'{"v":"' + version.encode() + b'","kind":"progress","event":{}}\n' + A)
    report = ReadReport()
    assert [e.batch_id for e in read_recording(path, report)] == [1]
    message = f"unsupported recording schema version {version!r} (this streamwatch reads"
    assert report.bad_lines == 1
    assert report.problems == ["rec.jsonl:2: " + message[:1000]]
