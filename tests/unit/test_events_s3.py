"""Recordings and Spark event logs on S3 — against a real S3 API (moto's standalone server on
127.0.0.1, started here) through fsspec/s3fs: segment objects written by the recorder, read
back, followed by ``ReplayBackend`` while they appear, and event logs read from a bucket."""

from __future__ import annotations

import threading

import pytest
from click.testing import CliRunner

from streamwatch.events.reader import EventSourceError, ReadReport, read_events
from streamwatch.events.segments import SegmentRecorder, open_recorder
from streamwatch.model.events import QueryProgress, QueryStarted
from tests.unit.test_eventlog import DATA, _check
from tests.unit.test_jsonl import _progress


@pytest.fixture(scope="module")
def s3(s3_server):
    """The module's moto S3 server (``s3_server``, tests/conftest.py) with bucket ``events``;
    its boto3 client."""
    s3_server.client.create_bucket(Bucket="events")
    return s3_server.client


def _keys(client, prefix: str) -> list[str]:
    return sorted(o["Key"] for o in client.list_objects_v2(Bucket="events", Prefix=prefix).get("Contents", []))


def test_recording_is_stored_as_segment_objects_and_read_back(s3):
    url = "s3://events/job1/events.jsonl"
    with open_recorder(url, max_bytes=4000) as rec:
        assert isinstance(rec, SegmentRecorder)
        for i in range(30):
            rec.write(_progress(i))
    keys = _keys(s3, "job1/")
    assert keys and all(k.startswith("job1/events.jsonl.") for k in keys) and len(keys) == rec.rotations >= 2
    before = {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="events")["Contents"]}
    report = ReadReport()
    assert [e.batch_id for e in read_events(url, report)] == list(range(30))
    assert report.bad_lines == 0 and report.header is not None
    assert {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket="events")["Contents"]} == before  # read-only


def test_replay_follows_new_segments_on_s3(s3):
    from streamwatch.backends.replay import ReplayBackend

    url = "s3://events/job2/events.jsonl"
    backend = ReplayBackend(url, speed=0, follow=True, poll_s=0.1)  # nothing there yet
    assert backend.plan.queries == ()
    got: list[object] = []
    arrived = threading.Condition()

    def emit(obj: object) -> None:
        with arrived:
            got.append(obj)
            arrived.notify_all()

    def delivered(batch_id: int) -> bool:
        return any(isinstance(o, QueryProgress) and o.batch_id == batch_id for o in got)

    backend.start(emit)
    try:
        rec = SegmentRecorder(url, segment_seconds=60)  # segments stored by flush() only
        rec.write(QueryStarted("q", "r", "2026-11-20T21:57:00.000Z", name="remote_bronze"))
        for i in range(3):
            rec.write(_progress(i))
            rec.flush()  # one segment object per event …
            with arrived:  # … and the follower delivers it before the next one exists
                assert arrived.wait_for(lambda i=i: delivered(i), 120), f"the follower never delivered batch {i}"
            assert not delivered(i + 1)
        rec.close()
        assert len(_keys(s3, "job2/")) >= 3
    finally:
        backend.stop()
    assert [o.batch_id for o in got if isinstance(o, QueryProgress)] == [0, 1, 2]
    assert any(isinstance(o, QueryStarted) and o.name == "remote_bronze" for o in got)
    again = ReplayBackend(url, speed=0)  # a finished recording lists its queries up front
    assert [q.query_name for q in again.plan.queries] == ["remote_bronze", "flights_gold"]


def test_spark_event_logs_in_a_bucket(s3):
    s3.put_object(Bucket="events", Key="spark-events/local-17", Body=DATA)
    report = ReadReport()
    _check(list(read_events("s3://events/spark-events/local-17", report)), report)
    # a rolling event-log folder (spark.eventLog.rolling.enabled=true)
    half = DATA.splitlines(keepends=True)
    s3.put_object(Bucket="events", Key="spark-events/eventlog_v2_local-18/appstatus_local-18", Body=b"")
    s3.put_object(Bucket="events", Key="spark-events/eventlog_v2_local-18/events_1_local-18",
                  Body=b"".join(half[:4]))
    s3.put_object(Bucket="events", Key="spark-events/eventlog_v2_local-18/events_2_local-18",
                  Body=b"".join(half[4:]))
    report = ReadReport()
    _check(list(read_events("s3://events/spark-events/eventlog_v2_local-18", report)), report)


def test_missing_bucket_or_object_is_one_clear_error(s3):
    with pytest.raises(OSError, match="bucket 'no-such-bucket' does not exist"):
        open_recorder("s3://no-such-bucket/job/events.jsonl")
    with pytest.raises(EventSourceError, match="no such object"):
        list(read_events("s3://events/nothing/events.jsonl"))
    from streamwatch.cli import main

    r = CliRunner().invoke(main, ["replay", "s3://events/nothing/events.jsonl"])
    assert r.exit_code == 4  # unreadable input
    assert r.stderr.strip().startswith("streamwatch replay: s3://events/nothing/events.jsonl: no such object")
    assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""


class _CountedStop(threading.Event):
    """A stop event that counts the follower's waits between looks (one per empty listing)."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0
        self.looked = threading.Condition()

    def wait(self, timeout=None):
        with self.looked:
            self.looks += 1
            self.looked.notify_all()
        return super().wait(timeout)


def test_follow_waits_for_a_recording_that_does_not_exist_yet(s3):
    url = "s3://events/job3/events.jsonl"
    stop = _CountedStop()
    seen: list[int] = []

    def follow() -> None:
        for e in read_events(url, follow=True, stop=stop, poll_s=0.05):
            seen.append(e.batch_id)
            stop.set()

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    with stop.looked:  # the follower listed the empty prefix twice and kept following
        assert stop.looked.wait_for(lambda: stop.looks >= 2, 60), "the follower never polled"
    assert seen == [] and t.is_alive()
    with SegmentRecorder(url) as rec:
        rec.write(_progress(41))
    t.join(60)
    assert seen == [41] and not t.is_alive()


def test_events_cli_summarises_a_recording_in_a_bucket(s3):
    from streamwatch.cli import main

    url = "s3://events/cli/events.jsonl"
    with open_recorder(url) as rec:
        for i in range(4):
            rec.write(_progress(i))
    result = CliRunner().invoke(main, ["events", url])
    assert result.exit_code == 0, result.output
    row = next(line.split() for line in result.output.splitlines() if line.startswith(_progress(0).name))
    assert row[3] == "4", result.output  # query, id, runs, batches …
