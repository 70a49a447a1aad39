"""Segment recordings and object-store reading at their edges: settings passed through
``open_recorder``, the exact point a segment is stored, no empty segments, a failed upload
kept and retried, segment naming, and how a URL's content is recognised. Runs on fsspec's
in-process ``memory://`` store and on local ``file://`` URLs. (Written against the mutation
run of bench/MUTATION.md.)"""

from __future__ import annotations

import json
import threading
import time
import uuid

import fsspec
import pytest

from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader, decode, encode
from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from streamwatch.events.remote import detect_remote_format, read_remote_recording
from streamwatch.events.segments import (
    DEFAULT_SEGMENT_BYTES,
    DEFAULT_SEGMENT_SECONDS,
    SegmentRecorder,
    is_url,
    list_segments,
    local_path,
    open_fs,
    open_recorder,
    segment_number,
)
from streamwatch.model.events import QueryStarted
from tests.unit.test_eventlog import DATA, LINES
from tests.unit.test_jsonl import EVENTS, _progress

HEADER = RecordingHeader(1_700_000_000_000, app={"appId": "seg-1"})
MEM = fsspec.filesystem("memory")


@pytest.fixture
def folder():
    """A fresh memory:// folder (its path inside the store); removed afterwards."""
    path = f"/segedge-{uuid.uuid4().hex[:8]}"
    yield path
    if MEM.exists(path):
        MEM.rm(path, recursive=True)


def _names(inner: str) -> list[str]:
    return [p.rsplit("/", 1)[1] for _, p in list_segments(MEM, inner)]


def test_urls_and_paths():
    assert is_url("s3://b/k") and is_url("memory://x")
    assert not is_url("file:///tmp/x") and not is_url("/tmp/x") and not is_url(local_path("/tmp/x"))
    assert local_path("file:///tmp/x.jsonl") == local_path("/tmp/x.jsonl")
    assert str(local_path("file://")) == "/"
    with pytest.raises(OSError, match=r"^cannot open nope://b/k: "):
        open_fs("nope://b/k")


@pytest.mark.parametrize("name,n", [
    ("events.jsonl.1", 1), ("events.jsonl.12", 12), ("events.jsonl.007", 7), ("events.jsonl", None),
    ("events.jsonl.", None), ("events.jsonl.1a", None), ("events.jsonl.1.tmp", None), ("events.jsonlx.1", None),
    ("other.jsonl.1", None), ("events.jsonl.-1", None),
])
def test_segment_number(name, n):
    assert segment_number(name, "events.jsonl") == n


def test_list_segments_numeric_order_and_missing_folder(folder):
    for n in (10, 2, 1):
        MEM.pipe_file(f"{folder}/events.jsonl.{n}", b"")
    MEM.pipe_file(f"{folder}/events.jsonl", b"")
    MEM.makedirs(f"{folder}/events.jsonl.3", exist_ok=True)
    MEM.pipe_file(f"{folder}/events.jsonl.3/inner", b"")  # a "folder" named like a segment is still listed
    assert [n for n, _ in list_segments(MEM, f"{folder}/events.jsonl")] == [1, 2, 3, 10]
    assert list_segments(MEM, f"{folder}/events.jsonl")[0][1] == f"{folder}/events.jsonl.1"
    assert list_segments(MEM, f"{folder}/nothing/events.jsonl") == []


def test_bad_settings_and_defaults(folder):
    url = f"memory://{folder}/events.jsonl"
    for kwargs, message in (({"max_bytes": 0}, "max_bytes must be >= 1"),
                            ({"segment_seconds": 0}, "segment_seconds must be > 0"),
                            ({"segment_seconds": -1.0}, "segment_seconds must be > 0"),
                            ({"keep": 0}, "keep must be >= 1")):
        with pytest.raises(ValueError, match=f"^{message}$"):
            SegmentRecorder(url, **kwargs)
    rec = SegmentRecorder(url, keep=1)
    rec.close()
    assert (rec.max_bytes, rec.segment_seconds, rec.keep) == (DEFAULT_SEGMENT_BYTES, DEFAULT_SEGMENT_SECONDS, 1)
    assert (DEFAULT_SEGMENT_BYTES, DEFAULT_SEGMENT_SECONDS) == (8_000_000, 5.0)


def test_open_recorder_passes_every_setting_on(folder, tmp_path):
    url = f"memory://{folder}/events.jsonl"
    with open_recorder(url, header=HEADER, max_bytes=1, keep=1, segment_seconds=60) as rec:
        for i in range(3):
            rec.write(_progress(i))
        assert rec.rotations == 3  # max_bytes=1: every event is its own segment
    assert _names(f"{folder}/events.jsonl") == ["events.jsonl.3"]
    report = ReadReport()
    assert [e.batch_id for e in read_events(url, report)] == [2]
    assert report.header == HEADER
    path = tmp_path / "local.jsonl"
    with open_recorder(tmp_path / "default.jsonl") as rec:
        rec.write(EVENTS[0])
        assert list(read_events(tmp_path / "default.jsonl")) == [EVENTS[0]]  # on disk at once by default
    rec = open_recorder(str(path), header=HEADER, flush_every=2, max_bytes=1, keep=1)
    assert isinstance(rec, JsonlRecorder) and rec.path == path
    assert (rec.flush_every, rec.max_bytes, rec.keep, rec.header) == (2, 1, 1, HEADER)
    rec.close()


