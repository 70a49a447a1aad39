"""LiveBackend.stop delivers every run's QueryTerminatedEvent to the front-end before it
returns (Spark posts them asynchronously, after StreamingQuery.stop)."""

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
    lock = threading.Lock()

    def emit(obj: object) -> None:
        with lock:
            got.append(obj)

    backend = LiveBackend(get_pipeline("flights"), Workspace(tmp_path), trigger="processingTime=500ms",
                          spark=spark, land_every_s=0.5, initial_files=2, max_files=4)
    backend.start(emit)
    try:
        deadline = time.monotonic() + 120
        while not any(isinstance(e, QueryProgress) and e.num_input_rows for e in list(got)):
            assert time.monotonic() < deadline, "no progress with input within 120 s"
            time.sleep(0.2)
    finally:
        backend.stop()
    n_after_stop = len(got)
    started = {e.run_id for e in got if isinstance(e, QueryStarted)}
    terminated = {e.run_id for e in got if isinstance(e, QueryTerminated)}
    assert len(started) == len(backend.plan.queries) >= 3
    assert terminated == started, "every run's terminated event reached emit before stop() returned"
    assert not any(isinstance(e, QueryTerminated) and e.failed for e in got)
    assert spark.streams.active == []
    time.sleep(0.5)
    assert len(got) == n_after_stop, "nothing arrives after stop() returned"
