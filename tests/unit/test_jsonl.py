"""JSONL recordings: round trip, flush per event, rotation exactly once, follow, bad lines."""

from __future__ import annotations

import threading

import pytest

from streamwatch.events.jsonl import SCHEMA_VERSION, JsonlRecorder, RecordingHeader, rotated_segments
from streamwatch.events.reader import EventSourceError, ReadReport, read_events, read_recording
from streamwatch.model.events import ListenerStats, QueryIdle, QueryProgress, QueryStarted, QueryTerminated
from tests.unit.test_events_model import PROGRESS


def _progress(batch: int) -> QueryProgress:
    return QueryProgress.from_dict({**PROGRESS, "batchId": batch})


EVENTS = [
    QueryStarted("q1", "r1", "2026-11-20T21:57:00.000Z", name="flights_gold"),
    _progress(0),
    QueryIdle("q1", "r1", "2026-11-20T21:57:10.000Z"),
    _progress(1),
    QueryTerminated("q1", "r1", None, exception="java.lang.ArithmeticException: / by zero",
                    error_class="DIVIDE_BY_ZERO"),
    ListenerStats(published=5, delivered=5, dropped=0, sink_errors=1, max_callback_ms=0.2),
]


def test_round_trip_gives_equal_model_objects(tmp_path):
    path = tmp_path / "rec.jsonl"
    header = RecordingHeader(123, app={"appId": "local-1"}, conf={"spark.app.name": "x", "fs.s3a.secret.key": "hunter2"})
    with JsonlRecorder(path, header=header) as rec:
        for e in EVENTS:
            assert rec.write(e)
        assert not rec.write("not an event")
    report = ReadReport()
    back = list(read_recording(path, report))
    assert back == EVENTS
    assert back[1].to_dict() == {**PROGRESS, "batchId": 0}  # Spark's JSON kept verbatim
    assert back[1].state_operators[0].custom_metrics["loadedMapCacheHitCount"] == 8
    assert report.header is not None and report.header.app == {"appId": "local-1"}
    assert report.header.conf["fs.s3a.secret.key"] == "*********"
    text = path.read_text()
    assert "hunter2" not in text
    assert all(f'"v":{SCHEMA_VERSION}' in line for line in text.splitlines())


def test_each_event_is_on_disk_at_once_by_default(tmp_path):
    path = tmp_path / "rec.jsonl"
    rec = JsonlRecorder(path)
    rec.write(EVENTS[0])
    assert list(read_recording(path)) == [EVENTS[0]]  # read while still open: tail -f works
    batched = JsonlRecorder(tmp_path / "b.jsonl", flush_every=100)
    batched.write(EVENTS[0])
    assert list(read_recording(tmp_path / "b.jsonl")) == []  # buffered until the batch fills
    batched.close()
    assert list(read_recording(tmp_path / "b.jsonl")) == [EVENTS[0]]
    rec.close()


def test_rotation_keeps_every_event_exactly_once_in_order(tmp_path):
    path = tmp_path / "rec.jsonl"
    events = [_progress(i) for i in range(300)]
    with JsonlRecorder(path, max_bytes=20_000) as rec:
        for e in events:
            rec.write(e)
    assert rec.rotations >= 5
    assert len(rotated_segments(path)) == rec.rotations
    report = ReadReport()
    assert [e.batch_id for e in read_recording(path, report)] == list(range(300))
    assert report.bad_lines == 0 and report.header is not None


def test_keep_limits_rotated_segments(tmp_path):
    path = tmp_path / "rec.jsonl"
    with JsonlRecorder(path, max_bytes=5_000, keep=2) as rec:
        for i in range(100):
            rec.write(_progress(i))
    segs = rotated_segments(path)
    assert len(segs) == 2 and segs[-1].name == f"rec.jsonl.{rec.rotations}"
    batches = [e.batch_id for e in read_recording(path)]
    assert batches == list(range(batches[0], 100))  # newest events, contiguous, no duplicates


def test_follow_reads_while_another_writer_appends_and_rotates(tmp_path):
    path = tmp_path / "rec.jsonl"
    stop = threading.Event()
    seen: list[int] = []

    def follow() -> None:
        for e in read_recording(path, follow=True, stop=stop, poll_s=0.02):
            seen.append(e.batch_id)
            if len(seen) == 200:
                stop.set()

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()  # before the file exists
    with JsonlRecorder(path, max_bytes=30_000) as rec:
        for i in range(200):
            rec.write(_progress(i))
    reader.join(20)
    stop.set()
    assert rec.rotations >= 2
    assert seen == list(range(200))


def test_bad_lines_are_counted_not_raised(tmp_path):
    path = tmp_path / "rec.jsonl"
    with JsonlRecorder(path) as rec:
        rec.write(EVENTS[0])
    with open(path, "ab") as fh:
        fh.write(b"{not json\n")
        fh.write(b'{"v":99,"kind":"progress","event":{}}\n')
        fh.write(b'{"v":1,"kind":"something-new","event":{}}\n')
        fh.write(b'{"v":1,"kind":"progress","event":{"batchId":1}}\n')
        fh.write(b'{"v":1,"kind":"idle","event":{"id":"q1","runId":"r1"}')  # truncated
    report = ReadReport()
    assert list(read_events(path, report)) == [EVENTS[0]]
    assert (report.bad_lines, report.unknown) == (4, 1)
    assert any("schema version 99" in p for p in report.problems)


def test_unknown_input_is_one_clear_error(tmp_path):
    (tmp_path / "x.txt").write_text("hello\n")
    with pytest.raises(EventSourceError, match="neither a streamwatch recording nor a Spark event log"):
        list(read_events(tmp_path / "x.txt"))
    with pytest.raises(EventSourceError, match="no such file"):
        list(read_events(tmp_path / "missing.jsonl"))
