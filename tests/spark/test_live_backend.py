"""LiveBackend.stop delivers every run's QueryTerminatedEvent to the front-end before it
returns (Spark posts them asynchronously, after StreamingQuery.stop), and each stop lets the
running micro-batch commit first, so no run ends with an exception (this test once failed
with TASK_WRITE_FAILED: a stop that interrupted a part-file write)."""

from __future__ import annotations

import threading
import time

import pytest

from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

pytestmark = pytest.mark.spark


def test_stop_delivers_every_terminated_event(spark, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import LiveBackend

    got: list = []
    arrived = threading.Condition()

    def emit(obj: object) -> None:
        with arrived:
            got.append(obj)
            arrived.notify_all()

    backend = LiveBackend(get_pipeline("flights"), Workspace(tmp_path), trigger="processingTime=500ms",
                          spark=spark, land_every_s=0.5, initial_files=2, max_files=4)
    backend.start(emit)
    try:
        with arrived:  # the event: a progress with input rows reached emit
            assert arrived.wait_for(lambda: any(isinstance(e, QueryProgress) and e.num_input_rows for e in got), 120), \
                "no progress with input within 120 s"
    finally:
        backend.stop()
    n_after_stop = len(got)
    started = {e.run_id for e in got if isinstance(e, QueryStarted)}
    terminated = {e.run_id for e in got if isinstance(e, QueryTerminated)}
    assert len(started) == len(backend.plan.queries) >= 3
    assert terminated == started, "every run's terminated event reached emit before stop() returned"
    assert not any(isinstance(e, QueryTerminated) and e.failed for e in got)
    ends = [e for e in got if isinstance(e, QueryTerminated)]
    assert all(e.stop_requested for e in ends), "every run ended by our stop is recorded as stopped"
    assert not backend.runner.forced_stops, "each stop waited for its running batch to commit"
    assert all(e.exception is None for e in ends), "a graceful stop ends with exception null"
    assert spark.streams.active == []
    time.sleep(0.5)
    assert len(got) == n_after_stop, "nothing arrives after stop() returned"
