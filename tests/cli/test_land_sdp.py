"""``streamwatch land events --sdp-project DIR``: the events pipeline written as a Spark
Declarative Pipelines project beside the files it lands, read back by pyspark's own spec
loader (``pyspark.pipelines.cli.load_pipeline_spec``). The project's run by ``spark-pipelines``
is held against Spark in tests/spark/test_sdp_events_project.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SW = str(Path(sys.executable).parent / "streamwatch")


def _land(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SW, "land", *args, "--workspace", str(tmp_path / "ws")], capture_output=True, text=True,
                          timeout=300)


def test_the_project_reads_the_landed_files(tmp_path):
    cli = pytest.importorskip("pyspark.pipelines.cli", reason="pyspark without Spark Declarative Pipelines (4.1+)")
    r = _land(tmp_path, "events", "--files", "3", "--sdp-project", str(tmp_path / "proj"))
    assert r.returncode == 0, r.stderr
    spec = cli.load_pipeline_spec(tmp_path / "proj" / "spark-pipeline.yml")
    landing = tmp_path / "ws" / "landing" / "events" / "events"
    assert spec.storage == (tmp_path / "proj" / "pipeline-storage").as_uri()
    assert dict(spec.configuration) == {"streamwatch.events.landing": str(landing)}
    assert [lib.include for lib in spec.libraries] == ["transformations/**/*"]  # as SDP normalises the glob
    landed = [Path(p) for p in r.stdout.split()]
    assert len(landed) == 3 and all(p.parent == landing for p in landed)
    shipped = sorted(p.name for p in (tmp_path / "proj" / "transformations").iterdir())
    assert shipped == ["events_gold.sql", "events_tables.py"]
    check = subprocess.run([SW, "pipelines", "--check-spec", str(tmp_path / "proj" / "spark-pipeline.yml")],
                           capture_output=True, text=True, timeout=120)
    assert " error " not in check.stdout and check.returncode in (0, 1), check.stdout


def test_an_existing_project_is_kept(tmp_path):
    proj = tmp_path / "proj"
    assert _land(tmp_path, "events", "--sdp-project", str(proj)).returncode == 0
    before = (proj / "spark-pipeline.yml").read_bytes()
    r = _land(tmp_path, "events", "--sdp-project", str(proj))
    assert r.returncode == 0 and f"{proj / 'spark-pipeline.yml'}: exists, kept" in r.stderr
    assert (proj / "spark-pipeline.yml").read_bytes() == before


def test_a_pipeline_without_a_project_is_refused_before_landing(tmp_path):
    r = _land(tmp_path, "orders", "--sdp-project", str(tmp_path / "proj"))
    assert r.returncode == 2 and r.stderr.splitlines() == [
        "streamwatch land: pipeline 'orders' ships no Spark Declarative Pipelines project (events does)"]
    assert not (tmp_path / "ws").exists() and not (tmp_path / "proj").exists()
