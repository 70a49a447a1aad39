"""Spark event logs: plain, gzip, zstd, lz4 (lz4-java framing), rolling directories, legacy
2.0.x lines from Spark's own test resources, redaction, Jackson's shape of the progress."""

from __future__ import annotations

import gzip
import json

import pytest
import zstandard

from streamwatch.events.eventlog import read_event_log
from streamwatch.events.reader import EventSourceError, ReadReport, detect_format, read_events
from streamwatch.model.events import QueryIdle, QueryProgress, QueryStarted, QueryTerminated, UnsupportedEvent
from tests.helpers.spark_codecs import lz4java

P = "org.apache.spark.sql.streaming.StreamingQueryListener$"
QID, RUN = "20ec6e44-e858-4646-b366-6f8cf24e9d42", "143a4659-fb71-40db-b5a0-7a8cfeedc7ec"
# Jackson's serialisation of StreamingQueryProgress, as Spark 4.2 writes it into event logs:
# offsets are JSON *strings* and the derived top-level numInputRows/rates are absent.
JACKSON_PROGRESS = {
    "id": QID, "runId": RUN, "name": "tiny", "timestamp": "2026-11-20T22:06:28.438Z", "batchId": 1,
    "batchDuration": 1905, "durationMs": {"triggerExecution": 1904, "addBatch": 1164}, "eventTime": {},
    "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 3, "numRowsUpdated": 3,
                        "allUpdatesTimeMs": 178, "numRowsRemoved": 0, "allRemovalsTimeMs": 0, "commitTimeMs": 160,
                        "memoryUsedBytes": 2000, "numRowsDroppedByWatermark": 0, "numShufflePartitions": 2,
                        "numStateStoreInstances": 2, "customMetrics": {"loadedMapCacheHitCount": 4}}],
    "sources": [{"description": "FileStreamSource[file:/tmp/in]", "startOffset": "{\"logOffset\":0}",
                 "endOffset": "{\"logOffset\":1}", "latestOffset": None, "numInputRows": 10,
                 "inputRowsPerSecond": 0.5803156917363046, "processedRowsPerSecond": 5.2493438320209975, "metrics": {}}],
    "sink": {"description": "NoopTable", "numOutputRows": 3, "metrics": {}}, "observedMetrics": {},
}
LINES = [
    {"Event": "SparkListenerLogStart", "Spark Version": "4.2.0"},
    {"Event": "SparkListenerEnvironmentUpdate", "Spark Properties": {"spark.master": "local[2]",
     "spark.hadoop.fs.s3a.access.key": "AKIA123", "spark.my.password": "hunter2"}},
    {"Event": "SparkListenerApplicationStart", "App Name": "tiny-app", "App ID": "local-17", "Timestamp": 1795212355882},
    {"Event": P + "QueryStartedEvent", "id": QID, "runId": RUN, "name": "tiny",
     "timestamp": "2026-11-20T22:06:10.516Z", "jobTags": []},
    {"Event": "SparkListenerJobStart", "Job ID": 0, "Stage Infos": []},
    {"Event": P + "QueryProgressEvent", "progress": JACKSON_PROGRESS},
    {"Event": P + "QueryIdleEvent", "id": QID, "runId": RUN, "timestamp": "2026-11-20T22:06:40.000Z"},
    {"Event": P + "QueryTerminatedEvent", "id": QID, "runId": RUN, "exception": None, "errorClassOnException": None},
]
DATA = "".join(json.dumps(line) + "\n" for line in LINES).encode()


def _check(events, report):
    assert [type(e) for e in events] == [QueryStarted, QueryProgress, QueryIdle, QueryTerminated]
    p = events[1]
    assert (p.batch_id, p.num_input_rows, p.name) == (1, 10, "tiny")  # numInputRows derived from sources
    assert p.input_rows_per_second == pytest.approx(0.5803156917363046)
    assert p.sources[0].start_offset == '{"logOffset":0}'
    assert p.state_operators[0].custom_metrics == {"loadedMapCacheHitCount": 4}
    assert not events[3].failed
    h = report.header
    assert h.app["sparkVersion"] == "4.2.0" and h.app["appId"] == "local-17" and h.app["master"] == "local[2]"
    assert h.conf["spark.hadoop.fs.s3a.access.key"] == "*********" and h.conf["spark.my.password"] == "*********"


