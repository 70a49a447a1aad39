"""QueryBoard's history budget: with many queries each keeps its share of the budget (the
newest samples), so a dashboard of 100 queries stops growing (issue 18, flat RSS)."""

from __future__ import annotations

from streamwatch.analysis.board import MIN_HISTORY, QueryBoard
from streamwatch.model.events import QueryProgress


def progress(name: str, batch: int) -> QueryProgress:
    return QueryProgress.from_dict({"id": f"id-{name}", "runId": f"run-{name}", "name": name, "batchId": batch,
                                    "timestamp": "2026-01-01T10:00:00.000Z", "numInputRows": 1})


def test_each_query_keeps_its_share_of_the_budget_and_the_newest_samples():
    board = QueryBoard(["a"], history=1_000, budget=1_000)
    for b in range(600):
        board.apply(progress("a", b))
    assert len(board.rows["a"].history) == 600  # alone: the whole per-query history fits
    board.apply(progress("b", 0))  # a second query: 500 each, a keeps its newest
    assert board.per_query == 500
    assert [s.batch_id for s in board.rows["a"].history][:1] == [100]
    assert len(board.rows["a"].history) == 500
    for n in range(100):  # many queries: never below MIN_HISTORY each
        board.apply(progress(f"q{n}", 0))
    assert board.per_query == MIN_HISTORY
    for b in range(600, 900):
        board.apply(progress("a", b))
    assert [s.batch_id for s in board.rows["a"].history] == list(range(900 - MIN_HISTORY, 900))


def test_few_queries_keep_the_full_history():
    board = QueryBoard(["a", "b", "c"], history=10_000)
    assert board.per_query == 10_000
    assert all(r.history.maxlen == 10_000 for r in board.rows.values())
