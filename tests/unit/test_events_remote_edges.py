"""Edge paths of recordings and Spark event logs at a URL (streamwatch.events.remote): format
detection by name and content, a whole recording uploaded as one object, segments plus that
object, stopping a follow, rolling event-log folders copied from a bucket, and one clear
error for each way a URL can be wrong. On fsspec's in-process ``memory://`` filesystem and on
the real S3 API (moto on loopback, tests/conftest.py)."""

from __future__ import annotations

import gzip
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
from streamwatch.model.events import QueryProgress, QueryStarted
from tests.unit.test_eventlog import DATA as EVENT_LOG
from tests.unit.test_eventlog import _check

RECORDING = (Path(__file__).resolve().parents[1] / "tui" / "data" / "flights_run.jsonl").read_bytes()
LINES = RECORDING.splitlines(keepends=True)


@pytest.fixture
def mem():
    """(memory filesystem, a fresh folder in it); the folder is removed afterwards."""
    fs = fsspec.filesystem("memory")
    folder = f"/remote-{uuid.uuid4().hex[:8]}"
    fs.mkdir(folder)
    yield fs, folder
    if fs.exists(folder):
        fs.rm(folder, recursive=True)


def _started(objs) -> list[str]:
    return [o.name for o in objs if isinstance(o, QueryStarted)]


def test_format_is_detected_by_name_layout_and_first_line(mem):
    fs, d = mem
    fs.pipe(f"{d}/rec.jsonl", RECORDING)
    fs.pipe(f"{d}/app-1", EVENT_LOG)
    fs.pipe(f"{d}/app-2.gz", gzip.compress(EVENT_LOG))
    fs.pipe(f"{d}/eventlog_v2_app-3/events_1_app-3", EVENT_LOG)
    fs.pipe(f"{d}/empty.jsonl", b"")
    fs.pipe(f"{d}/notes.txt", b"\n\nsome notes, not events\n")
    fs.pipe(f"{d}/seg.jsonl.1", b"".join(LINES[:3]))
    assert detect_remote_format(f"memory://{d}/rec.jsonl") == "recording"
    assert detect_remote_format(f"memory://{d}/seg.jsonl") == "recording"  # only segments exist
    assert detect_remote_format(f"memory://{d}/app-1") == "eventlog"
    assert detect_remote_format(f"memory://{d}/app-2.gz") == "eventlog"
    assert detect_remote_format(f"memory://{d}/eventlog_v2_app-3") == "eventlog"
    assert detect_remote_format(f"memory://{d}/empty.jsonl") == "recording"  # a recording not yet written
    with pytest.raises(EventSourceError, match="neither a streamwatch recording nor a Spark event log"):
        detect_remote_format(f"memory://{d}/notes.txt")
    with pytest.raises(EventSourceError, match=r"no such object \(and no gone.jsonl.N segments\)"):
        detect_remote_format(f"memory://{d}/gone.jsonl")


def test_a_whole_recording_uploaded_as_one_object(mem):
    fs, d = mem
    fs.pipe(f"{d}/events.jsonl", RECORDING)
    report = ReadReport()
    objs = list(read_remote_recording(f"memory://{d}/events.jsonl", report))
    assert _started(objs) == ["flights_bronze", "flights_silver", "flights_gold"]
    assert report.header is not None and report.header.app.get("pipeline") == "flights"
    assert sum(isinstance(o, QueryProgress) for o in objs) == sum(b'"kind": "progress"' in ln for ln in LINES)


def test_segments_are_read_in_number_order_then_the_whole_object(mem):
    fs, d = mem
    header = LINES[0]
    fs.pipe(f"{d}/events.jsonl.10", header + LINES[3])  # flights_gold: numbered 10, read last of the segments
    fs.pipe(f"{d}/events.jsonl.2", header + LINES[1])   # bronze
    fs.pipe(f"{d}/events.jsonl.9", header + LINES[2])   # silver
    fs.pipe(f"{d}/events.jsonl", header + LINES[1].replace(b"flights_bronze", b"uploaded"))
    objs = list(read_remote_events(f"memory://{d}/events.jsonl"))
    assert _started(objs) == ["flights_bronze", "flights_silver", "flights_gold", "uploaded"]


