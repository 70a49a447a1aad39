"""The trigger the dashboard shows is the one Spark runs the query with.

The independent account is Spark's own: each running query's ``StreamExecution.trigger``
(reached through the query's JVM object), compared with what :class:`DashboardModel` says for
queries streamwatch started — before and after a ``:trigger`` change of one of them; a known
``processingTime`` trigger is never called real-time, whatever its batches look like. For a replay, the trigger comes from the recording's header, and is ``unknown``
where the file carries none (a Spark event log, a ``record()`` recording)."""

from __future__ import annotations

import re
import threading
import time

import pytest

from streamwatch.analysis.dashboard import DashboardModel
from streamwatch.model.events import Event, QueryProgress

pytestmark = pytest.mark.spark


def spark_trigger(q) -> tuple[str, int | None]:
    """(kind, interval ms) of the trigger Spark runs ``q`` with, from its ``StreamExecution``."""
    text = str(q._jsq.streamingQuery().trigger().toString())
    m = re.fullmatch(r"ProcessingTimeTrigger\((\d+)\)", text)
    if m:
        ms = int(m.group(1))
        return ("processingTime", ms) if ms else ("default", None)
    if text.startswith("AvailableNowTrigger"):
        return "availableNow", None
    raise AssertionError(f"trigger not expected here: {text}")


def _slow_rate(ctx):
    return ctx.spark.readStream.format("rate").option("rowsPerSecond", 2).load()


def _pipeline():
    from streamwatch.pipeline import Layer, Pipeline

    return Pipeline("truth", "trigger truth", (), (
        Layer("a", "a", "rate → table", _slow_rate, "append", "table", "rate"),
        Layer("b", "b", "rate → table", _slow_rate, "append", "table", "rate"),
    ))


def test_shown_trigger_is_the_one_spark_runs(spark, tmp_path):
    from streamwatch.pipeline import Workspace
    from streamwatch.spark.live import LiveBackend

    got: list[Event] = []
    arrived = threading.Condition()

    def emit(obj: object) -> None:
        if isinstance(obj, Event):
            with arrived:
                got.append(obj)
                arrived.notify_all()

    backend = LiveBackend(_pipeline(), Workspace(tmp_path), trigger="processingTime=2 seconds", spark=spark,
                          initial_files=0)
    model = DashboardModel(backend.plan, clock=lambda: int(time.time() * 1000), triggers=lambda: backend.triggers)

    def progressed(name: str, n: int) -> bool:
        return sum(1 for e in got if isinstance(e, QueryProgress) and e.name == name) >= n

    def check() -> None:
        for q in spark.streams.active:
            kind, ms = spark_trigger(q)
            shown = model.trigger_of(q.name)
            assert shown is not None and (shown.kind, shown.interval_ms) == (kind, ms), (q.name, shown, kind, ms)
            assert not model.real_time(q.name)
            assert not model.trigger_label(q.name).startswith("real-time")

    backend.start(emit)
    try:
        with arrived:
            assert arrived.wait_for(lambda: progressed("truth_a", 2) and progressed("truth_b", 2), 120)
        check()
        backend.set_trigger("processingTime=10 seconds", "truth_b")
        with arrived:
            assert arrived.wait_for(lambda: any(q.name == "truth_b" and spark_trigger(q)[1] == 10_000
                                                for q in spark.streams.active), 120)
        check()
        assert model.trigger_label("truth_b") == "10s" and model.trigger_label("truth_a") == "2s"
        for e in list(got):
            model.board.apply(e)
        for name in ("truth_a", "truth_b"):
            assert not model.real_time(name) and not model.diagnose_all()[name].text.startswith("real-time")
    finally:
        backend.stop()


def test_replay_trigger_comes_from_the_recording_or_is_unknown(tmp_path):
    from streamwatch.backends.replay import recorded_session
    from streamwatch.events.jsonl import RecordingHeader
    from streamwatch.model.runtime import QueryPlan, RunPlan

    plan = RunPlan("replay x", "", (QueryPlan("q", "", "", ""),), (), "replay")
    model = DashboardModel(plan, clock=lambda: 0)
    assert model.trigger_label("q") == "unknown"  # nothing says: not a guess
    model.session_info = recorded_session(RecordingHeader(time_ms=1, source="listener", app={}))
    assert model.trigger_label("q") == "unknown"  # record() writes no trigger
    # `streamwatch log` writes the trigger its queries ran with into the header
    model.session_info = recorded_session(RecordingHeader(time_ms=1, source="listener",
                                                          app={"trigger": "processingTime=2 seconds"}))
    t = model.trigger_of("q")
    assert t is not None and (t.kind, t.interval_ms) == ("processingTime", 2000)
    assert model.trigger_label("q") == "2s"
