"""The sessions pipeline (transformWithStateInPandas with a StatefulProcessor): closed sessions
equal an independent pandas sessionization of the landed files, the checkpoint's operator
metadata v2 names the processor's state variables (value + list state with TTL, timers) in
`streamwatch inspect`, and Spark's customMetrics of the operator carry the state-variable and
timer counts."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.spark
FILES = 60  # 30 hours of page views
IDLE_MS = 3000  # the idle timer in these tests (ms of wall clock)
TRIGGER = "processingTime=500 milliseconds"


@pytest.fixture(scope="module")
def sessions_run(spark, table_format, tmp_path_factory):
    """60 landed files (2 % malformed lines): bronze, then silver, each run until it has
    processed everything (``processAllAvailable``); then gold, whose first micro-batch reads all
    of silver (so no idle timer fires between views of one session), runs until every user's
    idle timer has fired (the event waited on: gold's table holds as many rows as there are sessions;
    Delta's sink reports numOutputRows -1). Not availableNow: in processing-time mode transformWithState always
    asks for another batch (Spark's ``shouldRunAnotherBatch``, SPARK-50180), so an availableNow
    run of gold does not end. Returns (runner, workspace, gold's progress dicts)."""
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.sessions import GAP_MS
    from sample_pipelines.sessions.factory import ViewsFactory

    ws = Workspace(tmp_path_factory.mktemp("sessions-ws"))
    assert len(ViewsFactory(ws.landing("sessions", "views"), bad_ratio=0.02).land(FILES)) == FILES
    runner = PipelineRunner(spark, get_pipeline("sessions"), ws, table_format,
                            {"max_files_per_trigger": 1000, "session_idle_ms": IDLE_MS})
    sessions = len(_pandas_sessions(_landed_views(ws), GAP_MS // 1000))
    try:
        for layer in ("bronze", "silver"):
            runner.start_layer(layer, TRIGGER).processAllAvailable()
        gold = runner.start_layer("gold", TRIGGER)
        seen: dict[int, dict] = {}  # every progress of gold by batch id (recentProgress keeps 100)
        deadline = time.monotonic() + 600
        while (written := runner.tables.read("sessions").count()) < sessions:
            assert gold.exception() is None, gold.exception()
            assert time.monotonic() < deadline, f"{written} of {sessions} sessions written in 600 s"
            gold.awaitTermination(1)
            seen.update((p["batchId"], p) for p in (json.loads(q.json) for q in gold.recentProgress))
    finally:
        runner.stop()
    return runner, ws, [seen[b] for b in sorted(seen)]


def _landed_views(ws) -> pd.DataFrame:
    rows = []
    for path in sorted(ws.landing("sessions", "views").glob("views_*.json")):
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return pd.DataFrame(rows)


def _pandas_sessions(views: pd.DataFrame, gap_s: int) -> pd.DataFrame:
    """Sessions by the definition, computed without Spark: per user, sorted by time, a new
    session starts where a view comes more than ``gap_s`` after the previous one."""
    v = views.sort_values(["user", "time"], kind="stable")
    new = (v["user"] != v["user"].shift()) | (v["time"] - v["time"].shift() > gap_s)
    v = v.assign(session=new.cumsum())
    return v.groupby("session").agg(user=("user", "first"), start=("time", "min"), end=("time", "max"),
                                    views=("time", "size"), distinct_pages=("page", "nunique")).reset_index(drop=True)


def test_sessions_equal_pandas_sessionization(sessions_run):
    from sample_pipelines.sessions import GAP_MS

    runner, ws, _progress = sessions_run
    views = _landed_views(ws)
    expected = _pandas_sessions(views, GAP_MS // 1000)
    got = runner.tables.read("sessions").toPandas()
    got_keys = sorted((u, int(s.timestamp()), int(e.timestamp()), int(n), int(d)) for u, s, e, n, d in zip(
        got["user"], got["session_start"], got["session_end"], got["views"], got["distinct_pages"], strict=True))
    want_keys = sorted((u, int(s), int(e), int(n), int(d)) for u, s, e, n, d in zip(
        expected["user"], expected["start"], expected["end"], expected["views"], expected["distinct_pages"], strict=True))
    assert got_keys == want_keys
    # every user's last session was closed by its idle timer, every other one by the gap
    closed_by = got["closed_by"].value_counts().to_dict()
    assert closed_by == {"timer": views["user"].nunique(), "gap": len(expected) - views["user"].nunique()}


def test_inspect_shows_state_variables_ttl_and_timers(sessions_run, unchanged):
    from streamwatch.cli import main

    _runner, ws, _progress = sessions_run
    checkpoint = ws.checkpoint("sessions", "gold")
    unchanged(checkpoint)
    result = CliRunner().invoke(main, ["inspect", str(checkpoint), "--json"])
    assert result.exit_code in (0, 1), result.output
    doc = json.loads(result.output)
    ops = doc["state"]
    (tws,) = [op for op in ops if op.get("state_variables")]
    variables = {v["name"]: v for v in tws["state_variables"]}
    assert variables["session"]["type"] == "ValueState" and variables["session"]["ttl"] is True
    assert variables["pages"]["type"] == "ListState" and variables["pages"]["ttl"] is True
    assert [v["type"] for v in variables.values()].count("TimerState") == 1  # Spark's own timer variable
    assert tws["time_mode"] == "ProcessingTime"
    text = " ".join(CliRunner().invoke(main, ["inspect", str(checkpoint)]).output.split())
    assert ("state variables pages ListState (TTL), session ValueState (TTL); processing-time timers") in text


def test_custom_metrics_count_state_variables_and_timers(sessions_run):
    _runner, _ws, progress = sessions_run
    ops = [op for p in progress for op in p["stateOperators"] if op["operatorName"].startswith("transformWithState")]
    assert ops
    # both variables have a TTL: Spark counts them (once per task that registered them) under the
    # ...WithTTLVars metrics only, never under numValueStateVars/numListStateVars
    assert max(op["customMetrics"].get("numValueStateWithTTLVars", 0) for op in ops) >= 1
    assert max(op["customMetrics"].get("numListStateWithTTLVars", 0) for op in ops) >= 1
    assert max(op["customMetrics"].get("numValueStateVars", 0) + op["customMetrics"].get("numListStateVars", 0) for op in ops) == 0
    assert max(op["customMetrics"].get("numRegisteredTimers", 0) for op in ops) >= 1, "one idle timer per user"
    assert {"numRegisteredTimers", "numExpiredTimers", "numValueStateWithTTLVars"} <= set(ops[-1]["customMetrics"])