def test_stop_ends_a_follow_after_the_segment_being_read(mem):
    fs, d = mem
    for n in (1, 2, 3):
        fs.pipe(f"{d}/events.jsonl.{n}", LINES[0] + LINES[n])
    stop = threading.Event()
    stop.set()  # already asked to stop: the first segment is read, nothing after it
    objs = list(read_remote_recording(f"memory://{d}/events.jsonl", follow=True, stop=stop, poll_s=0.05))
    assert _started(objs) == ["flights_bronze"]


def test_follow_on_nothing_yet_waits_as_a_recording_and_stops(mem):
    fs, d = mem
    stop = threading.Event()
    stop.set()
    assert list(read_remote_events(f"memory://{d}/later.jsonl", follow=True, stop=stop, poll_s=0.05)) == []
    with pytest.raises(EventSourceError, match="no such object"):
        list(read_remote_events(f"memory://{d}/later.jsonl"))  # without follow: one clear error


def test_a_folder_without_segments_is_no_recording(mem):
    fs, d = mem
    fs.pipe(f"{d}/folder.jsonl/inner", b"x")
    with pytest.raises(EventSourceError, match=r"folder.jsonl: no such object"):
        list(read_remote_recording(f"memory://{d}/folder.jsonl"))


def test_event_logs_single_and_rolling_from_memory(mem):
    fs, d = mem
    fs.pipe(f"{d}/app-1", EVENT_LOG)
    report = ReadReport()
    _check(list(read_remote_events(f"memory://{d}/app-1", report)), report)
    half = EVENT_LOG.splitlines(keepends=True)
    fs.pipe(f"{d}/eventlog_v2_app-2/appstatus_app-2", b"")
    fs.pipe(f"{d}/eventlog_v2_app-2/events_1_app-2", b"".join(half[:3]))
    fs.pipe(f"{d}/eventlog_v2_app-2/events_2_app-2", b"".join(half[3:]))
    report = ReadReport()
    _check(list(read_remote_events(f"memory://{d}/eventlog_v2_app-2", report)), report)


def test_an_unknown_protocol_is_one_clear_error():
    for call in (detect_remote_format, lambda u: list(read_remote_recording(u)), lambda u: list(read_remote_event_log(u))):
        with pytest.raises(EventSourceError, match=r"cannot open nosuchproto://x/y"):
            call("nosuchproto://x/y")


# -- the S3 API -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def s3(s3_server):
    s3_server.client.create_bucket(Bucket="edges")
    return s3_server.client


def test_s3_whole_recording_object_and_missing_event_log(s3):
    s3.put_object(Bucket="edges", Key="job/events.jsonl", Body=RECORDING)
    assert detect_remote_format("s3://edges/job/events.jsonl") == "recording"
    assert _started(read_remote_events("s3://edges/job/events.jsonl")) == ["flights_bronze", "flights_silver", "flights_gold"]
    with pytest.raises(EventSourceError, match=r"s3://edges/spark-events/app-404: "):
        list(read_remote_event_log("s3://edges/spark-events/app-404"))
    with pytest.raises(EventSourceError, match="no such object"):
        detect_remote_format("s3://edges/job/nothing.jsonl")


def test_s3_compressed_event_log(s3):
    s3.put_object(Bucket="edges", Key="spark-events/app-7.gz", Body=gzip.compress(EVENT_LOG))
    report = ReadReport()
    assert detect_remote_format("s3://edges/spark-events/app-7.gz") == "eventlog"
    _check(list(read_remote_events("s3://edges/spark-events/app-7.gz", report)), report)
