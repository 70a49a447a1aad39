"""The per-query summary behind ``streamwatch events`` (without ``--json``), folded from real
model objects: names, runs, batches, input rows, time span, failures — a query stopped by
streamwatch is not a failure — and legacy events counted apart (mutation testing found no
test reaching it in-process: bench/MUTATION.md)."""

from __future__ import annotations

from streamwatch.events.summary import summarize
from streamwatch.model.events import (
    ListenerStats,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
    UnsupportedEvent,
)


def _progress(qid: str, run: str, batch: int, second: int, rows: int, name: str | None = "bronze") -> QueryProgress:
    return QueryProgress.from_dict({"id": qid, "runId": run, "name": name, "batchId": batch, "numInputRows": rows,
                                    "timestamp": f"2026-01-01T10:00:{second:02d}.000Z"})


def test_summary_folds_each_query_by_id():
    objs = [
        QueryStarted("a", "a1", "2026-01-01T10:00:05.000Z", name="bronze"),
        _progress("a", "a1", 0, 7, 10),
        UnsupportedEvent("org.apache.spark.sql.streaming.StreamingQueryListener$QueryProgress", "Spark 2.0 shape", 3),
        _progress("a", "a1", 1, 6, 5, name=None),  # out of order; no name: the last name stays
        QueryTerminated("a", "a1", "2026-01-01T10:00:09.000Z", exception="boom"),
        QueryStarted("a", "a2", None, name="bronze_v2"),  # restarted under a new name, no timestamp
        _progress("a", "a2", 2, 20, 1, name="bronze_v2"),
        QueryTerminated("a", "a2", "2026-01-01T10:00:21.000Z", exception="stopped by us", stop_requested=True),
        QueryStarted("b", "b1", None),
        QueryIdle("b", "b1", None),
        QueryTerminated("b", "b1", None, exception="oom"),
        ListenerStats(published=1, delivered=1),  # not a query event: not counted
        "not an event",
    ]
    s = summarize(objs)
    assert s.events == 10 and s.unsupported == 1
    assert list(s.queries) == ["a", "b"]  # first-seen order
    a, b = s.queries["a"], s.queries["b"]
    assert a.name == "bronze_v2" and a.runs == {"a1", "a2"}
    assert a.batches == 3 and a.input_rows == 16
    assert (a.first_ms, a.last_ms) == (1767261605000, 1767261621000) and a.span_s == 16.0
    assert a.failures == 1 and a.last_exception == "boom"  # our own stop is not a failure
    assert b.name is None and b.runs == {"b1"} and b.batches == 0 and b.input_rows == 0
    assert b.first_ms is None and b.last_ms is None and b.span_s is None
    assert b.failures == 1 and b.last_exception == "oom"


def test_an_empty_stream_summarizes_to_nothing():
    s = summarize([])
    assert s.events == 0 and s.unsupported == 0 and s.queries == {}
