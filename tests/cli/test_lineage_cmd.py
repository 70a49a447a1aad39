"""`streamwatch lineage FILE`: a landed file followed through every layer of a real
availableNow run, from checkpoints and sink logs alone (the CLI itself starts no JVM)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def events_ws(spark, tmp_path_factory):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.events.factory import EventsFactory

    ws = Workspace(tmp_path_factory.mktemp("lineage-ws"))
    landed = EventsFactory(ws.landing("events", "events"), bad_ratio=0.1).land(3)
    PipelineRunner(spark, get_pipeline("events"), ws, "parquet").run_available_now(timeout_s=300)
    return ws, landed


def _lines(path: Path) -> tuple[int, int]:
    good = bad = 0
    for line in path.read_text().splitlines():
        try:
            ok = isinstance(json.loads(line).get("time"), int)
        except ValueError:
            ok = False
        good, bad = good + ok, bad + (not ok)
    return good, bad


def test_lineage_follows_a_file_through_every_layer(events_ws, unchanged):
    ws, landed = events_ws
    unchanged(ws.root / "checkpoints")
    unchanged(ws.root / "tables")
    target = landed[1]
    good, bad = _lines(target)
    assert bad > 0
    res = CliRunner().invoke(main, ["lineage", str(target), "--workspace", str(ws.root), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["schema"] == "streamwatch.lineage/1" and doc["pipeline"] == "events" and doc["source"] == "events"
    steps = {s["query"]: s for s in doc["steps"]}
    assert list(steps) == ["events_bronze", "events_quarantine", "events_silver", "events_gold", "events_gold_sliding"]
    bronze = steps["events_bronze"]["batches"]
    assert len(bronze) == 1 and bronze[0]["committed"] and bronze[0]["rows"] == good + bad
    assert Path(bronze[0]["read"][0].removeprefix("file:")).name == target.name
    silver = steps["events_silver"]["batches"]
    assert silver and set(silver[0]["read"]) <= set(bronze[0]["wrote"]) and silver[0]["read"]
    assert sum(b["rows"] for b in silver) == good
    quarantine = steps["events_quarantine"]
    assert sum(b["rows"] for b in quarantine["batches"]) == bad
    assert quarantine["note"].startswith(f"{bad} malformed row") and "→ table quarantine" in quarantine["note"]
    gold = steps["events_gold"]["batches"]
    assert gold and gold[0]["committed"] and gold[0]["wrote"] == [] and steps["events_gold"]["table"] is None
    assert doc["endMs"] > doc["landedMs"] and doc["latencyMs"] == doc["endMs"] - doc["landedMs"]
    assert bronze[0]["plannedMs"] <= silver[0]["plannedMs"] <= gold[0]["plannedMs"], "medallion order in time"

    text = CliRunner().invoke(main, ["lineage", target.name, "--workspace", str(ws.root)])
    assert text.exit_code == 0, text.output
    assert "events_gold" in text.stdout and "end to end:" in text.stdout
    assert f"{bad} malformed row" in text.stdout and f"{good} rows of this file" in text.stdout, "a bare name works"


def test_lineage_of_an_unknown_file_and_workspace(events_ws):
    ws, _landed = events_ws
    res = CliRunner().invoke(main, ["lineage", "nope.json", "--workspace", str(ws.root)])
    assert res.exit_code == 1 and "not read by any landing query" in res.stderr
    res = CliRunner().invoke(main, ["lineage", "x.json", "--workspace", str(ws.root / "missing")])
    assert res.exit_code == 4 and "does not exist" in res.stderr
    res = CliRunner().invoke(main, ["lineage", "x.json", "--workspace", str(ws.root), "--pipeline", "nosuch"])
    assert res.exit_code == 2 and "unknown pipeline" in res.stderr


def test_flights_lineage_reaches_gold_and_enriched_table(flights_run):
    from streamwatch.analysis.lineage import file_journey
    from streamwatch.pipeline import get_pipeline, plan_run

    _runner, ws = flights_run
    first = sorted(ws.landing("flights", "flights").glob("flights_*.csv"))[0]
    journey = file_journey(plan_run(get_pipeline("flights"), ws, "default"), str(first))
    steps = {s.layer: s for s in journey.steps}
    assert steps["enriched"].table.endswith("tables/flights/flights_weather")
    assert all(steps[n].reached for n in ("bronze", "silver", "enriched", "gold")), [s.note for s in journey.steps]
    assert not steps["weather"].reached and steps["weather"].note == "did not read this file"
    assert journey.latency_ms is not None and journey.latency_ms > 0  # gold committed after the file landed
    silver_read = {p for h in steps["silver"].hops for p in h.read}
    assert silver_read and silver_read <= {p for h in steps["bronze"].hops for p in h.wrote}


def test_inspect_maps_a_workspace_checkpoint_to_its_table_from_the_pipeline(flights_run, unchanged):
    _runner, ws = flights_run
    cp = unchanged(ws.checkpoint("flights", "enriched"))
    res = CliRunner().invoke(main, ["inspect", str(cp), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert "flights_weather" in json.dumps(doc.get("sink"))
