"""Write tests/fixtures/sdp/: a real Spark Declarative Pipelines storage folder, made by the
pyspark wheel's own ``spark-pipelines`` CLI (`make sdp-fixture`; not in CI, ~3 min).

A project with a streaming table ``bronze`` (JSON files), a streaming table ``silver`` reading
it and a materialized view ``gold`` runs once, then again with ``--full-refresh silver`` (a new
generation of silver's checkpoint). The storage's ``_checkpoints/`` is copied to
``tests/fixtures/sdp/storage/`` and what the CLI itself printed to ``facts.json``: per run,
each flow's states in order (``Flow spark_catalog.default.silver is RUNNING`` …).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "sdp"
FLOWS = '''from pyspark import pipelines as dp
from pyspark.sql import SparkSession

spark = SparkSession.active()


@dp.table
def bronze():
    return spark.readStream.format("json").schema("k INT, v INT").load({landing!r})


@dp.table
def silver():
    return spark.readStream.table("bronze").where("v >= 0")


@dp.materialized_view
def gold():
    return spark.read.table("silver").groupBy("k").count()
'''
STATE = re.compile(r"Flow '?([\w.]+)'? (?:is|has) (\w+)")


#: the CLI runs spark-submit from its own venv's bin. Its local Connect server binds port 15002
#: unless SPARK_TESTING is set: then an ephemeral port the client asks the JVM for, so a
#: concurrent run on this machine (another test session, a CI clone) cannot take it first
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "SPARK_TESTING": "1"}


def _run(cli: str, cwd: Path, *args: str) -> list[tuple[str, str]]:
    out = subprocess.run([cli, "run", "--conf", "spark.sql.catalogImplementation=hive", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=900, env=ENV)
    if out.returncode != 0:
        raise SystemExit(f"spark-pipelines run failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return [(m.group(1), m.group(2)) for m in STATE.finditer(out.stdout + out.stderr)]


def write_project(base: Path, rows: list[dict[str, int]]) -> Path:
    """A project as ``spark-pipelines init`` lays it out, with :data:`FLOWS`, under ``base``:
    ``landing/f<i>.json`` (one row each), ``proj/transformations/flows.py`` and
    ``proj/spark-pipeline.yml`` (storage ``proj/pipeline-storage`` as a file URI); the spec's path."""
    landing = base / "landing"
    landing.mkdir(parents=True)
    for i, row in enumerate(rows):
        (landing / f"f{i}.json").write_text(json.dumps(row) + "\n")
    proj = base / "proj"
    (proj / "transformations").mkdir(parents=True)
    (proj / "transformations" / "flows.py").write_text(FLOWS.format(landing=str(landing)))
    spec = proj / "spark-pipeline.yml"
    spec.write_text(f"name: proj\nstorage: {(proj / 'pipeline-storage').as_uri()}\n"
                    "libraries:\n  - glob:\n      include: transformations/**\n")
    return spec


def run_pipeline(proj: Path, *args: str) -> list[tuple[str, str]]:
    """``spark-pipelines run`` in ``proj`` (reruns work: hive catalog); the flow states it printed."""
    return _run(str(Path(sys.executable).parent / "spark-pipelines"), proj, *args)


def main() -> None:
    cli = str(Path(sys.executable).parent / "spark-pipelines")
    with tempfile.TemporaryDirectory(prefix="sw-sdp-") as tmp:
        base = Path(tmp)
        landing = base / "landing"
        landing.mkdir()
        for i in range(3):
            (landing / f"f{i}.json").write_text(json.dumps({"k": i, "v": 10 * i}) + "\n")
        subprocess.run([cli, "init", "--name", "proj"], cwd=base, check=True, capture_output=True, timeout=300, env=ENV)
        proj = base / "proj"
        for f in (proj / "transformations").iterdir():
            f.unlink()
        (proj / "transformations" / "flows.py").write_text(FLOWS.format(landing=str(landing)))
        first = _run(cli, proj)
        (landing / "f3.json").write_text(json.dumps({"k": 3, "v": 30}) + "\n")
        second = _run(cli, proj, "--full-refresh", "silver")
        if OUT.exists():
            shutil.rmtree(OUT)
        shutil.copytree(proj / "pipeline-storage", OUT / "storage")
        import pyspark

        (OUT / "facts.json").write_text(json.dumps({"pyspark": pyspark.__version__, "runs": [first, second]},
                                                   indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
