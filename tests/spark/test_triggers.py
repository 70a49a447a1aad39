"""Triggers and output modes chosen per run, and the messages for invalid combinations."""

from __future__ import annotations

import time

import pytest

from streamwatch.pipeline import Layer, Pipeline, Workspace
from streamwatch.spark.tables import ONCE_NOTE, trigger_kwargs, trigger_note

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("spec,kwargs", [
    ("default", {}),
    ("availableNow", {"availableNow": True}),
    ("once", {"once": True}),
    ("processingTime=2s", {"processingTime": "2 seconds"}),
    ("processingTime=500ms", {"processingTime": "500 milliseconds"}),
    ("continuous=1s", {"continuous": "1 seconds"}),
])
def test_trigger_specs(spec, kwargs):
    assert trigger_kwargs(spec) == kwargs


def test_unknown_trigger_and_once_note():
    with pytest.raises(ValueError, match="unknown trigger 'sometimes': use default, availableNow"):
        trigger_kwargs("sometimes")
    assert trigger_note("once") == ONCE_NOTE and "availableNow replaces it" in ONCE_NOTE
    assert trigger_note("availableNow") is None


def _rate(ctx):
    return ctx.spark.readStream.format("rate").option("rowsPerSecond", 5).load()


def _pipeline(build, mode="append", sink="table", source="rate"):
    return Pipeline("shapes", "invalid query shapes", (), (Layer("gold", "gold", "x", build, mode, sink, source),))


def _runner(spark, tmp_path, pipeline, **kw):
    from streamwatch.spark.runner import PipelineRunner

    return PipelineRunner(spark, pipeline, Workspace(tmp_path), "parquet", **kw)


def test_continuous_is_rejected_for_file_sources_and_table_sinks(spark, tmp_path):
    from streamwatch.pipeline import get_pipeline
    from streamwatch.spark.runner import QueryRejected

    runner = _runner(spark, tmp_path, get_pipeline("flights"))
    with pytest.raises(QueryRejected) as err:
        runner.start("continuous=1s")
    assert str(err.value).startswith("flights_bronze: continuous trigger not supported: its source (csv)")
    assert "use processingTime=<interval> instead" in str(err.value)
    assert runner.queries == []
    rate_to_table = _runner(spark, tmp_path, _pipeline(_rate))
    with pytest.raises(QueryRejected, match=r"shapes_gold: continuous trigger not supported: its sink \(parquet\)"):
        rate_to_table.check_trigger("continuous=1s")
    _runner(spark, tmp_path, _pipeline(_rate, sink="memory")).check_trigger("continuous=1s")  # accepted


def test_append_on_aggregation_without_watermark_is_a_clear_error(spark, tmp_path):
    from streamwatch.spark.runner import QueryRejected

    runner = _runner(spark, tmp_path, _pipeline(lambda ctx: _rate(ctx).groupBy("value").count()))
    with pytest.raises(QueryRejected) as err:
        runner.start("default")
    msg = str(err.value)
    assert msg.startswith("shapes_gold (append mode): Spark rejected the query: ")
    assert "\n" not in msg and "without watermark" in msg
    assert not [q for q in spark.streams.active if q.name == "shapes_gold"]


def test_sorting_a_stream_is_a_clear_error(spark, tmp_path):
    from streamwatch.spark.runner import QueryRejected

    runner = _runner(spark, tmp_path, _pipeline(lambda ctx: _rate(ctx).orderBy("value")))
    with pytest.raises(QueryRejected, match=r"shapes_gold \(append mode\): Spark rejected the query: .*[Ss]orting"):
        runner.start("default")


def test_output_mode_chosen_per_run(spark, tmp_path):
    from streamwatch.spark.runner import QueryRejected

    agg = _pipeline(lambda ctx: _rate(ctx).groupBy("value").count())
    with pytest.raises(ValueError, match="unknown output mode 'sometimes'"):
        _runner(spark, tmp_path, agg, output_modes={"gold": "sometimes"})
    with pytest.raises(KeyError, match="has no layer 'silver'"):
        _runner(spark, tmp_path, agg, output_modes={"silver": "update"})
    runner = _runner(spark, tmp_path, agg, output_modes={"gold": "update"})
    with pytest.raises(QueryRejected, match=r"shapes_gold \(update mode\): Spark rejected the query: .*"):
        runner.start("default")  # Spark's file sink supports append only
    ok = _runner(spark, tmp_path / "c", agg, output_modes={"gold": "complete"})
    try:
        q = ok.start("processingTime=200 milliseconds")[0]
        deadline = time.monotonic() + 60
        while sum(p["numInputRows"] for p in q.recentProgress) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert q.isActive and q.exception() is None
    finally:
        ok.stop()
    # complete mode on Parquet = foreachBatch overwrite: the table holds the full last result
    assert ok.tables.read("gold").count() == sum(p["numInputRows"] for p in q.recentProgress) >= 3