def test_open_recorder_dash_is_stdout(capsysbinary):
    rec = open_recorder("-", header=HEADER)
    assert isinstance(rec, JsonlRecorder) and rec.path is None
    rec.write(EVENTS[0])
    rec.close()
    out = capsysbinary.readouterr().out
    assert [decode(line) for line in out.splitlines()] == [HEADER, EVENTS[0]]


def test_a_segment_is_stored_exactly_at_max_bytes(folder):
    url = f"memory://{folder}/events.jsonl"
    size = len(encode(HEADER)) + len(encode(_progress(0), recorded_ms=1_700_000_000_000))
    rec = SegmentRecorder(url, header=HEADER, max_bytes=size, segment_seconds=60)
    rec.write(_progress(0))
    assert rec.rotations == 1 and _names(f"{folder}/events.jsonl") == ["events.jsonl.1"]
    rec.close()
    assert _names(f"{folder}/events.jsonl") == ["events.jsonl.1"]  # no empty segment at close
    other = f"memory://{folder}/other.jsonl"
    rec = SegmentRecorder(other, header=HEADER, max_bytes=size + 1, segment_seconds=60)
    rec.write(_progress(0))
    assert rec.rotations == 0 and rec.written == 1 and _names(f"{folder}/other.jsonl") == []
    rec.close()
    assert rec.rotations == 1 and not rec.write(_progress(1))
    rec.close()  # idempotent
    rec.flush()  # closed: nothing to do
    assert _names(f"{folder}/other.jsonl") == ["other.jsonl.1"]


def test_each_segment_starts_with_the_header_and_holds_its_events(folder):
    url = f"memory://{folder}/events.jsonl"
    with SegmentRecorder(url, header=HEADER, segment_seconds=60) as rec:
        rec.write(_progress(0))
        rec.write(_progress(1))
        rec.flush()
        rec.write(_progress(2))
    segs = list_segments(MEM, f"{folder}/events.jsonl")
    lines = [MEM.cat_file(p).splitlines() for _, p in segs]
    assert [len(x) for x in lines] == [3, 2]
    assert all(decode(x[0]) == HEADER for x in lines)
    assert [decode(x).batch_id for x in lines[0][1:] + lines[1][1:]] == [0, 1, 2]


def test_a_new_folder_is_created_and_a_file_in_the_way_is_a_clear_error(tmp_path, folder):
    with SegmentRecorder(f"memory://{folder}/a/b/events.jsonl") as rec:
        rec.write(EVENTS[0])
    assert MEM.isdir(f"{folder}/a/b") and _names(f"{folder}/a/b/events.jsonl") == ["events.jsonl.1"]
    (tmp_path / "file").write_bytes(b"")
    url = f"file://{tmp_path}/file/sub/events.jsonl"
    with pytest.raises(OSError) as e:
        SegmentRecorder(url)
    assert str(e.value).startswith(f"cannot write {url}: ")


