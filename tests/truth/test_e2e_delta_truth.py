"""End-to-end latency through Delta tables, held against the files Spark itself logged.

Flights' bronze → silver → gold run on Delta tables (availableNow, 2 files a batch) while a
checkpoint watch follows the workspace. Spark's account: bronze's file-source log
(``sources/0/``) names the landed files it read, whose modification times are the landing
times. Each gold batch's origin — the landing time of the oldest file it carries, followed
through the Delta versions silver and gold read — must be one of those landing times, and
the oldest over gold's batches the oldest landed file; its end-to-end latency then reaches
back to it (not ``-`` after the first layer, as it was for Delta edges)."""

from __future__ import annotations

import json
import os

import pytest

from streamwatch.analysis.records import CheckpointBatch
from streamwatch.analysis.session import CheckpointWatch

pytestmark = pytest.mark.spark


def _read_by_bronze(cp) -> dict[str, int]:
    """File → modification time (ms) of every file bronze's file-source log lists."""
    out = {}
    folder = cp / "sources" / "0"
    for name in os.listdir(folder):
        if name.startswith("."):
            continue
        for line in (folder / name).read_text().splitlines()[1:]:
            path = json.loads(line)["path"].removeprefix("file:")
            out[path] = int(os.stat(path).st_mtime * 1000)
    return out


def test_end_to_end_follows_delta_versions_to_the_landed_files(spark, delta, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.flights.factory import FlightsFactory

    ws = Workspace(tmp_path)
    FlightsFactory(ws.landing("flights", "flights")).land(4)
    runner = PipelineRunner(spark, get_pipeline("flights"), ws, delta, {"max_files_per_trigger": 2})
    for layer in ("bronze", "silver", "gold"):
        q = runner.start_layer(layer, "availableNow")
        q.awaitTermination(300)
        assert not q.isActive and q.exception() is None, (layer, q.exception())
    watch = CheckpointWatch([str(tmp_path)], poll_s=0.25, rediscover_s=0, allow_empty=True)
    records = [r for r in watch.open() if isinstance(r, CheckpointBatch)]
    landed = _read_by_bronze(tmp_path / "checkpoints" / "flights" / "bronze")
    assert len(landed) == 4
    silver = [r for r in records if r.query == "flights_silver" and r.inputs and r.inputs[0].kind == "delta"]
    assert silver, "silver reads bronze's Delta table"
    gold = [r for r in records if r.query == "flights_gold"]
    assert gold and all(r.origin_ms in landed.values() for r in gold if r.origin_ms is not None)
    assert min(r.origin_ms for r in gold if r.origin_ms is not None) == min(landed.values())
    assert all(r.end_to_end_ms is not None and r.end_to_end_ms >= r.duration_ms for r in gold if r.origin_ms)
