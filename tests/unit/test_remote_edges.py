"""Reading recordings and Spark event logs at a URL (streamwatch.events.remote) where the
mutation run of bench/MUTATION.md found behaviour no test pinned: following a recording
whose segments appear one by one (each read once, in number order, the whole object once),
the temporary copy of an event log removed after reading, a folder URL written with a
trailing slash, a first line whose ``"Event"`` key is not the first, ``storage_options``
reaching the store, and one clear error (the store's reason, not a traceback) for each way a
store can refuse. On fsspec's in-process ``memory://`` and ``dir://`` stores and local
``file://`` URLs, no server."""

from __future__ import annotations

import queue
import socket
import tempfile
import threading
import uuid
from pathlib import Path

import fsspec
import pytest

from streamwatch.events.reader import EventSourceError, ReadReport
from streamwatch.events.remote import (
    detect_remote_format,
    read_remote_event_log,
    read_remote_events,
    read_remote_recording,
)
from streamwatch.model.events import QueryStarted
from tests.unit.test_eventlog import DATA as EVENT_LOG
from tests.unit.test_eventlog import _check

RECORDING = (Path(__file__).resolve().parents[1] / "tui" / "data" / "flights_run.jsonl").read_bytes()
HEADER, BRONZE, SILVER, GOLD = RECORDING.splitlines(keepends=True)[:4]
MEM = fsspec.filesystem("memory")
WAIT_S = 60  # a bound on waiting for the reader thread (never reached when it works)
END = object()


@pytest.fixture
def folder():
    """A fresh memory:// folder (its path inside the store); removed afterwards."""
    path = f"/remote-edges-{uuid.uuid4().hex[:8]}"
    MEM.mkdir(path)
    yield path
    if MEM.exists(path):
        MEM.rm(path, recursive=True)


class Follower:
    """``read_remote_events(url, follow=True)`` on a thread; the query names it starts are
    taken one at a time with :meth:`next`."""

    def __init__(self, url: str, report: ReadReport, poll_s: float | None = 0.01) -> None:
        self.stop = threading.Event()
        self.q: queue.Queue = queue.Queue()

        def run() -> None:
            try:
                for obj in read_remote_events(url, report, follow=True, stop=self.stop, poll_s=poll_s):
                    if isinstance(obj, QueryStarted):
                        self.q.put(obj.name)
            finally:
                self.q.put(END)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def next(self) -> object:
        return self.q.get(timeout=WAIT_S)

    def finish(self) -> list[object]:
        """Stop; the thread must end; what it yielded after the last :meth:`next`."""
        self.stop.set()
        self.thread.join(WAIT_S)
        assert not self.thread.is_alive(), "the follow did not end when stop was set"
        rest = []
        while (item := self.q.get_nowait()) is not END:
            rest.append(item)
        return rest


def test_follow_reads_each_new_segment_once_in_number_order(folder):
    report = ReadReport()
    f = Follower(f"memory://{folder}/events.jsonl", report)  # nothing there yet: followed as a recording
    MEM.pipe(f"{folder}/events.jsonl.1", HEADER + BRONZE)
    assert f.next() == "flights_bronze"
    MEM.pipe(f"{folder}/events.jsonl.2", HEADER + SILVER)
    assert f.next() == "flights_silver"
    # segment 10 lists after 1 and 2 (which must be skipped, not re-read, and not end the listing)
    MEM.pipe(f"{folder}/events.jsonl.10", HEADER + GOLD)
    assert f.next() == "flights_gold"
    assert f.finish() == []
    assert report.header is not None and report.header.app.get("pipeline") == "flights"
    assert (report.bad_lines, report.unknown) == (0, 0)


def test_follow_reads_an_uploaded_whole_recording_once(folder):
    MEM.pipe(f"{folder}/events.jsonl", HEADER + BRONZE)  # a whole recording uploaded as one object
    f = Follower(f"memory://{folder}/events.jsonl", ReadReport())
    assert f.next() == "flights_bronze"
    MEM.pipe(f"{folder}/events.jsonl.1", HEADER + SILVER)
    assert f.next() == "flights_silver"
    MEM.pipe(f"{folder}/events.jsonl.2", HEADER + GOLD)
    assert f.next() == "flights_gold"  # not the whole object again
    assert f.finish() == []