@pytest.mark.parametrize("suffix,compress", [
    ("", lambda b: b),
    (".gz", gzip.compress),
    (".zstd", lambda b: zstandard.ZstdCompressor().compress(b)),
    (".lz4", lambda b: lz4java(b, block=64)),  # many small blocks, some stored raw
    (".lz4", lambda b: lz4java(b, block=32 * 1024)),  # Spark's default block size: an odd level (5) in the token
])
def test_every_codec_spark_writes(tmp_path, suffix, compress):
    path = tmp_path / f"local-17{suffix}"
    path.write_bytes(compress(DATA))
    assert detect_format(path) == "eventlog"
    report = ReadReport()
    _check(list(read_events(path, report)), report)
    assert report.bad_lines == 0


def test_rolling_directory_reads_files_in_index_order(tmp_path):
    d = tmp_path / "eventlog_v2_local-17"
    d.mkdir()
    (d / "appstatus_local-17").write_bytes(b"")
    zc = zstandard.ZstdCompressor()
    half = len(LINES) // 2
    for index, part in ((10, LINES[half:]), (2, LINES[:half])):  # index 10 sorts after 2 numerically
        (d / f"events_{index}_local-17.zstd").write_bytes(zc.compress("".join(json.dumps(x) + "\n" for x in part).encode()))
    report = ReadReport()
    _check(list(read_events(d, report)), report)
    report = ReadReport()
    _check(list(read_events(tmp_path, report)), report)  # spark.eventLog.dir with one application


def test_truncated_zstd_of_a_running_application_is_reported_not_raised(tmp_path):
    path = tmp_path / "events_1_local-17.zstd.inprogress"
    path.write_bytes(zstandard.ZstdCompressor().compress(DATA)[:-7])
    report = ReadReport()
    list(read_event_log(path, report))
    assert report.bad_lines == 1 and "truncated" in report.problems[0]


def test_nan_tokens_and_failed_termination(tmp_path):
    path = tmp_path / "log"
    path.write_text(
        '{"Event":"' + P + 'QueryProgressEvent","progress":{"id":"a","runId":"b","batchId":0,'
        '"sources":[{"description":"s","numInputRows":0,"inputRowsPerSecond":NaN,"processedRowsPerSecond":"NaN"}]}}\n'
        + json.dumps({"Event": P + "QueryTerminatedEvent", "id": "a", "runId": "b",
                      "exception": "org.apache.spark.SparkArithmeticException: [DIVIDE_BY_ZERO] …",
                      "errorClassOnException": "DIVIDE_BY_ZERO"}) + "\n"
        + '{"Event":"' + P + 'QueryProgressEvent","progress":{"batchId":1}}\n'  # no ids: counted
    )
    report = ReadReport()
    p, t = list(read_events(path, report))
    assert p.input_rows_per_second is None and p.processed_rows_per_second is None
    assert t.failed and t.error_class == "DIVIDE_BY_ZERO"
    assert report.bad_lines == 1


@pytest.mark.corpus
@pytest.mark.parametrize("version,timestamp", [("2.0.0", 1477593059313), ("2.0.1", 1477701734609)])
def test_spark_2_0_event_lines_are_unsupported_legacy_events(corpus, version, timestamp):
    """EXPECTED.md §10: 3 streaming lines (QueryProgress, QueryTerminated ×2) that Spark's
    ReplayListenerBus skips, then SparkListenerApplicationEnd."""
    path = corpus / "spark" / f"query-event-logs-version-{version}.txt"
    report = ReadReport()
    events = list(read_events(path, report))
    assert all(isinstance(e, UnsupportedEvent) for e in events)
    assert [e.event_class.rsplit("$", 1)[1] for e in events] == ["QueryProgress", "QueryTerminated", "QueryTerminated"]
    assert [e.line for e in events] == [1, 2, 3]
    assert "2.0.x" in events[0].reason
    assert report.unsupported == 3 and report.bad_lines == 0


def test_directory_with_several_applications_is_one_clear_error(tmp_path):
    for app in ("app-1", "app-2"):
        (tmp_path / app).write_bytes(DATA)
    with pytest.raises(EventSourceError, match="holds 2 applications"):
        list(read_events(tmp_path))
    snappy = tmp_path / "x" / "app.snappy"
    snappy.parent.mkdir()
    snappy.write_bytes(b"\x82SNAPPY\x00")
    with pytest.raises(EventSourceError, match="snappy-compressed event logs are not supported"):
        list(read_events(snappy))
