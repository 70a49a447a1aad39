"""Spark event logs at their edges: the header built from the application events, the lines
that are not streaming events, the messages a user reads for bad lines and bad folders, and
``follow`` on a plain event-log file. (Written against the mutation run of bench/MUTATION.md.)"""

from __future__ import annotations

import json

import pytest

from streamwatch.events.eventlog import event_log_files, parse_line, read_event_log
from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from streamwatch.model.events import QueryIdle, QueryProgress, QueryStarted, UnsupportedEvent
from tests.helpers.follow import Follower
from tests.unit.test_eventlog import DATA, LINES, QID, RUN, P


def _log(tmp_path, *lines: object, name: str = "app-1") -> object:
    path = tmp_path / name
    path.write_bytes(b"".join((x if isinstance(x, bytes) else json.dumps(x).encode()) + b"\n" for x in lines))
    return path


def test_the_header_carries_the_application_facts(tmp_path):
    report = ReadReport()
    events = list(read_event_log(_log(tmp_path, *LINES), report))  # read once: no follow by default
    assert len(events) == 4
    h = report.header
    assert h.source == "eventlog"
    assert h.time_ms == 1795212355882  # SparkListenerApplicationStart's Timestamp (epoch ms)
    assert h.app == {"sparkVersion": "4.2.0", "master": "local[2]", "appName": "tiny-app", "appId": "local-17"}
    assert h.conf["spark.master"] == "local[2]"


def test_application_start_without_a_timestamp_is_time_zero(tmp_path):
    report = ReadReport()
    list(read_events(_log(tmp_path, {"Event": "SparkListenerApplicationStart", "App Name": "a", "App ID": "b"},
                          LINES[3]), report))
    assert report.header.time_ms == 0 and report.header.app == {"appName": "a", "appId": "b"}
    assert report.header.conf == {}  # no SparkListenerEnvironmentUpdate


def test_no_application_events_no_header(tmp_path):
    report = ReadReport()
    job = {"Event": "SparkListenerJobStart", "Job ID": 0, "Stage Infos": []}
    assert len(list(read_events(_log(tmp_path, job, LINES[3], job), report))) == 1
    assert report.header is None
    report = ReadReport()
    list(read_events(_log(tmp_path, LINES[0], LINES[3], name="app-2"), report))
    assert report.header.time_ms == 0 and report.header.conf == {} and report.header.app == {"sparkVersion": "4.2.0"}


def test_spark_properties_as_key_value_pairs_are_redacted(tmp_path):
    report = ReadReport()
    env = {"Event": "SparkListenerEnvironmentUpdate",
           "Spark Properties": [["spark.master", "yarn"], ["spark.my.password", "hunter2"]]}
    list(read_events(_log(tmp_path, env, LINES[3]), report))
    assert report.header.conf == {"spark.master": "yarn", "spark.my.password": "*********"}
    assert report.header.app == {"master": "yarn"}


def test_a_malformed_application_event_is_skipped_not_raised(tmp_path):
    report = ReadReport()
    bad_start = {"Event": "SparkListenerApplicationStart", "App Name": "a", "Timestamp": "soon"}
    events = list(read_events(_log(tmp_path, LINES[0], bad_start, LINES[3]), report))
    assert [type(e) for e in events] == [QueryStarted]
    assert report.header.app == {"sparkVersion": "4.2.0"} and report.bad_lines == 0


def test_non_streaming_and_unknown_listener_lines(tmp_path):
    report = ReadReport()
    other = {"Event": P + "QueryRestartedEvent", "id": QID}
    not_listener = {"Event": "com.example.MyEvent", "note": "StreamingQueryListener$ in a string"}
    events = list(read_events(_log(tmp_path, LINES[3], not_listener, other, other), report))
    assert isinstance(events[0], QueryStarted) and len(events) == 3
    assert events[2].line == 4
    u = events[1]
    assert isinstance(u, UnsupportedEvent)
    assert (u.event_class, u.reason, u.line) == (P + "QueryRestartedEvent", "unknown streaming listener event", 3)
    assert report.unsupported == 2 and report.bad_lines == 0
    legacy = parse_line(json.dumps({"Event": P + "QueryProgress"}).encode(), 7)
    assert legacy.line == 7 and legacy.reason.startswith("Spark 2.0.x listener event")
    assert parse_line(json.dumps({"Event": P + "QueryProgress"}).encode()).line == 0  # 0: line unknown
    assert parse_line(b'{"Event":"SparkListenerJobStart"}') is None
    assert parse_line(b'["StreamingQueryListener$"]') is None