def test_a_failed_upload_is_counted_kept_and_retried(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    url = f"file://{d}/events.jsonl"
    rec = SegmentRecorder(url, header=HEADER, segment_seconds=60)
    try:
        rec.write(_progress(0))
        d.rmdir()
        d.write_bytes(b"")  # the folder is gone, a file is in its way: the upload fails
        with pytest.raises(OSError) as e:
            rec.flush()
        assert str(e.value).startswith(f"cannot write {d}/events.jsonl.1: ")
        assert (rec.upload_errors, rec.rotations) == (1, 0)
        rec.write(_progress(1))
        with pytest.raises(OSError):
            rec.flush()  # still failing: counted again, still kept
        assert (rec.upload_errors, rec.rotations) == (2, 0)
        d.unlink()
        d.mkdir()
        rec.flush()  # the kept segment goes first, then the current one
        assert (rec.upload_errors, rec.rotations) == (2, 2)
    finally:
        rec.close()
    assert sorted(p.name for p in d.iterdir()) == ["events.jsonl.1", "events.jsonl.2"]
    assert [e.batch_id for e in read_events(d / "events.jsonl")] == [0, 1]


def test_keep_counts_segments_of_earlier_runs(folder):
    url = f"memory://{folder}/events.jsonl"
    with SegmentRecorder(url, max_bytes=1) as rec:
        rec.write(_progress(0))
        rec.write(_progress(1))
    with SegmentRecorder(url, max_bytes=1, keep=2) as rec:
        rec.write(_progress(2))
    assert _names(f"{folder}/events.jsonl") == ["events.jsonl.2", "events.jsonl.3"]


def test_detect_remote_format(folder):
    base = f"memory://{folder}"
    MEM.pipe_file(f"{folder}/rec.jsonl", encode(HEADER) + encode(EVENTS[0]))
    MEM.pipe_file(f"{folder}/empty.jsonl", b"")
    MEM.pipe_file(f"{folder}/app-1", b"\n" + DATA)
    MEM.pipe_file(f"{folder}/half", b'  {"Block":1,"Event":"SparkListenerLogStart","Spark Ve')
    MEM.pipe_file(f"{folder}/app-2.zstd", b"not really zstd")
    MEM.pipe_file(f"{folder}/eventlog_v2_x/events_1_x", DATA)
    MEM.pipe_file(f"{folder}/text", b"\nhello\n")
    MEM.pipe_file(f"{folder}/segs.1", encode(HEADER))
    assert detect_remote_format(f"{base}/rec.jsonl") == "recording"
    assert detect_remote_format(f"{base}/empty.jsonl") == "recording"
    assert detect_remote_format(f"{base}/segs") == "recording"
    assert detect_remote_format(f"{base}/app-1") == "eventlog"
    assert detect_remote_format(f"{base}/half") == "eventlog"
    assert detect_remote_format(f"{base}/app-2.zstd") == "eventlog"
    assert detect_remote_format(f"{base}/eventlog_v2_x") == "eventlog"
    with pytest.raises(EventSourceError) as e:
        detect_remote_format(f"{base}/text")
    assert str(e.value) == f"{base}/text: neither a streamwatch recording nor a Spark event log"
    with pytest.raises(EventSourceError) as e:
        detect_remote_format(f"{base}/none.jsonl")
    assert str(e.value) == f"{base}/none.jsonl: no such object (and no none.jsonl.N segments)"
    with pytest.raises(EventSourceError, match="^cannot open nope://x: "):
        list(read_events("nope://x"))


def test_remote_event_logs_are_read_whole(folder):
    base = f"memory://{folder}"
    MEM.pipe_file(f"{folder}/app-1", DATA)
    half = len(LINES) // 2
    for index, part in ((1, LINES[:half]), (2, LINES[half:])):
        MEM.pipe_file(f"{folder}/eventlog_v2_x/events_{index}_x", "".join(json.dumps(x) + "\n" for x in part).encode())
    for url in (f"{base}/app-1", f"{base}/eventlog_v2_x"):
        report = ReadReport()
        events = list(read_events(url, report))
        assert len(events) == 4 and isinstance(events[0], QueryStarted)
        assert report.header.app["appId"] == "local-17" and report.header.source == "eventlog"


def test_segments_then_the_whole_object(folder):
    url = f"memory://{folder}/rec.jsonl"
    MEM.pipe_file(f"{folder}/rec.jsonl.2", encode(HEADER) + encode(_progress(1)))
    MEM.pipe_file(f"{folder}/rec.jsonl.1", encode(RecordingHeader(5)) + encode(_progress(0)))
    MEM.pipe_file(f"{folder}/rec.jsonl", encode(HEADER) + encode(_progress(2)) + b'{"v":1,"kind":"idle"')
    report = ReadReport()
    assert [e.batch_id for e in read_events(url, report)] == [0, 1, 2]
    assert report.header == RecordingHeader(5)  # the first segment's header
    assert report.problems == ["rec.jsonl:3: truncated last line"]
    MEM.makedirs(f"{folder}/d.jsonl", exist_ok=True)
    MEM.pipe_file(f"{folder}/d.jsonl/x", b"")
    MEM.pipe_file(f"{folder}/d.jsonl.1", encode(HEADER) + encode(_progress(9)))
    assert [e.batch_id for e in read_remote_recording(f"memory://{folder}/d.jsonl")] == [9]  # a folder is no object
    with pytest.raises(EventSourceError, match="no such object"):
        list(read_remote_recording(f"memory://{folder}/gone.jsonl"))


def test_follow_stops_between_segments_and_before_anything_exists(folder):
    url = f"memory://{folder}/rec.jsonl"
    stop = threading.Event()
    stop.set()
    assert list(read_remote_recording(url, follow=True, stop=stop, poll_s=0.01)) == []
    for n in (1, 2):
        MEM.pipe_file(f"{folder}/rec.jsonl.{n}", encode(HEADER) + encode(_progress(n)))
    stop = threading.Event()
    got = []
    for e in read_remote_recording(url, follow=True, stop=stop, poll_s=0.01):
        got.append(e.batch_id)
        stop.set()  # set while reading segment 1: segment 2 is not read
    assert got == [1]
    assert list(read_events(f"memory://{folder}/later.jsonl", follow=True, stop=stop)) == []


def test_default_header_path_and_counters(folder):
    url = f"memory://{folder}/events.jsonl"
    before = int(time.time() * 1000)
    with SegmentRecorder(url, segment_seconds=60) as rec:
        for i in range(3):
            rec.write(_progress(i))
    after = int(time.time() * 1000)
    assert rec.path == url and (rec.written, rec.rotations, rec.upload_errors) == (3, 1, 0)
    assert before <= rec.header.time_ms <= after  # the default header's time: now, epoch ms
    report = ReadReport()
    assert [e.batch_id for e in read_events(url, report)] == [0, 1, 2]
    assert report.header == rec.header
