"""Segment recordings (object stores cannot append): ``SegmentRecorder`` writes immutable
objects ``FILE.1``, ``FILE.2`` …; readers read them in order and ``follow`` picks up new ones.
Runs on fsspec's in-process ``memory://`` filesystem (the S3 API is in test_events_s3.py)."""

from __future__ import annotations

import threading
import time
import uuid

import fsspec
import pytest

from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader
from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from streamwatch.events.segments import SegmentRecorder, list_segments, open_recorder
from streamwatch.model.events import QueryProgress
from tests.unit.test_jsonl import EVENTS, _progress


@pytest.fixture
def url():
    """A fresh memory:// recording URL; the folder is removed afterwards."""
    folder = f"/seg-{uuid.uuid4().hex[:8]}"
    yield f"memory://{folder}/events.jsonl"
    fs = fsspec.filesystem("memory")
    if fs.exists(folder):
        fs.rm(folder, recursive=True)


def _names(url: str) -> list[str]:
    fs = fsspec.filesystem("memory")
    return [p.rsplit("/", 1)[1] for _, p in list_segments(fs, url[len("memory://"):])]


def test_round_trip_through_segments_keeps_every_event_in_order(url):
    header = RecordingHeader(time_ms=1, app={"appId": "app-1", "master": "spark://h:7077"})
    with SegmentRecorder(url, header=header, max_bytes=4000, segment_seconds=60) as rec:
        for i in range(40):
            rec.write(_progress(i))
    assert rec.rotations >= 3 and _names(url)[0] == "events.jsonl.1"
    assert _names(url) == [f"events.jsonl.{n}" for n in range(1, rec.rotations + 1)]
    report = ReadReport()
    got = list(read_events(url, report))
    assert [e.batch_id for e in got] == list(range(40))
    assert report.header.app["master"] == "spark://h:7077" and report.bad_lines == 0
    fs = fsspec.filesystem("memory")
    for _, seg in list_segments(fs, url[len("memory://"):]):  # each segment is readable alone
        assert fs.cat_file(seg).startswith(b'{"v":1,"kind":"header"')


def test_model_objects_survive_the_round_trip(url):
    with SegmentRecorder(url) as rec:
        for e in EVENTS:
            rec.write(e)
    assert list(read_events(url)) == EVENTS
    assert _names(url) == ["events.jsonl.1"]  # everything fitted one segment, stored at close


def test_a_restarted_job_continues_the_numbering(url):
    with SegmentRecorder(url) as rec:
        rec.write(_progress(0))
    with SegmentRecorder(url) as rec:
        rec.write(_progress(1))
    assert _names(url) == ["events.jsonl.1", "events.jsonl.2"]
    assert [e.batch_id for e in read_events(url)] == [0, 1]


def test_a_segment_is_stored_after_segment_seconds_without_close(url):
    rec = SegmentRecorder(url, segment_seconds=0.2)
    try:
        rec.write(_progress(7))
        assert _names(url) == []  # buffered: an object store only shows whole objects
        deadline = time.monotonic() + 5
        while not _names(url) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _names(url) == ["events.jsonl.1"]
        assert [e.batch_id for e in read_events(url)] == [7]
        time.sleep(0.5)
        assert _names(url) == ["events.jsonl.1"]  # no empty segments while idle
    finally:
        rec.close()
    assert _names(url) == ["events.jsonl.1"]  # nothing left to store at close


def test_flush_stores_the_current_segment(url):
    with SegmentRecorder(url, segment_seconds=60) as rec:
        rec.write(_progress(1))
        rec.flush()
        assert _names(url) == ["events.jsonl.1"]
        rec.flush()  # nothing new: no empty segment
        assert _names(url) == ["events.jsonl.1"]


def test_an_empty_recording_still_stores_its_header(url):
    SegmentRecorder(url, header=RecordingHeader(time_ms=5, app={"appId": "x"})).close()
    report = ReadReport()
    assert list(read_events(url, report)) == [] and report.header.app["appId"] == "x"


def test_keep_deletes_the_oldest_segments(url):
    with SegmentRecorder(url, max_bytes=1, keep=2) as rec:
        for i in range(5):
            rec.write(_progress(i))
    assert _names(url) == ["events.jsonl.4", "events.jsonl.5"]
    assert [e.batch_id for e in read_events(url)] == [3, 4]


def test_follow_picks_up_new_segments_as_they_appear(url):
    stop = threading.Event()
    seen: list[int] = []

    def follow() -> None:
        for e in read_events(url, follow=True, stop=stop, poll_s=0.02):
            if isinstance(e, QueryProgress):
                seen.append(e.batch_id)
                if len(seen) == 60:
                    stop.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()  # before anything exists
    with SegmentRecorder(url, max_bytes=3000, segment_seconds=0.1) as rec:
        for i in range(60):
            rec.write(_progress(i))
            if i % 7 == 0:
                time.sleep(0.03)
    reader.join(20)
    stop.set()
    assert rec.rotations >= 4
    assert seen == list(range(60))  # every event once, in order, across segments


def test_missing_recording_is_one_clear_error(url):
    with pytest.raises(EventSourceError, match="no such object"):
        list(read_events(url))


def test_open_recorder_chooses_by_path(tmp_path, url):
    local = open_recorder(tmp_path / "a.jsonl")
    as_file_url = open_recorder(f"file://{tmp_path}/b.jsonl")
    remote = open_recorder(url, segment_seconds=1)
    try:
        assert isinstance(local, JsonlRecorder) and isinstance(as_file_url, JsonlRecorder)
        assert as_file_url.path == tmp_path / "b.jsonl"
        assert isinstance(remote, SegmentRecorder) and remote.segment_seconds == 1
    finally:
        for r in (local, as_file_url, remote):
            r.close()
    with pytest.raises(ValueError):
        open_recorder(url, segment_seconds=0)


def test_segments_copied_to_a_local_folder_read_without_the_active_file(tmp_path, url):
    with SegmentRecorder(url, max_bytes=1) as rec:
        for i in range(3):
            rec.write(_progress(i))
    fs = fsspec.filesystem("memory")
    for _, seg in list_segments(fs, url[len("memory://"):]):
        (tmp_path / seg.rsplit("/", 1)[1]).write_bytes(fs.cat_file(seg))
    assert [e.batch_id for e in read_events(tmp_path / "events.jsonl")] == [0, 1, 2]
