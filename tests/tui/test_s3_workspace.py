"""A pipeline whose workspace is on object storage: flights runs (availableNow, 4 files of
flights and of weather, 2 per micro-batch) with its tables and checkpoints under ``s3a://flightsws/runs/ws`` in
the loopback moto S3 server (hadoop-aws from ``make jars-s3``), its landing files local.
Then, read-only, through fsspec (``s3://``): the gold table equals pandas over the landed
files; ``streamwatch inspect s3://…/checkpoints/flights/<layer>`` in a subprocess (the S3
endpoint from the environment) reports every committed batch Spark's listener saw; the real
dashboard (Pilot) on the run's plan shows gold's batches in the checkpoint tab. Skips,
saying why, without the s3 jar set."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import RecordedBackend, settle, wait_for

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]

BUCKET = "flightsws"
PREFIX = "runs/ws"
STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def _objects(client, prefix: str = PREFIX) -> dict[str, str]:
    """Key → ETag of every object under ``prefix`` (paginated)."""
    out: dict[str, str] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        out.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
    return out


@pytest.fixture(scope="module")
def s3_flights(spark, table_format, s3_server, tmp_path_factory):
    """(runner, workspace, batches): flights run once with ``availableNow`` on the S3
    workspace; ``batches`` maps each layer to the batch ids its queries reported (Spark's
    own progress, the oracle for the checkpoint readers)."""
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner
    from streamwatch.spark.tableformat import decide_table_format
    from tests.helpers.s3 import point_s3a_at

    from sample_pipelines.flights.factory import FlightsFactory
    from sample_pipelines.flights.weather import WeatherFactory

    if not decide_table_format().s3:
        pytest.skip("hadoop-aws is not resolved (`make jars-s3`): Spark cannot use s3a://")
    s3_server.client.create_bucket(Bucket=BUCKET)
    point_s3a_at(spark, s3_server.endpoint)
    ws = Workspace.at(f"s3a://{BUCKET}/{PREFIX}", local=tmp_path_factory.mktemp("s3-ws-local"))
    assert len(FlightsFactory(ws.landing("flights", "flights")).land(4)) == 4
    assert len(WeatherFactory(ws.landing("flights", "weather")).land(4)) == 4
    runner = PipelineRunner(spark, get_pipeline("flights"), ws, table_format, {"max_files_per_trigger": 2})
    runner.run_available_now(timeout_s=900)
    batches = {name: sorted({p["batchId"] for p in runner.query(name).recentProgress})
               for name in runner.pipeline.layer_names()}
    return runner, ws, batches


def test_flights_on_s3_writes_there_and_gold_equals_pandas_over_the_landed_files(s3_flights, s3_server):
    from pyspark.sql import functions as F

    from tests.helpers.flights_oracle import assert_gold_equals_oracle, landed_flights

    runner, ws, batches = s3_flights
    keys = _objects(s3_server.client)
    for layer in runner.pipeline.layer_names():
        assert f"{PREFIX}/checkpoints/flights/{layer}/commits/{batches[layer][-1]}" in keys, layer
    assert any(k.startswith(f"{PREFIX}/tables/flights/gold/") for k in keys)
    assert any(k.startswith(f"{PREFIX}/tables/flights/airlines/") for k in keys)  # the setup's static table
    assert batches["bronze"] == [0, 1]  # 4 files, 2 per trigger
    # what Spark writes went to the bucket; only the landing files (and Spark's log) are local
    assert sorted(p.name for p in ws.local.iterdir()) == ["landing"]
    gold = runner.tables.read("gold")
    rows = [r.asDict() for r in gold.select(
        F.unix_millis("window_start").alias("start_ms"), F.unix_millis("window_end").alias("end_ms"),
        "carrier", "airline", "flights", "avg_dep_delay_min", "max_dep_delay_min").collect()]
    assert assert_gold_equals_oracle(rows, landed_flights(ws.landing("flights", "flights"))) > 50


def test_inspect_reads_the_s3_checkpoints_spark_wrote(s3_flights, s3_server):
    runner, ws, batches = s3_flights
    before = _objects(s3_server.client)
    for layer in ("bronze", "gold"):
        cp = ws.checkpoint("flights", layer)
        assert str(cp) == f"s3://{BUCKET}/{PREFIX}/checkpoints/flights/{layer}"
        docs = []
        for extra in ([], ["--batches"]):
            out = subprocess.run([STREAMWATCH, "inspect", str(cp), "--json", *extra],
                                 capture_output=True, text=True, timeout=300)  # AWS_ENDPOINT_URL → moto
            assert out.returncode == 0, out.stderr
            docs.append(json.loads(out.stdout))
        summary, timeline = docs[0], docs[1]["timeline"]
        assert summary["query_id"] == runner.query(layer).id
        assert summary["batches"]["last_committed"] == summary["batches"]["latest"] == batches[layer][-1], summary
        assert summary["batches"]["in_flight"] is None
        assert [row["batch_id"] for row in timeline] == batches[layer], timeline
        assert all(row["offsets"] and row["commit"] for row in timeline), timeline
        # the sink table was found from the pipeline definition, in the bucket: the file sink's
        # log names every batch; Delta's log the last one (its txn), whatever Delta does with empty ones
        if runner.tables.format == "parquet":
            assert all(row["sink_entry"] for row in timeline), timeline
        else:
            assert timeline[-1]["delta_versions"], timeline
    assert _objects(s3_server.client) == before, "inspect wrote to the bucket"


def test_dashboard_checkpoint_tab_shows_the_s3_batches(s3_flights, s3_server):
    from streamwatch.pipeline import plan_run
    from streamwatch.tui.app import StreamwatchApp

    runner, ws, batches = s3_flights
    plan = plan_run(runner.pipeline, ws, "availableNow")
    assert plan.query("flights_gold").checkpoint.startswith("s3://")
    backend = RecordedBackend(plan, [])
    backend.triggers = {q.query_name: "availableNow" for q in plan.queries}
    backend.output_modes = {q.query_name: "append" for q in plan.queries}
    app = StreamwatchApp(backend, checkpoint_refresh_s=0, watch_landing=False)
    before = _objects(s3_server.client)

    async def scenario() -> tuple[list[str], str, str]:
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot, app)
            app.scan_checkpoints()
            await wait_for(pilot, lambda: "flights_gold" in app.model.checkpoints, "the S3 checkpoint scan", 120)
            assert not app.model.cp_errors.get("flights_gold"), app.model.cp_errors
            app.selected = "flights_gold"
            await pilot.press("3")
            table = app.dashboard.query_one("#cp-batches")
            await wait_for(pilot, lambda: table.row_count == len(batches["gold"]), "gold's batch timeline")
            ids = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
            last = str(batches["gold"][-1])
            return ids, str(table.get_cell(last, "sink")), str(app.query_one("#cp-head").render())

    ids, sink, head = asyncio.run(scenario())
    assert sorted(int(i) for i in ids) == batches["gold"]
    assert sink == ("✓ gold" if runner.tables.format == "parquet" else "-"), sink  # Delta: no file sink log
    assert "flights_gold" in head and "sink gold" in head, head
    assert _objects(s3_server.client) == before, "the dashboard wrote to the bucket"