def test_bad_streaming_lines_name_file_line_and_fault(tmp_path):
    report = ReadReport()
    deep = b'{"Event":"' + P.encode() + b'QueryIdleEvent","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    lines = [
        {"Event": P + "QueryProgressEvent", "progress": 5},
        {"Event": P + "QueryIdleEvent", "runId": RUN},
        {"Event": P + "QueryProgressEvent", "progress": {"id": "a", "runId": "b", "batchId": 0, "sources": 3}},
        b'{"Event":"' + P.encode() + b'QueryIdleEvent","id":"\xff"}',
        deep,
    ]
    assert list(read_events(_log(tmp_path, *lines, name="log"), report)) == []
    assert report.bad_lines == 5
    assert report.problems[0] == "log:1: QueryProgressEvent without its fields"
    assert report.problems[1] == "log:2: QueryIdleEvent without 'id'"
    assert report.problems[2].startswith("log:3: QueryProgressEvent with a malformed field (")
    assert report.problems[3] == "log:4: not JSON (UnicodeDecodeError)"
    assert report.problems[4] == "log:5: not JSON (RecursionError)"


def test_nan_in_a_streaming_line_is_read(tmp_path):
    line = ('{"Event":"' + P + 'QueryIdleEvent","id":"a","runId":"b","timestamp":"t","x":NaN}').encode()
    [idle] = list(read_events(_log(tmp_path, line)))
    assert idle == QueryIdle("a", "b", "t")


def test_event_log_folders(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / ".hidden").write_bytes(DATA)
    (empty / "app-1.crc").write_bytes(b"x")
    with pytest.raises(EventSourceError, match=r"empty: empty directory, no event log in it$"):
        event_log_files(empty)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(7):
        (many / f"app-{i}").write_bytes(DATA)
    with pytest.raises(EventSourceError) as e:
        event_log_files(many)
    assert str(e.value) == f"{many}: holds 7 applications' event logs (app-0, app-1, app-2, app-3, app-4…); pass one of them"
    one = tmp_path / "one"
    one.mkdir()
    (one / ".app-1.inprogress.crc").write_bytes(b"")
    (one / "app-1.crc").write_bytes(b"")
    (one / "app-1").write_bytes(DATA)
    assert event_log_files(one) == [one / "app-1"]
    rolling = tmp_path / "eventlog_v2_app"
    (rolling / "events_3_app").mkdir(parents=True)  # a folder named like a part is not one
    (rolling / "events_2_app").write_bytes(DATA)
    (rolling / "events_10_app").write_bytes(DATA)
    (rolling / "events_1_app").write_bytes(DATA)
    assert [p.name for p in event_log_files(rolling)] == ["events_1_app", "events_2_app", "events_10_app"]


def test_a_missing_event_log_file_is_one_clear_error(tmp_path):
    with pytest.raises(EventSourceError) as e:
        list(read_event_log(tmp_path / "app-9"))
    assert str(e.value) == f"{tmp_path / 'app-9'}: no such file"


def test_follow_a_plain_event_log_numbers_its_lines(tmp_path):
    path = tmp_path / "app-1.inprogress"
    path.write_bytes(b"".join(json.dumps(x).encode() + b"\n" for x in LINES[:4]))
    report = ReadReport()
    f = Follower(lambda stop: read_event_log(path, report, follow=True, stop=stop, poll_s=0.02), 3)
    assert f.first.wait(20)  # the query start is read before Spark appends the rest
    with open(path, "ab") as fh:
        fh.write(json.dumps({"Event": P + "QueryProgressEvent", "progress": 1}).encode() + b"\n")
        fh.write(json.dumps(LINES[5]).encode() + b"\n")
        fh.write(json.dumps({"Event": P + "QueryWhatEvent"}).encode() + b"\n")
    f.finish()
    seen = f.seen
    assert [type(e) for e in seen] == [QueryStarted, QueryProgress, UnsupportedEvent]
    assert seen[2].line == 7  # line numbers count every line of the file, from 1
    assert report.problems == ["app-1.inprogress:5: QueryProgressEvent without its fields"]
    assert report.header.app["appId"] == "local-17"
