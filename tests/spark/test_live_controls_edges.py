"""LiveBackend's controls at their edges, on the shared session and the real flights
pipeline: refused before the pipeline starts (one clear error, nothing started), a bad
trigger or unknown query refused before anything restarts, an unknown landing source; after
an availableNow run: results read from the gold table, landing into one source, a one-shot
trigger change that runs the layer again and finishes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def _backend(spark, tmp_path, trigger="availableNow"):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import LiveBackend

    return LiveBackend(get_pipeline("flights"), Workspace(tmp_path), trigger=trigger, spark=spark,
                       land_every_s=3600, initial_files=2, max_files=2, ui=False)


def test_controls_before_the_pipeline_started_are_refused(spark, tmp_path):
    b = _backend(spark, tmp_path, trigger="processingTime=1 second")
    with pytest.raises(RuntimeError, match="the pipeline has not started yet"):
        b.land(1)
    with pytest.raises(RuntimeError, match="the pipeline has not started yet"):
        b.start_query("flights_gold")
    with pytest.raises(RuntimeError, match="the pipeline has not started yet"):
        b.stop_query("flights_gold")
    with pytest.raises(ValueError):
        b.set_trigger("everySoOften")
    with pytest.raises(KeyError, match="unknown query 'nope'"):
        b.set_trigger("processingTime=5 seconds", "nope")
    assert set(b.triggers.values()) == {"processingTime=1 second"}  # nothing changed
    assert spark.streams.active == []
    b.stop()
    b.stop()  # idempotent, also never started


def test_after_an_available_now_run(spark, tmp_path):
    got: list = []
    b = _backend(spark, tmp_path)
    b.start(got.append)
    try:
        assert b.wait_finished(300), "the availableNow run did not finish in 300 s"
        assert b.all_finished() and not b.start_errors
        cols, rows = b.read_results("flights_gold", limit=5)
        assert "carrier" in cols and 0 < len(rows) <= 5
        with pytest.raises(KeyError, match="unknown source 'nope'; known: "):
            b.land(1, "nope")
        first = next(iter(b.factories))
        landed = b.land(1, first)
        assert len(landed) == 1 and landed[0].exists()
        with pytest.raises(KeyError, match="unknown query 'flights_platinum'"):
            b.stop_query("flights_platinum")
        b.set_trigger("availableNow", "flights_bronze")  # a one-shot run of that layer alone
        assert b.triggers["flights_bronze"] == "availableNow"
        assert b.wait_finished(300)
        assert spark.streams.active == []
    finally:
        b.stop()
