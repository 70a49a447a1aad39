"""`streamwatch.record()` options on the shared session: `app=` fields and redacted conf in
the header, used as a context manager, stop() twice, `max_bytes`/`keep` rotation of a local
file while a real query runs, the recording on S3 as segment objects (moto on loopback), and
one clear error (nothing left registered) for a path that cannot be written or bad settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamwatch.events.reader import ReadReport, read_events
from streamwatch.model.events import ListenerStats, QueryProgress, QueryStarted, QueryTerminated

pytestmark = pytest.mark.spark


def _land(folder: Path, n: int, rows: int = 40) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        tmp = folder / f".f{i}.tmp"
        tmp.write_text("\n".join(json.dumps({"k": j % 3, "v": j}) for j in range(rows)))
        tmp.rename(folder / f"f{i}.json")


def _run(spark, tmp_path: Path, name: str, files: int) -> object:
    """A file-source query over ``files`` files, one per batch, run to the end (availableNow)."""
    _land(tmp_path / "in", files)
    q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(tmp_path / "in"))
         .groupBy("k").count().writeStream.outputMode("update").format("noop").queryName(name)
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    q.awaitTermination(180)
    assert q.exception() is None
    return q


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_context_manager_header_fields_and_stop_twice(spark, tmp_path):
    import streamwatch

    path = tmp_path / "events.jsonl"
    seen: list = []
    with streamwatch.record(spark, path, app={"pipeline": "mine", "team": "ops"}, sinks=(seen.append,)) as rec:
        q = _run(spark, tmp_path, "sw_record_cm", 2)
    # leaving the block stopped it: the last line is the stats line, the file is complete
    last = _lines(path)[-1]
    assert last["kind"] == "stats"
    again = rec.stop()  # idempotent: nothing more written, same counters
    assert _lines(path)[-1] == last and again.dropped == 0
    header = _lines(path)[0]
    assert header["kind"] == "header"
    assert header["app"]["pipeline"] == "mine" and header["app"]["team"] == "ops"
    assert header["app"]["appId"] == spark.sparkContext.applicationId and header["app"]["sparkVersion"] == spark.version
    kinds = [type(e) for e in seen if getattr(e, "id", None) == q.id]
    assert kinds[0] is QueryStarted and kinds[-1] is QueryTerminated and QueryProgress in kinds


def test_max_bytes_rotates_and_keep_bounds_the_segments(spark, tmp_path):
    import streamwatch
    from streamwatch.events.jsonl import encode
    from streamwatch.spark.record import session_header

    header_bytes = len(encode(session_header(spark)))  # every segment starts with the header (the Spark conf)
    limit = header_bytes + 2_500  # one or two progress events per segment
    path = tmp_path / "events.jsonl"
    rec = streamwatch.record(spark, path, max_bytes=limit, keep=2)
    try:
        q = _run(spark, tmp_path, "sw_record_rotate", 6)
    finally:
        final = rec.stop()
    rotated = sorted(tmp_path.glob("events.jsonl.*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))
    assert len(rotated) == 2, [p.name for p in rotated]  # keep=2: the older segments were deleted
    first, second = (int(p.name.rsplit(".", 1)[1]) for p in rotated)
    assert second == first + 1 and first >= 2  # the newest two; numbering never restarts
    for p in [*rotated, path]:
        assert _lines(p)[0]["kind"] == "header"  # every segment is readable alone
    for p in rotated:
        assert p.stat().st_size >= limit  # rotated only once the limit was reached
    # the active path reads the kept segments, then itself: in order, ending with the stats
    report = ReadReport()
    objs = list(read_events(str(path), report))
    assert objs[-1] == final
    batches = [o.batch_id for o in objs if isinstance(o, QueryProgress) and o.id == q.id]
    assert batches and batches[-1] == q.lastProgress["batchId"]  # the newest progress is never lost
    assert batches == list(range(batches[0], batches[-1] + 1))  # the kept ones are contiguous


def test_recording_to_s3_is_written_as_segment_objects(spark, s3_server):
    import streamwatch

    s3_server.client.create_bucket(Bucket="recordings")
    url = "s3://recordings/job/events.jsonl"
    rec = streamwatch.record(spark, url, segment_seconds=60)
    try:
        # no query: only the header and the final stats
        pass
    finally:
        rec.stop()
    keys = [o["Key"] for o in s3_server.client.list_objects_v2(Bucket="recordings", Prefix="job/")["Contents"]]
    assert keys == ["job/events.jsonl.1"]
    report = ReadReport()
    objs = list(read_events(url, report))
    assert report.header is not None and report.header.app["appId"] == spark.sparkContext.applicationId
    assert isinstance(objs[-1], ListenerStats)


def test_unwritable_path_and_bad_settings_raise_and_leave_no_listener(spark, tmp_path):
    import streamwatch

    blocker = tmp_path / "file"
    blocker.write_text("")
    listeners_before = len(spark.sparkContext._jsc.sc().listenerBus().listeners())
    with pytest.raises(OSError):
        streamwatch.record(spark, blocker / "events.jsonl")
    with pytest.raises(ValueError, match="flush_every must be >= 1"):
        streamwatch.record(spark, tmp_path / "a.jsonl", flush_every=0)
    with pytest.raises(ValueError, match="max_bytes must be >= 1"):
        streamwatch.record(spark, tmp_path / "b.jsonl", max_bytes=0)
    assert len(spark.sparkContext._jsc.sc().listenerBus().listeners()) == listeners_before
