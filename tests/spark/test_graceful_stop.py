"""A stop is a stop: streamwatch lets the running micro-batch commit before
``StreamingQuery.stop()``, so a stopped query ends with ``exception() is None`` and its
checkpoint has no in-flight batch whenever the grace bound allowed; every run it stopped is
recorded as stopped. Exercised with 20+ stops at seeded random moments while files keep
arriving (batches back to back, one file each)."""

from __future__ import annotations

import random
import threading

import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.spark

STOPS = 22
SEED = 1212


def test_stops_at_random_moments_let_the_batch_commit(spark, tmp_path):
    from streamwatch.cli import main
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.events.factory import EventsFactory

    ws = Workspace(tmp_path)
    factory = EventsFactory(ws.landing("events", "events"), interval_minutes=60)
    runner = PipelineRunner(spark, get_pipeline("events"), ws, "parquet", {"max_files_per_trigger": 1})
    rng = random.Random(SEED)
    moment = threading.Event()  # never set: wait(t) is the random moment of the stop
    outcomes = []
    for i in range(STOPS):
        factory.land(2)
        trigger = rng.choice(["processingTime=100 milliseconds", "default"])
        bronze = runner.start_layer("bronze", trigger)
        silver = runner.start_layer("silver", trigger)
        moment.wait(rng.uniform(0.0, 2.0))
        runner.stop(grace_s=30)
        for q in (bronze, silver):
            assert not q.isActive
            assert str(q.runId) in runner.stop_requested
            outcomes.append((i, q.name, str(q.runId) in runner.forced_stops, q.exception()))
    graceful = [o for o in outcomes if not o[2]]
    assert len(graceful) >= 2 * STOPS - 2, f"the 30 s bound ran out too often: {outcomes}"
    failed = [(i, name, str(exc).splitlines()[0]) for i, name, _forced, exc in graceful if exc is not None]
    assert not failed, f"a graceful stop ended with an exception: {failed}"
    assert runner.tables.read("bronze").count() > 0
    for layer in ("bronze", "silver"):
        res = CliRunner().invoke(main, ["inspect", str(ws.checkpoint("events", layer)), "--check"])
        assert res.exit_code in (0, 1), res.output


def test_live_backend_marks_its_own_stop_as_stopped(spark, tmp_path):
    """A run streamwatch stopped is ``stop_requested`` in the terminated event, whatever Spark
    reports, and never ``failed``."""
    from streamwatch.model.events import QueryStarted, QueryTerminated
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import LiveBackend

    got: list = []
    backend = LiveBackend(get_pipeline("events"), Workspace(tmp_path), trigger="processingTime=200 milliseconds",
                          spark=spark, land_every_s=0.2, initial_files=2, max_files=6)
    backend.start(got.append)  # a processingTime trigger: every query has started when it returns
    backend.stop_query("events_silver")
    backend.stop()
    ends = [e for e in got if isinstance(e, QueryTerminated)]
    assert ends and all(e.stop_requested and not e.failed for e in ends)
    assert {e.run_id for e in ends} == {e.run_id for e in got if isinstance(e, QueryStarted)}
    assert all(e.to_dict()["stopRequested"] is True for e in ends), "the recording says stopped"
