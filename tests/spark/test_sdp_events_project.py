"""The bundled events pipeline shipped as a Spark Declarative Pipelines project (written with
its data by ``streamwatch land events --sdp-project``), run by pyspark's own ``spark-pipelines`` CLI (its own JVM and local Connect server), then held
against Spark's batch engine and the files:

* every flow the CLI reports ends COMPLETED, in medallion order;
* the materialized view ``events_gold`` equals the bundled pipeline's gold SQL computed in
  batch over the landed files (the shared session), row for row;
* every landed line is a silver row or a quarantined one;
* ``inspect --recursive`` on the storage names the three streaming flows, and each
  checkpoint's last committed batch is the highest ``commits/N`` file Spark wrote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sample_pipelines.events import GOLD_SQL, events_schema, silver_transform

pytestmark = pytest.mark.spark
BIN = Path(sys.executable).parent
CLI = BIN / "spark-pipelines"
STATE = re.compile(r"Flow '?([\w.]+)'? (?:is|has) (\w+)")
FLOWS = ("events_bronze", "events_quarantine", "events_silver", "events_gold")


@pytest.fixture(scope="module")
def sdp_run(tmp_path_factory):
    if not CLI.exists():
        pytest.skip(f"{CLI} missing: this pyspark ships no spark-pipelines CLI (4.1+ does)")
    base = tmp_path_factory.mktemp("sdp-events")
    land = subprocess.run([str(BIN / "streamwatch"), "land", "events", "--files", "12", "--bad-ratio", "0.1",
                           "--workspace", str(base / "ws"), "--sdp-project", str(base / "proj")],
                          capture_output=True, text=True, timeout=300)
    assert land.returncode == 0, land.stderr
    landing = base / "ws" / "landing" / "events" / "events"
    assert sorted(land.stdout.split()) == sorted(str(p) for p in landing.glob("events_*.json"))
    spec = base / "proj" / "spark-pipeline.yml"
    # the CLI runs spark-submit from the venv's bin. Its local Connect server binds port 15002
    # unless SPARK_TESTING is set: then an ephemeral port the client asks the JVM for, so
    # another Connect server on this machine (a concurrent run) cannot refuse it the port
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}", "SPARK_TESTING": "1"}
    out = subprocess.run([str(CLI), "run", "--conf", "spark.sql.catalogImplementation=hive"], cwd=spec.parent,
                         capture_output=True, text=True, timeout=1200, env=env)
    assert out.returncode == 0, (out.stdout[-3000:], out.stderr[-3000:])
    states = [(m.group(1).rsplit(".", 1)[-1], m.group(2)) for m in STATE.finditer(out.stdout + out.stderr)]
    return spec.parent, landing, states


def test_every_flow_completes_in_medallion_order(sdp_run):
    _proj, _landing, states = sdp_run
    finished = [flow for flow, state in states if state == "COMPLETED"]
    assert sorted(finished) == sorted(FLOWS), states
    assert finished.index("events_bronze") < finished.index("events_silver") < finished.index("events_gold")
    assert not [s for s in states if s[1] == "FAILED"], states


def test_gold_view_is_the_bundled_gold_over_the_landed_files(sdp_run, spark):
    from pyspark.sql import functions as F

    from sample_pipelines.common import good_rows, with_corrupt_column

    proj, landing, _states = sdp_run
    raw = (spark.read.schema(with_corrupt_column(events_schema())).json(str(landing))
           .withColumn("_source_file", F.col("_metadata.file_path")))
    silver_transform(good_rows(raw)).createOrReplaceTempView("sdp_events_silver_batch")
    expected = sorted(tuple(r) for r in spark.sql(GOLD_SQL.format(view="sdp_events_silver_batch")).collect())
    gold = sorted(tuple(r) for r in spark.read.parquet(str(proj / "spark-warehouse" / "events_gold")).collect())
    assert gold == expected and len(gold) > 0

    lines = sum(1 for p in landing.glob("events_*.json") for _ in p.open())
    silver = spark.read.parquet(str(proj / "spark-warehouse" / "events_silver")).count()
    quarantined = spark.read.parquet(str(proj / "spark-warehouse" / "events_quarantine")).count()
    assert quarantined > 0 and silver + quarantined == lines


def test_inspect_names_the_flows_and_their_last_commits(sdp_run):
    proj, _landing, _states = sdp_run
    storage = proj / "pipeline-storage"
    out = subprocess.run([str(BIN / "streamwatch"), "inspect", "--recursive", str(storage), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    found = {d["name"]: d for d in json.loads(out.stdout)["checkpoints"]}
    assert set(found) == {f"default.{f}" for f in FLOWS if f != "events_gold"}, sorted(found)
    for name, doc in found.items():
        table = name.split(".", 1)[1]
        commits = storage / "_checkpoints" / "spark_catalog" / "default" / table / table / "0" / "commits"
        last = max(int(p.name) for p in commits.iterdir() if p.name.isdigit())
        assert doc["last_committed"] == doc["latest_batch"] == last, (name, doc)
        assert doc["worst"] is None, (name, doc)
