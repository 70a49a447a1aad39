"""SampleHistory, the column-wise ring of chart samples: it reads back what a bounded deque of
the same samples holds (the oracle), in order, through indexing, slicing, iteration and resizing,
at 152 bytes a sample (issue 18: flat RSS with 100 queries)."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamwatch.analysis.board import QueryBoard, sample_of
from streamwatch.analysis.samples import OPERATIONS, Sample, SampleHistory
from streamwatch.model.events import QueryProgress
from streamwatch.model.progress import OffsetsBehindLatest

longs = st.integers(-(2**63) + 1, 2**63 - 1)
rates = st.none() | st.floats(allow_nan=False)
behind = st.none() | st.builds(OffsetsBehindLatest, longs, st.floats(allow_nan=False), longs)
samples = st.builds(
    Sample, longs, st.none() | longs, rates, rates, longs,
    st.tuples(*[longs] * len(OPERATIONS)), st.none() | longs, longs, longs, st.none() | longs, st.none() | longs, behind)


@given(st.integers(1, 12), st.lists(samples, max_size=40), st.integers(1, 12))
def test_reads_back_what_a_bounded_deque_holds(maxlen, appended, resized):
    history, oracle = SampleHistory(maxlen), deque(maxlen=maxlen)
    for s in appended:
        history.append(s)
        oracle.append(s)
    assert len(history) == len(oracle) and history.maxlen == maxlen
    assert list(history) == list(oracle)
    assert [history[i] for i in range(-len(oracle), len(oracle))] == list(oracle) * 2
    assert history[-3:] == list(oracle)[-3:] and history[1::2] == list(oracle)[1::2]
    assert history.nbytes == 152 * len(oracle)
    assert list(history.resized(resized)) == list(deque(oracle, maxlen=resized))


def test_none_nan_and_values_past_int64():
    s = Sample(2**70, None, float("nan"), None, -(2**70), (1, 2, 3, 4, 5, 6), None, 0, -1)
    (back,) = SampleHistory(1, [s])
    assert back == Sample(2**63 - 1, None, None, None, -(2**63) + 1, (1, 2, 3, 4, 5, 6), None, 0, -1, None, None, None)


def test_an_index_outside_raises_index_error_and_maxlen_below_one_value_error():
    h = SampleHistory(3, [sample_of(QueryProgress.from_dict({"id": "a", "runId": "r", "batchId": 7}))])
    assert h[0].batch_id == h[-1].batch_id == 7
    with pytest.raises(IndexError):
        h[1]
    with pytest.raises(IndexError):
        h[-2]
    with pytest.raises(ValueError):
        SampleHistory(0)


def test_a_progress_event_reads_back_as_its_sample():
    """sample_of a full progress event (state, watermark, a Kafka source) survives the ring."""
    p = QueryProgress.from_dict({
        "id": "a", "runId": "r", "name": "q", "batchId": 3, "timestamp": "2026-01-01T10:00:00.000Z",
        "batchDuration": 812, "numInputRows": 40, "inputRowsPerSecond": 12.5, "processedRowsPerSecond": 50.0,
        "durationMs": {"addBatch": 700, "walCommit": 30},
        "eventTime": {"max": "2026-01-01T09:59:00.000Z", "watermark": "2026-01-01T09:58:00.000Z"},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 9, "memoryUsedBytes": 4096}],
        "sources": [{"description": "KafkaV2[Subscribe[clicks]]", "numInputRows": 40,
                     "metrics": {"minOffsetsBehindLatest": "0", "avgOffsetsBehindLatest": "2.5",
                                 "maxOffsetsBehindLatest": "5"}}],
        "sink": {"description": "FileSink[x]", "numOutputRows": 40}})
    expected = sample_of(p)
    assert expected.offsets_behind == OffsetsBehindLatest(0, 2.5, 5) and expected.watermark_gap_ms == 60_000
    assert list(SampleHistory(2, [expected])) == [expected]


def test_a_hundred_queries_hold_their_budget_in_arrays():
    """The board's history budget in bytes: 100 queries × 1,000 samples = 15.2 MB of arrays."""
    board = QueryBoard([f"q{i:03d}" for i in range(100)])
    for b in range(1_100):
        for i in range(100):
            board.apply(QueryProgress.from_dict({"id": f"id{i}", "runId": "r", "name": f"q{i:03d}", "batchId": b}))
    assert {len(r.history) for r in board.rows.values()} == {1_000}
    assert sum(r.history.nbytes for r in board.rows.values()) == 100 * 1_000 * 152
    assert [s.batch_id for s in board.rows["q042"].history[-2:]] == [1_098, 1_099]
