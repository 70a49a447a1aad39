"""Real-time mode (trigger(realTime=…)) recognised from Spark 4.x progress and diagnosed by
its own rules. The recorded sequence is what pyspark 4.2.0 reported for a Kafka → Kafka query
with ``trigger(realTime="5 seconds")`` on a loopback broker; the longer sequences are built in
the same format the way Spark fills it (inputRowsPerSecond = rows / time since the previous
interval started, processedRowsPerSecond = rows / batchDuration)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from streamwatch.analysis.board import QueryBoard
from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.analysis.diagnosis import CheckpointHead, diagnose
from streamwatch.analysis.realtime import end_past_latest, figures, looks_real_time
from streamwatch.analysis.triggers import parse_trigger, trigger_interval_ms

RT5 = parse_trigger("realTime=5s")
from streamwatch.model.events import QueryProgress, QueryStarted
from streamwatch.model.runtime import QueryPlan, RunPlan

DATA = Path(__file__).parent / "data"
FLIGHTS = Path(__file__).parents[1] / "tui" / "data" / "flights_run.jsonl"
T0 = 1795384821498


def recorded() -> list[dict]:
    return [json.loads(line) for line in (DATA / "realtime_kafka_progress.jsonl").read_text().splitlines()]


def steady(durations: list[int], rows: int = 600, behind: list[int] | None = None) -> list[dict]:
    """Back-to-back real-time intervals of ``durations`` ms with ``rows`` rows each."""
    template = recorded()[1]
    out, start, offset = [], T0, 600
    for i, d in enumerate(durations):
        p = copy.deepcopy(template)
        p["batchId"] = 10 + i
        p["timestamp"] = f"2026-11-22T22:00:{21 + 5 * i:02d}.403Z"
        p["batchDuration"] = p["durationMs"]["triggerExecution"] = d
        p["durationMs"]["addBatch"] = d - 300
        p["numInputRows"] = rows
        gap = durations[i - 1] if i else d
        p["inputRowsPerSecond"] = round(rows * 1000 / gap, 1)
        p["processedRowsPerSecond"] = round(rows * 1000 / d, 1)
        src = p["sources"][0]
        src.update(numInputRows=rows, inputRowsPerSecond=p["inputRowsPerSecond"],
                   processedRowsPerSecond=p["processedRowsPerSecond"])
        src["startOffset"] = {"rt_in": {"0": offset}}
        src["latestOffset"] = {"rt_in": {"0": offset + rows // 2}}
        offset += rows
        src["endOffset"] = {"rt_in": {"0": offset}}
        b = (behind or [0] * len(durations))[i]
        src["metrics"] = {"avgOffsetsBehindLatest": f"{b}.0", "maxOffsetsBehindLatest": str(b),
                          "minOffsetsBehindLatest": str(b)}
        out.append(p)
        start += d
    return out


def board_row(progress: list[dict]):
    board = QueryBoard(["rt"])
    qid = progress[0]["id"]
    board.apply(QueryStarted(id=qid, run_id=progress[0]["runId"], timestamp=None, name="rt"))
    for d in progress:
        board.apply(QueryProgress.from_dict({**d, "name": "rt"}))
    return board.rows["rt"]


def flights_progress() -> list[QueryProgress]:
    out = []
    for line in FLIGHTS.read_text().splitlines():
        d = json.loads(line)
        if d.get("kind") == "progress":
            out.append(QueryProgress.from_dict(d["event"]))
    return out


def test_the_recorded_real_time_query_is_recognised_and_micro_batches_are_not():
    ps = [QueryProgress.from_dict(d) for d in recorded()]
    assert end_past_latest(ps[1])  # 600 read while 450 was latest when the interval began
    assert not end_past_latest(ps[0]) and not end_past_latest(ps[2]) and not end_past_latest(ps[3])
    assert looks_real_time(ps)
    assert not looks_real_time(ps[2:])  # empty intervals prove nothing: a heavy micro-batch looks the same
    flights = flights_progress()
    assert len(flights) > 10
    assert not any(end_past_latest(p) for p in flights)
    by_query: dict[str, list[QueryProgress]] = {}
    for p in flights:
        by_query.setdefault(p.id, []).append(p)
    assert not any(looks_real_time(v) for v in by_query.values())


def test_real_time_trigger_grammar():
    assert parse_trigger("realTime").kwargs() == {"realTime": "5 minutes"}  # RealTimeTrigger()'s default
    assert parse_trigger("realTime=5s").spec == "realTime=5s"
    assert parse_trigger("realtime=2 seconds").kwargs() == {"realTime": "2 seconds"}
    assert trigger_interval_ms("realTime=1 minute") == 60_000


def test_steady_real_time_is_ok():
    # each interval a little longer than the one before (commits slower, nothing left behind):
    # rows/s "processed" (rows / this interval) trails rows/s "in" (rows / the previous one) by
    # > 5 %, which says nothing about capacity in real-time mode
    row = board_row(steady([5000, 5400, 5800, 6200, 6600]))
    rt = diagnose(row, None, RT5, T0 + 60_000, real_time=True)
    assert rt.code == "ok"
    assert rt.text == "real-time: 600 rows in last 6 s interval, 0 records behind latest"  # median 5.8 s


def test_real_time_falling_behind_and_overrun_are_slow():
    row = board_row(steady([5000] * 5, behind=[0, 40, 90, 200, 500]))
    d = diagnose(row, None, RT5, T0 + 60_000, real_time=True)
    assert (d.code, d.text) == ("slow", "real-time: falling behind, 500 records behind latest (growing)")
    row = board_row(steady([5000, 5000, 9000]))
    d = diagnose(row, None, RT5, T0 + 60_000, real_time=True)
    assert (d.code, d.text) == ("slow", "real-time: interval overran by 4.0 s, 0 records behind latest")
    assert figures(list(row.recent), 5000).interval_ms == 5000


def test_empty_real_time_intervals_are_waiting():
    row = board_row(recorded())
    d = diagnose(row, None, RT5, T0 + 60_000, real_time=True)
    assert (d.code, d.text) == ("waiting", "real-time: waiting for data (5 s interval)")


@pytest.mark.parametrize("waited_s,code", [(61, "ok"), (131, "stuck")])
def test_stuck_waits_two_intervals_because_offsets_are_written_when_the_interval_ends(waited_s, code):
    # Spark writes offsets/N of a real-time batch at the end of its interval (batchTimestampMs
    # is its start): a scan between the offsets and the commit write sees N planned, no commit
    row = board_row(steady([60_000] * 3))
    head = CheckpointHead(offsets_batch=13, commit_batch=12, offsets_timestamp_ms=T0)
    now = T0 + waited_s * 1000
    # the micro-batch rule, trigger unknown: 5 × its slowest recent batch (300 s), not a fixed 10 s
    assert diagnose(row, head, None, now).code != "stuck"
    assert diagnose(row, head, parse_trigger("realTime=1 minute"), now, real_time=True).code == code


def _model(trigger: str) -> DashboardModel:
    plan = RunPlan(pipeline="rt", description="", queries=(QueryPlan("rt", "rt", "/cp", "/t"),),
                   landing=(), trigger=trigger)
    return DashboardModel(plan, clock=lambda: T0 + 60_000)


def test_dashboard_shows_real_time_from_the_trigger_or_from_progress():
    model = _model("realTime=5s")
    assert model.trigger_label("rt") == "real-time 5s"
    for d in steady([5050, 5600, 5050, 5600]):
        model.board.apply(QueryProgress.from_dict({**d, "name": "rt"}))
    assert model.diagnose_all()["rt"].text.startswith("real-time: ")
    replay = _model("replay")  # a recording: trigger unknown, recognised from progress
    for d in steady([5050, 5600, 5050, 5600]):
        replay.board.apply(QueryProgress.from_dict({**d, "name": "rt"}))
    assert replay.real_time("rt") and replay.trigger_label("rt") == "real-time"
    assert replay.diagnose_all()["rt"].code == "ok"
    micro = _model("processingTime=2 seconds")
    for d in steady([5050, 5600, 5050, 5600]):
        micro.board.apply(QueryProgress.from_dict({**d, "name": "rt"}))
    assert micro.trigger_label("rt") == "2s" and not micro.real_time("rt")  # a known trigger wins
    assert _model("replay").trigger_label("rt") == "unknown"


def test_flattening_offsets_leaves_no_reference_cycle():
    """``end_past_latest`` runs on every progress event: flattening an offset must leave nothing
    for the garbage collector (a recursive closure did: a function and its cell per call,
    ~1,000 a second under a 100-query flood, each bringing the dashboard's full collections
    sooner). With automatic collection off, no closure made by the call may outlive it."""
    import gc
    import types

    from streamwatch.analysis.realtime import _offsets

    def leftovers() -> int:
        return sum(1 for o in gc.get_objects()
                   if isinstance(o, types.FunctionType) and o.__qualname__.startswith("_offsets."))

    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        before = leftovers()
        for _ in range(50):
            assert _offsets('{"t": {"0": 5, "1": 7}}') == {("t", "0"): 5, ("t", "1"): 7}
        assert leftovers() == before == 0
    finally:
        if was:
            gc.enable()
