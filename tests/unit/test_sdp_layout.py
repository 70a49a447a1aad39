"""A Spark Declarative Pipelines storage folder, written by pyspark's own ``spark-pipelines``
CLI (tests/fixtures/sdp: `make sdp-fixture`): a streaming table ``bronze``, a streaming table
``silver`` reading it, fully refreshed on the second run, and a materialized view ``gold``.
``watch`` and ``inspect --recursive`` name each flow as the CLI did, watch only the newest
generation of a refreshed flow and list the older one as superseded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from streamwatch.analysis.discover import discover
from streamwatch.checkpoint.sdp import SdpFlow, sdp_flow, superseded

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sdp"
STORAGE = FIXTURE / "storage"
EXE = str(Path(sys.executable).with_name("streamwatch"))
FACTS = json.loads((FIXTURE / "facts.json").read_text())


def _streaming_flows(run: list[list[str]]) -> set[str]:
    """The flows the CLI ran as streams in a run: a materialized view is PLANNING first."""
    planned = {flow for flow, state in run if state == "PLANNING"}
    return {flow for flow, state in run if state == "RUNNING"} - planned


def test_flows_named_as_the_pipeline_names_them_newest_generation_watched():
    first, second = FACTS["runs"]
    ran = _streaming_flows(first)
    assert ran == {"spark_catalog.default.bronze", "spark_catalog.default.silver"}
    found = discover(str(STORAGE))
    # the pipeline's names without the catalog; the materialized view has no checkpoint
    assert sorted(f.name for f in found) == sorted(n.split(".", 1)[1] for n in ran)
    silver = next(f for f in found if f.name == "default.silver")
    # the second run refreshed silver: its checkpoint is a new generation, the first superseded
    assert sorted(_streaming_flows(second)) == ["spark_catalog.default.silver"]
    assert silver.url.endswith("/silver/silver/1")
    assert [Path(p).name for p in silver.superseded] == ["0"]


def test_inspect_recursive_lists_the_superseded_generation():
    out = subprocess.run([EXE, "inspect", "--recursive", str(STORAGE), "--json"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    rows = {Path(r["path"]).relative_to(STORAGE / "_checkpoints").as_posix(): r["name"]
            for r in json.loads(out.stdout)["checkpoints"]}
    assert rows == {"spark_catalog/default/bronze/bronze/0": "default.bronze",
                    "spark_catalog/default/silver/silver/0": "default.silver (superseded)",
                    "spark_catalog/default/silver/silver/1": "default.silver"}


def test_layout_names_an_append_flow_and_ignores_other_folders():
    assert sdp_flow("s3://b/p/_checkpoints/main/sales/orders/from_eu/3/") == SdpFlow("main", "sales", "orders",
                                                                                       "from_eu", 3)
    assert sdp_flow("/x/_checkpoints/main/sales/orders/from_eu/3").name == "sales.orders ← from_eu"
    assert sdp_flow("/x/checkpoints/main/sales/orders/orders/3") is None
    assert sdp_flow("/x/_checkpoints/main/sales/orders/orders/latest") is None
    assert superseded(["/s/_checkpoints/c/d/t/f/0", "/s/_checkpoints/c/d/t/f/2", "/s/_checkpoints/c/d/t/g/0",
                       "/s/cp"]) == {"/s/_checkpoints/c/d/t/f/0"}


def test_watch_says_which_generations_it_leaves_out():
    out = subprocess.run([EXE, "watch", str(STORAGE), "--log", "--once"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "streamwatch watch: 2 checkpoint(s): default.bronze, default.silver"
    assert lines[1] == ("streamwatch watch: not watched, superseded by a full refresh: "
                        f"{STORAGE}/_checkpoints/spark_catalog/default/silver/silver/0")
    queries = {json.loads(line)["query"] for line in out.stdout.splitlines()}
    assert queries == {"default.bronze", "default.silver"}
