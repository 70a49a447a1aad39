"""The dashboard judges a query again only when what its diagnosis reads changed, or when its
checkpoint has a planned, uncommitted batch (the clock then decides *stuck*). Oracle: at every
step, :meth:`DashboardModel.diagnose_all` equals :func:`diagnose` run afresh on the same row,
checkpoint head, trigger and clock."""

from __future__ import annotations

from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.diagnosis import CheckpointHead, Diagnosis, diagnose
from streamwatch.analysis.triggers import known_trigger
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.runtime import QueryPlan, RunPlan

T0 = 1_790_000_000_000  # epoch ms


def _progress(name: str, batch: int, outstanding: int) -> QueryProgress:
    """A batch of 100 rows from a file source with ``outstanding`` files left unread."""
    return QueryProgress.from_dict({
        "id": f"id-{name}", "runId": f"run-{name}", "name": name, "timestamp": "2026-11-23T10:00:00.000Z",
        "batchId": batch, "batchDuration": 400, "numInputRows": 100, "inputRowsPerSecond": 250.0,
        "processedRowsPerSecond": 250.0, "durationMs": {"triggerExecution": 400},
        "sources": [{"description": "FileStreamSource[/in]", "numInputRows": 100,
                     "metrics": {"numFilesOutstanding": str(outstanding)}}]})


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def test_a_query_is_judged_again_exactly_when_its_diagnosis_could_change():
    clock = _Clock()
    triggers = {"a": "processingTime=2 seconds", "b": "processingTime=2 seconds"}
    plan = RunPlan("p", "", (QueryPlan("a", "a", "/cp/a", ""), QueryPlan("b", "b", "/cp/b", "")), (),
                   "processingTime=2 seconds")
    model = DashboardModel(plan, clock=clock, triggers=lambda: triggers)
    seen: list[dict[str, str]] = []

    def step() -> dict[str, Diagnosis]:
        got = dict(model.diagnose_all())
        for name, row in model.board.rows.items():  # the oracle: judged afresh
            fresh = diagnose(row, model.heads.get(name), known_trigger(triggers[name]), clock.now)
            assert got[name] == fresh, (name, got[name], fresh)
        seen.append({n: d.code for n, d in got.items()})
        return got

    for name in ("a", "b"):
        model.board.apply(QueryStarted(f"id-{name}", f"run-{name}", None, name=name))
        model.board.apply(_progress(name, 0, 5))
    first = step()
    again = step()
    assert again["a"] is first["a"]  # nothing changed: the kept diagnosis, not a new judgement
    model.board.apply(_progress("a", 1, 6))
    model.board.apply(_progress("a", 2, 9))  # new progress: files outstanding rose batch after batch
    step()
    # a planned batch without a commit: judged on every call, the clock alone makes it stuck
    model.heads["b"] = CheckpointHead(offsets_batch=5, commit_batch=4, offsets_timestamp_ms=T0)
    step()
    clock.now = T0 + 11_000
    step()
    model.heads["b"] = CheckpointHead(offsets_batch=5, commit_batch=5, offsets_timestamp_ms=T0)  # committed
    step()
    triggers["a"] = "processingTime=1 minute"  # a trigger change is news too (same answer here)
    step()
    model.board.apply(QueryTerminated("id-a", "run-a", None, exception="boom"))
    step()
    assert seen == [
        {"a": "ok", "b": "ok"}, {"a": "ok", "b": "ok"},
        {"a": "slow", "b": "ok"},
        {"a": "slow", "b": "ok"}, {"a": "slow", "b": "stuck"},
        {"a": "slow", "b": "ok"},
        {"a": "slow", "b": "ok"},
        {"a": "failed", "b": "ok"},
    ]



def _slow(batch: int) -> QueryProgress:
    """A batch of 100 rows that took 2.5 s, nothing left outstanding."""
    return QueryProgress.from_dict({
        "id": "id-a", "runId": "run-a", "name": "a", "timestamp": "2026-11-23T10:00:00.000Z",
        "batchId": batch, "batchDuration": 2500, "numInputRows": 100, "durationMs": {"triggerExecution": 2500},
        "sources": [{"description": "FileStreamSource[/in]", "numInputRows": 100,
                     "metrics": {"numFilesOutstanding": "0"}}]})


def test_spark_idle_is_waiting_even_after_batches_ran_back_to_back():
    """Three batches each over the 2 s trigger, then Spark's QueryIdleEvent: the query waits
    for data now — "back to back" speaks of the batches before, not of now."""
    from streamwatch.model.events import QueryIdle

    trigger = known_trigger("processingTime=2 seconds")
    model = DashboardModel(RunPlan("p", "", (QueryPlan("a", "a", "/cp/a", ""),), (), "processingTime=2 seconds"),
                           clock=lambda: T0)
    model.board.apply(QueryStarted("id-a", "run-a", None, name="a"))
    for b in range(3):
        model.board.apply(_slow(b))
    row = model.board.rows["a"]
    assert diagnose(row, None, trigger, T0).text.startswith("back to back")
    model.board.apply(QueryIdle("id-a", "run-a", "2026-11-23T10:00:09.000Z"))
    assert diagnose(model.board.rows["a"], None, trigger, T0) == Diagnosis("waiting", "waiting for data")
