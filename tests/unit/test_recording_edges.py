"""JSONL recordings at their edges: the exact rotation point and segment numbering, batched
flushes, what ``decode`` says about bad lines, how ``detect_format`` tells a recording from an
event log, and the read report's counts. (Written against the mutation run of
bench/MUTATION.md.)"""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import pytest

from streamwatch.events.jsonl import JsonlRecorder, RecordingHeader, decode, encode, rotated_segments
from streamwatch.events.reader import (
    DETECT_LINES,
    EventSourceError,
    ReadReport,
    detect_format,
    read_events,
    read_recording,
)
from streamwatch.events.source import recording_lines
from streamwatch.model.events import QueryIdle, QueryProgress, QueryStarted, UnsupportedEvent
from tests.helpers.follow import Follower
from tests.unit.test_eventlog import LINES
from tests.unit.test_events_model import PROGRESS
from tests.unit.test_jsonl import EVENTS, _progress

HEADER = RecordingHeader(1_700_000_000_000, app={"appId": "a-1"})


def test_header_line_round_trip_and_defaults():
    line = encode(RecordingHeader(5, "eventlog", {"appId": "x"}, {"spark.my.password": "p", "k": "v"}))
    assert json.loads(line) == {"v": 1, "kind": "header", "time": 5, "source": "eventlog", "app": {"appId": "x"},
                                "conf": {"spark.my.password": "*********", "k": "v"}}
    assert decode(line) == RecordingHeader(5, "eventlog", {"appId": "x"}, {"spark.my.password": "*********", "k": "v"})
    assert decode(b'{"v":1,"kind":"header"}') == RecordingHeader(0, "listener", {}, {})
    assert decode('{"v":1,"kind":"header","conf":{"a.secret":"s"}}').conf == {"a.secret": "*********"}


def test_encode_lines():
    line = encode(EVENTS[0], recorded_ms=42)
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    d = json.loads(line)
    assert (d["v"], d["kind"], d["t"], d["event"]["name"]) == (1, "started", 42, "flights_gold")
    u = UnsupportedEvent("org.x$QueryProgress", "old", 3)
    assert json.loads(encode(u)) == {"v": 1, "kind": "unsupported",
                                     "event": {"eventClass": "org.x$QueryProgress", "reason": "old", "line": 3}}
    assert decode(encode(u)) == u
    assert decode(b'{"v":1,"kind":"unsupported"}') == UnsupportedEvent("", "", 0)
    with pytest.raises(TypeError, match="^cannot record dict$"):
        encode({"kind": "progress"})


@pytest.mark.parametrize("line,message", [
    (b"[1, 2]", "not a streamwatch JSONL line (no 'kind')"),
    (b'{"v":1}', "not a streamwatch JSONL line (no 'kind')"),
    (b'{"kind":"idle"}', "unsupported recording schema version None (this streamwatch reads ≤ 1)"),
    (b'{"v":"1","kind":"idle"}', "unsupported recording schema version '1' (this streamwatch reads ≤ 1)"),
    (b'{"v":2,"kind":"idle"}', "unsupported recording schema version 2 (this streamwatch reads ≤ 1)"),
    (b'{"v":1,"kind":"idle","event":{"runId":"r"}}', "malformed idle event: missing 'id'"),
    (b'{"v":1,"kind":"unsupported","event":{"line":[1]}}', "malformed unsupported event: "),
])
def test_decode_errors_say_what_is_wrong(line, message):
    with pytest.raises(ValueError) as e:
        decode(line)
    assert str(e.value).startswith(message)
    assert message.endswith(": ") or str(e.value) == message


def test_decode_unknown_kinds_are_none():
    assert decode(b'{"v":1,"kind":"checkpoint"}') is None
    assert decode(b'{"v":1,"kind":7}') is None
    assert decode(b'{"v":0,"kind":"idle","event":{"id":"q","runId":"r"}}').id == "q"  # older versions read


def test_rotated_segments_lists_only_numbered_siblings(tmp_path):
    path = tmp_path / "rec.jsonl"
    assert rotated_segments(tmp_path / "missing" / "rec.jsonl") == []
    for name in ("rec.jsonl.10", "rec.jsonl.2", "rec.jsonl.1", "rec.jsonl.bak", "rec.jsonl.3.tmp",
                 "rec.jsonl.", "rec.jsonlx.4", "other.jsonl.5", "rec.jsonl", "rec.jsonl.x7"):
        (tmp_path / name).write_bytes(b"")
    assert [p.name for p in rotated_segments(path)] == ["rec.jsonl.1", "rec.jsonl.2", "rec.jsonl.10"]


