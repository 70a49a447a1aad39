"""Event model: parsing Spark's progress JSON (shape from StreamingQueryProgress.json)."""

from __future__ import annotations

from streamwatch.model.events import QueryProgress, QueryTerminated, iso_to_epoch_ms

PROGRESS = {
    "id": "8c5d2c8e-1d4c-4b2d-9a1e-111111111111",
    "runId": "4a0d0c8e-2d4c-4b2d-9a1e-222222222222",
    "name": "flights_gold",
    "timestamp": "2026-11-20T21:57:09.123Z",
    "batchId": 7,
    "batchDuration": 1543,
    "numInputRows": 230,
    "inputRowsPerSecond": 115.0,
    "processedRowsPerSecond": "NaN",
    "durationMs": {"addBatch": 1200, "getBatch": 3, "latestOffset": 5, "queryPlanning": 40,
                   "triggerExecution": 1543, "walCommit": 60},
    "eventTime": {"avg": "2013-01-01T12:00:00.000Z", "max": "2013-01-01T16:59:00.000Z",
                  "min": "2013-01-01T10:15:00.000Z", "watermark": "2013-01-01T15:59:00.000Z"},
    "stateOperators": [{
        "operatorName": "stateStoreSave", "numRowsTotal": 40, "numRowsUpdated": 12,
        "allUpdatesTimeMs": 30, "numRowsRemoved": 3, "allRemovalsTimeMs": 1, "commitTimeMs": 90,
        "memoryUsedBytes": 90000, "numRowsDroppedByWatermark": 2, "numShufflePartitions": 4,
        "numStateStoreInstances": 4,
        "customMetrics": {"loadedMapCacheHitCount": 8, "stateOnCurrentVersionSizeBytes": 4000},
    }],
    "sources": [{
        "description": "FileStreamSource[file:/tmp/landing]", "startOffset": {"logOffset": 6},
        "endOffset": {"logOffset": 7}, "latestOffset": None, "numInputRows": 230,
        "inputRowsPerSecond": 115.0, "processedRowsPerSecond": 149.1,
    }],
    "sink": {"description": "FileSink[/tmp/gold]", "numOutputRows": -1},
}


def test_progress_fields_and_units():
    p = QueryProgress.from_dict(PROGRESS)
    assert (p.batch_id, p.batch_duration, p.num_input_rows) == (7, 1543, 230)
    assert p.input_rows_per_second == 115.0
    assert p.processed_rows_per_second is None  # Spark's "NaN": no rate
    assert p.duration_ms["addBatch"] == 1200
    assert p.watermark == "2013-01-01T15:59:00.000Z"
    assert p.watermark_ms == iso_to_epoch_ms("2013-01-01T15:59:00Z") == 1357055940000
    op = p.state_operators[0]
    assert (op.operator_name, op.num_rows_total, op.num_rows_dropped_by_watermark) == ("stateStoreSave", 40, 2)
    assert op.custom_metrics["stateOnCurrentVersionSizeBytes"] == 4000
    src = p.sources[0]
    assert (src.start_offset, src.end_offset, src.latest_offset) == ('{"logOffset":6}', '{"logOffset":7}', None)
    assert p.sink is not None and p.num_output_rows == -1
    assert p.timestamp_ms == 1795211829123


def test_progress_round_trips_to_spark_json():
    p = QueryProgress.from_dict(PROGRESS)
    assert p.to_dict() == PROGRESS
    assert QueryProgress.from_dict(p.to_dict()) == p


def test_missing_fields_default_and_bad_timestamps_do_not_raise():
    p = QueryProgress.from_dict({"id": "a", "runId": "b"})
    assert (p.batch_id, p.sources, p.sink, p.watermark, p.timestamp_ms) == (0, (), None, None, None)
    assert iso_to_epoch_ms("not a time") is None


def test_terminated_failed_flag():
    assert QueryTerminated("a", "b", None, exception="boom").failed
    assert not QueryTerminated("a", "b", None).failed