def test_the_temporary_copy_of_an_event_log_is_removed(folder, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp puts the copy
    MEM.pipe(f"{folder}/app-1", EVENT_LOG)
    report = ReadReport()
    events = read_remote_event_log(f"memory://{folder}/app-1", report)
    first = next(events)
    (copy,) = tmp_path.iterdir()  # while reading: one folder holding the log
    assert copy.name.startswith("streamwatch-eventlog-") and (copy / "app-1").read_bytes() == EVENT_LOG
    _check([first, *events], report)
    assert list(tmp_path.iterdir()) == []  # read to the end: removed
    with pytest.raises(EventSourceError):
        list(read_remote_event_log(f"memory://{folder}/app-404"))
    assert list(tmp_path.iterdir()) == []  # removed after an error too


def test_a_rolling_event_log_folder_url_with_a_trailing_slash(folder):
    half = EVENT_LOG.splitlines(keepends=True)
    MEM.pipe(f"{folder}/eventlog_v2_app-2/appstatus_app-2", b"")
    MEM.pipe(f"{folder}/eventlog_v2_app-2/events_1_app-2", b"".join(half[:3]))
    MEM.pipe(f"{folder}/eventlog_v2_app-2/events_2_app-2", b"".join(half[3:]))
    for url in (f"memory://{folder}/eventlog_v2_app-2/", f"memory://{folder}/eventlog_v2_app-2"):
        report = ReadReport()
        _check(list(read_remote_events(url, report)), report)


def test_a_first_line_with_the_event_key_later_is_an_event_log(folder):
    line = EVENT_LOG.splitlines(keepends=True)[0]
    assert line.startswith(b'{"Event"')
    moved = b'{"Timestamp":1,' + line[1:]  # another writer's key order
    MEM.pipe(f"{folder}/app-3", moved)
    assert detect_remote_format(f"memory://{folder}/app-3") == "eventlog"


def test_follow_polls_once_a_second_by_default(folder):
    MEM.pipe(f"{folder}/events.jsonl.1", HEADER + BRONZE)
    f = Follower(f"memory://{folder}/events.jsonl", ReadReport(), poll_s=None)
    assert f.next() == "flights_bronze"
    MEM.pipe(f"{folder}/events.jsonl.2", HEADER + SILVER)
    assert f.next() == "flights_silver"  # found by the next listing, REMOTE_POLL_S later
    assert f.finish() == []


def test_a_bad_line_is_named_by_its_segment(folder):
    MEM.pipe(f"{folder}/events.jsonl.1", HEADER + BRONZE)
    MEM.pipe(f"{folder}/events.jsonl.2", HEADER + b"{broken\n" + SILVER)
    report = ReadReport()
    objs = list(read_remote_recording(f"memory://{folder}/events.jsonl", report))
    assert [o.name for o in objs if isinstance(o, QueryStarted)] == ["flights_bronze", "flights_silver"]
    assert report.bad_lines == 1 and report.problems[0].startswith("events.jsonl.2:2: ")


def test_storage_options_reach_the_store(folder):
    """fsspec's ``dir://`` store cannot open without its options (the folder it is rooted
    at): every entry point must pass them on."""
    MEM.pipe(f"{folder}/events.jsonl.1", HEADER + BRONZE)
    MEM.pipe(f"{folder}/whole.jsonl", HEADER + SILVER)
    MEM.pipe(f"{folder}/app-1", EVENT_LOG)
    opts = {"path": folder, "target_protocol": "memory"}
    assert detect_remote_format("dir://events.jsonl", opts) == "recording"
    assert detect_remote_format("dir://app-1", opts) == "eventlog"
    for url, name in (("dir://events.jsonl", "flights_bronze"), ("dir://whole.jsonl", "flights_silver")):
        got = [o.name for o in read_remote_events(url, storage_options=opts) if isinstance(o, QueryStarted)]
        assert got == [name]
        got = [o.name for o in read_remote_recording(url, storage_options=opts) if isinstance(o, QueryStarted)]
        assert got == [name]
    report = ReadReport()
    _check(list(read_remote_events("dir://app-1", report, storage_options=opts)), report)
    report = ReadReport()
    _check(list(read_remote_event_log("dir://app-1", report, storage_options=opts)), report)


# -- one clear error for each way a store refuses --------------------------------------------

def test_a_segment_that_is_a_folder_is_one_clear_error(tmp_path):
    (tmp_path / "events.jsonl.1").mkdir()
    with pytest.raises(EventSourceError) as e:
        list(read_remote_recording(f"file://{tmp_path}/events.jsonl"))
    assert str(e.value) == f"{tmp_path}/events.jsonl.1: Is a directory"


def test_a_file_in_the_way_of_the_url_is_one_clear_error(tmp_path):
    (tmp_path / "afile").write_text("x")
    url = f"file://{tmp_path}/afile/events.jsonl"
    for call in (detect_remote_format, lambda u: list(read_remote_recording(u))):
        with pytest.raises(EventSourceError) as e:
            call(url)
        assert str(e.value) == f"{tmp_path}/afile/events.jsonl: Not a directory"


def test_an_object_that_cannot_be_opened_is_one_clear_error(tmp_path):
    with socket.socket(socket.AF_UNIX) as sock:  # a path that exists but open() refuses
        sock.bind(str(tmp_path / "app-1"))
        with pytest.raises(EventSourceError) as e:
            detect_remote_format(f"file://{tmp_path}/app-1")
    assert str(e.value) == f"file://{tmp_path}/app-1: No such device or address"


def test_a_missing_event_log_says_why(tmp_path):
    with pytest.raises(EventSourceError) as e:
        list(read_remote_event_log(f"file://{tmp_path}/app-404"))
    assert str(e.value) == f"file://{tmp_path}/app-404: No such file or directory"


def test_a_folder_name_too_long_is_one_clear_error(tmp_path):
    url = f"file://{tmp_path}/{'a' * 300}/events.jsonl"
    for call in (detect_remote_format, lambda u: list(read_remote_recording(u)), lambda u: list(read_remote_events(u))):
        with pytest.raises(EventSourceError) as e:
            call(url)
        assert str(e.value) == f"{url}: File name too long"