def test_bad_settings_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="^flush_every must be >= 1$"):
        JsonlRecorder(tmp_path / "a", flush_every=0)
    with pytest.raises(ValueError, match="^max_bytes must be >= 1$"):
        JsonlRecorder(tmp_path / "a", max_bytes=0)
    JsonlRecorder(tmp_path / "b", flush_every=1, max_bytes=1).close()


def test_rotation_happens_exactly_at_max_bytes(tmp_path):
    probe = tmp_path / "probe.jsonl"
    with JsonlRecorder(probe, header=HEADER) as rec:
        rec.write(_progress(0))
    size = probe.stat().st_size  # header + one event
    path = tmp_path / "rec.jsonl"
    rec = JsonlRecorder(path, header=HEADER, max_bytes=size)
    assert rec.write(_progress(0)) and rec.rotations == 1 and rec.written == 1
    rec.close()
    assert path.read_bytes() == encode(HEADER)  # the fresh file starts with the header again
    assert [e.batch_id for e in read_recording(tmp_path / "rec.jsonl.1")] == [0]
    under = JsonlRecorder(tmp_path / "under.jsonl", header=HEADER, max_bytes=size + 1)
    under.write(_progress(0))
    assert under.rotations == 0 and rotated_segments(tmp_path / "under.jsonl") == []
    under.close()


def test_an_existing_file_counts_towards_max_bytes_and_numbering_continues(tmp_path):
    path = tmp_path / "rec.jsonl"
    with JsonlRecorder(path, header=HEADER) as rec:
        rec.write(_progress(0))
    size = path.stat().st_size
    (tmp_path / "rec.jsonl.4").write_bytes(encode(HEADER))
    with JsonlRecorder(path, header=HEADER, max_bytes=size + len(encode(HEADER)) + 1) as rec:
        rec.write(_progress(1))  # appended to the existing file, which is now over the limit
        assert rec.rotations == 1
    assert [p.name for p in rotated_segments(path)] == ["rec.jsonl.4", "rec.jsonl.5"]
    assert [e.batch_id for e in read_recording(tmp_path / "rec.jsonl.5")] == [0, 1]


def test_keep_one(tmp_path):
    path = tmp_path / "rec.jsonl"
    with JsonlRecorder(path, header=HEADER, max_bytes=1, keep=1) as rec:
        for i in range(4):
            rec.write(_progress(i))
    assert rec.rotations == 4 and [p.name for p in rotated_segments(path)] == ["rec.jsonl.4"]
    assert [e.batch_id for e in read_recording(path)] == [3]


def test_flush_every_n_events(tmp_path):
    path = tmp_path / "rec.jsonl"
    rec = JsonlRecorder(path, header=HEADER, flush_every=3)
    assert path.read_bytes() == encode(HEADER)  # the header is on disk at once
    rec.write(_progress(0))
    rec.write(_progress(1))
    assert list(read_recording(path)) == []
    rec.write(_progress(2))
    assert [e.batch_id for e in read_recording(path)] == [0, 1, 2]
    rec.write(_progress(3))
    rec.flush()
    assert [e.batch_id for e in read_recording(path)] == [0, 1, 2, 3]
    rec.close()
    rec.close()
    rec.flush()  # closed: a no-op, no error
    assert not rec.write(_progress(4)) and rec.written == 4


def test_a_stream_recorder_never_rotates_and_is_not_closed(tmp_path):
    out = io.BytesIO()
    rec = JsonlRecorder("-", header=HEADER, max_bytes=1, stream=out)
    assert rec.path is None and rec.max_bytes is None
    rec(_progress(0))  # an EventBus sink
    rec.close()
    assert not out.closed and rec.rotations == 0
    assert out.getvalue() == encode(HEADER) + out.getvalue().splitlines(keepends=True)[1]
    assert decode(out.getvalue().splitlines()[1]).batch_id == 0


def _write(path, *lines: bytes) -> None:
    path.write_bytes(b"".join(lines))


