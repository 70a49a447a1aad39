"""The medallion DAG comes from each layer's declared upstream layers, never from list order."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamwatch.model.events import QueryTerminated, event_from_json
from streamwatch.model.runtime import SessionInfo
from streamwatch.pipeline import Layer, Pipeline, Workspace, get_pipeline, plan_run, table_of_checkpoint


def _layer(name, *upstream):
    return Layer(name, name, name, lambda ctx: None, upstream=upstream)


def test_topological_order_ignores_list_order():
    p = Pipeline("p", "d", (), (_layer("gold", "silver"), _layer("silver", "bronze"), _layer("bronze")))
    assert [la.name for la in p.topological_layers()] == ["bronze", "silver", "gold"]
    assert p.downstream_of("silver") == ("gold",) and p.upstream_of("gold") == ("silver",)


def test_unknown_upstream_cycles_and_duplicates_are_refused():
    with pytest.raises(ValueError, match="layer 'silver' reads unknown upstream layer 'bronz'"):
        Pipeline("p", "d", (), (_layer("bronze"), _layer("silver", "bronz")))
    with pytest.raises(ValueError, match="form a cycle"):
        Pipeline("p", "d", (), (_layer("a", "b"), _layer("b", "a")))
    with pytest.raises(ValueError, match="two layers share a name"):
        Pipeline("p", "d", (), (_layer("a"), _layer("a")))
    with pytest.raises(ValueError, match="unknown landing source 'x'"):
        Pipeline("p", "d", (), (Layer("a", "a", "a", lambda ctx: None, landing=("x",)),))


def test_bundled_dags_and_checkpoint_tables_from_the_definition():
    plan = plan_run(get_pipeline("flights"), Workspace(Path("/ws")), "availableNow")
    assert set(plan.edges) == {
        ("flights_bronze", "flights_quarantine"), ("flights_bronze", "flights_silver"),
        ("flights_silver", "flights_enriched"), ("flights_weather", "flights_enriched"),
        ("flights_silver", "flights_gold")}
    assert plan.table_of_checkpoint["/ws/checkpoints/flights/enriched"] == "/ws/tables/flights/flights_weather"
    assert plan.query("flights_bronze").landing == ("/ws/landing/flights/flights",)
    events = plan_run(get_pipeline("events"), Workspace(Path("/ws")), "default")
    assert events.query("events_gold").table == "" and events.query("events_gold").sink == "memory"
    assert "/ws/checkpoints/events/gold" not in events.table_of_checkpoint
    assert set(plan_run(get_pipeline("orders"), Workspace(Path("/ws")), "once").downstream("orders_silver")) == {
        "orders_gold_revenue", "orders_gold_summary"}
    assert Path(table_of_checkpoint("/ws/checkpoints/flights/enriched")) == Path("/ws/tables/flights/flights_weather")
    assert table_of_checkpoint("/ws/checkpoints/events/gold") is None
    assert table_of_checkpoint("/elsewhere/cp") is None


def test_stop_requested_is_a_stop_not_a_failure_and_survives_a_recording():
    ev = QueryTerminated("q", "r", None, exception="[TASK_WRITE_FAILED] …", stop_requested=True)
    assert not ev.failed and ev.stopped
    back = event_from_json("terminated", ev.to_dict())
    assert back == ev
    assert QueryTerminated("q", "r", None, exception="boom").failed
    assert "stopRequested" not in QueryTerminated("q", "r", None).to_dict()


def test_master_description_says_cores_locally_and_executors_on_a_cluster():
    local = SessionInfo("4.2.0", "local[*]", None, "parquet", "x", executors=0, local_cores=4)
    assert local.master_description == "local[4 cores]"
    cluster = SessionInfo("4.2.0", "spark://h:7077", None, "parquet", "x", executors=2)
    assert cluster.master_description == "spark://h:7077 (2 executors)"
    assert SessionInfo("4.2.0", "local[2]", None, "parquet", "x").master_description == "local[2]"


@pytest.mark.parametrize("module", ["flights", "orders", "events", "clicks"])
def test_every_bundled_layer_that_reads_a_table_declares_its_upstream(module):
    """A layer reading an upstream table without declaring it would start with its upstream
    under availableNow and find nothing to read (the clicks pipeline once did)."""
    import importlib

    pipeline = importlib.import_module(f"sample_pipelines.{module}").pipeline()
    for layer in pipeline.layers:
        if layer.source == "table":
            assert layer.upstream, f"{pipeline.name}.{layer.name} reads a table but declares no upstream layer"
        else:
            assert not layer.upstream, f"{pipeline.name}.{layer.name} reads {layer.source} yet declares upstream layers"