def test_detect_format(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    assert detect_format(d) == "eventlog"
    (tmp_path / "x.gz").write_bytes(b"whatever")
    assert detect_format(tmp_path / "x.gz") == "eventlog"
    garbage = b"{garbage\n\n"
    _write(tmp_path / "r", garbage, encode(HEADER))
    assert detect_format(tmp_path / "r") == "recording"
    _write(tmp_path / "e", garbage, json.dumps(LINES[0]).encode() + b"\n")
    assert detect_format(tmp_path / "e") == "eventlog"
    _write(tmp_path / "half-e", b'{"Event":"SparkListenerLogStart","Spark Vers')
    assert detect_format(tmp_path / "half-e") == "eventlog"
    _write(tmp_path / "half-e2", b'  {"Block": 1, "Event": "SparkListenerLogStart", "Spark')
    assert detect_format(tmp_path / "half-e2") == "eventlog"
    _write(tmp_path / "half-r", b'{"v":1,"kind":"head')
    assert detect_format(tmp_path / "half-r") == "recording"
    _write(tmp_path / "empty")
    assert detect_format(tmp_path / "empty") == "recording"
    _write(tmp_path / "first-decides", b'{"v":1,"kind":"hea\n{garbage\n')
    assert detect_format(tmp_path / "first-decides") == "recording"
    _write(tmp_path / "spaced", b'{"Event" : "SparkListenerLogStart", "Spark')
    assert detect_format(tmp_path / "spaced") == "eventlog"
    _write(tmp_path / "event-192", b"x" * 192 + b'"Event":1')  # '"Event":' inside the first 200 bytes
    assert detect_format(tmp_path / "event-192") == "eventlog"
    for name, data in (("blank", b"\n\n"), ("text", b"hello\n"), ("event-late", b"x" * 193 + b'"Event":1'),
                       ("list", b"[1, 2]\n"), ("dict", b'{"a": 1}\n'), ("Kind", b'{"KIND"'), ("second", b'{garbage\n{"v":1,"kind":"hea')):
        _write(tmp_path / name, data)
        with pytest.raises(EventSourceError) as e:
            detect_format(tmp_path / name)
        assert str(e.value) == f"{tmp_path / name}: neither a streamwatch recording nor a Spark event log"
    with pytest.raises(EventSourceError, match=r"missing: no such file or directory$"):
        detect_format(tmp_path / "missing")
    if Path("/proc/self/mem").is_file():  # a regular file whose read fails (EIO): the OS's words
        with pytest.raises(EventSourceError, match=r"^/proc/self/mem: Input/output error$"):
            detect_format(Path("/proc/self/mem"))
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(EventSourceError, match=r"fifo: not a regular file$"):
        detect_format(tmp_path / "fifo")


def test_detect_format_looks_at_the_first_lines_only(tmp_path):
    within = b"{bad\n" * (DETECT_LINES - 1) + encode(HEADER)
    _write(tmp_path / "within", within)
    assert detect_format(tmp_path / "within") == "recording"
    _write(tmp_path / "beyond", b"{bad\n" * DETECT_LINES + encode(HEADER))
    with pytest.raises(EventSourceError, match="neither"):
        detect_format(tmp_path / "beyond")


def test_the_report_counts_every_bad_line_and_keeps_five(tmp_path):
    path = tmp_path / "rec.jsonl"
    lines = [encode(HEADER), b"\n"] + [b"{bad %d\n" % i for i in range(7)]
    lines += [encode(RecordingHeader(9, app={"appId": "later"})), encode(UnsupportedEvent("c", "r", 1))]
    lines += [b'{"v":1,"kind":"future"}\n', encode(EVENTS[0]), encode(EVENTS[1]).rstrip(b"\n")]
    _write(path, *lines)
    report = ReadReport()
    got = list(read_recording(path, report))
    assert got == [UnsupportedEvent("c", "r", 1), EVENTS[0]]
    assert (report.bad_lines, report.unknown, report.unsupported) == (8, 1, 1)
    assert report.header.app == {"appId": "a-1"}  # the first header wins
    assert len(report.problems) == 5 and report.problems[0].startswith("rec.jsonl:3: ")
    report = ReadReport()
    list(recording_lines(io.BytesIO(b"\n".join(lines[10:]) + b""), report, "x"))
    assert report.problems == ["x:7: truncated last line"]


def test_segments_without_the_active_file(tmp_path):
    (tmp_path / "rec.jsonl.1").write_bytes(encode(HEADER) + b"{bad\n" + encode(EVENTS[0]))
    report = ReadReport()
    assert list(read_recording(tmp_path / "rec.jsonl", report)) == [EVENTS[0]]
    assert report.problems[0].startswith("rec.jsonl.1:2: ")  # the segment and line of a bad line
    assert list(read_events(tmp_path / "rec.jsonl")) == [EVENTS[0]]
    with pytest.raises(EventSourceError) as e:
        list(read_recording(tmp_path / "other.jsonl"))
    assert str(e.value) == f"{tmp_path / 'other.jsonl'}: no such file"


def _follow(path, want: int, report: ReadReport | None = None, poll_s: float = 0.02) -> Follower:
    """Follow ``path`` (``read_events``, its format chosen now) until ``want`` objects arrived."""
    return Follower(lambda stop: read_events(path, report, follow=True, stop=stop, poll_s=poll_s), want)


def test_follow_waits_for_a_half_written_first_line(tmp_path):
    path = tmp_path / "rec.jsonl"
    line = encode(HEADER)
    path.write_bytes(line[:10])  # neither recording nor event log can be told yet
    report = ReadReport()
    f = _follow(path, 2, report, poll_s=0.01)  # chosen now, half line
    with open(path, "ab") as fh:
        fh.write(line[10:] + encode(EVENTS[0]))
    assert f.first.wait(20)
    with open(path, "ab") as fh:  # still followed once the first line decided the format
        fh.write(encode(EVENTS[2]))
    f.finish()
    assert f.seen == [EVENTS[0], EVENTS[2]]
    assert report.header == HEADER


def test_follow_a_file_that_does_not_exist_yet(tmp_path):
    path = tmp_path / "later.jsonl"
    report = ReadReport()
    f = _follow(path, 2, report)
    with JsonlRecorder(path, header=HEADER) as rec:
        rec.write(EVENTS[0])
        assert f.first.wait(20)
        with open(path, "ab") as fh:
            fh.write(b"{bad\n")  # a line another writer broke
        rec.write(EVENTS[2])
    f.finish()
    assert f.seen == [EVENTS[0], EVENTS[2]] and isinstance(f.seen[0], QueryStarted)
    assert report.bad_lines == 1 and report.problems[0].startswith("later.jsonl: ")


def test_follow_an_event_log_file(tmp_path):
    path = tmp_path / "app-1"
    path.write_bytes(json.dumps(LINES[0]).encode() + b"\n" + json.dumps(LINES[3]).encode() + b"\n")
    f = _follow(path, 2)
    assert f.first.wait(20)  # Spark appends while we follow
    with open(path, "ab") as fh:
        fh.write(json.dumps(LINES[6]).encode() + b"\n")
    f.finish()
    assert [type(e) for e in f.seen] == [QueryStarted, QueryIdle]


def test_unrecordable_objects_are_ignored_and_times_are_now(tmp_path):
    before = int(time.time() * 1000)
    rec = JsonlRecorder(tmp_path / "a" / "b" / "rec.jsonl")  # folders are created
    progress = _progress(0)
    assert not rec.write(progress.sources[0])  # a model part with to_dict but no event kind
    assert not rec.write(progress.sink)
    assert rec.write(progress) and rec.written == 1
    rec.close()
    after = int(time.time() * 1000)
    assert before <= rec.header.time_ms <= after  # the default header's time: now, epoch ms
    t = json.loads((tmp_path / "a" / "b" / "rec.jsonl").read_bytes().splitlines()[1])["t"]
    assert before <= t <= after  # recorded at write time, epoch ms


def test_the_next_rotation_counts_from_the_fresh_header(tmp_path):
    path = tmp_path / "rec.jsonl"
    longer, shorter = _progress(10), _progress(0)  # "batchId":10 is one byte longer
    limit = len(encode(HEADER)) + len(encode(longer, recorded_ms=1_700_000_000_000))
    with JsonlRecorder(path, header=HEADER, max_bytes=limit) as rec:
        rec.write(longer)
        assert rec.rotations == 1
        rec.write(shorter)  # header + shorter is one byte under the limit
        assert rec.rotations == 1
        rec.write(shorter)
        assert rec.rotations == 2


def test_recording_to_a_pipe(tmp_path):
    r, w = os.pipe()
    with open(r, "rb") as out, open(w, "wb") as pipe:  # `streamwatch log -o - | …`: no tell() on a pipe
        with JsonlRecorder("-", header=HEADER, stream=pipe) as rec:
            rec.write(EVENTS[0])
        assert not pipe.closed
        pipe.close()
        assert [decode(line) for line in out.read().splitlines()] == [HEADER, EVENTS[0]]


def test_follow_an_event_longer_than_one_read_and_blank_lines_in_segments(tmp_path):
    path = tmp_path / "rec.jsonl"
    big = QueryProgress.from_dict({**PROGRESS, "batchId": 5, "name": "q" * 100_000})  # > the 64 KiB read size
    (tmp_path / "rec.jsonl.1").write_bytes(encode(HEADER) + b"\n" + encode(EVENTS[0]) + b"  \n")
    report = ReadReport()
    f = _follow(path, 2, report)
    assert f.first.wait(20)  # the rotated segment is read before the active file exists
    with JsonlRecorder(path, header=HEADER) as rec:
        rec.write(big)
    f.finish()
    assert f.seen == [EVENTS[0], big]
    assert (report.bad_lines, report.header) == (0, HEADER)
