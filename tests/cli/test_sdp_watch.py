"""``streamwatch watch`` on a Spark Declarative Pipelines storage written by pyspark's own
``spark-pipelines`` (session fixtures ``sdp_logged`` and ``sdp_refreshed``, tests/conftest.py:
scripts/sdp_fixture.py's project, streaming tables bronze ← JSON files, silver ← bronze;
materialized view gold). A flow's sink is its table, so the pipeline edge bronze → silver is
drawn; its backlog is held against the files: after a second run that refreshes bronze alone
(a new landed file), the part files in bronze's table folder that silver's file-source log
does not name, counted here by listing the folder and reading the log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streamwatch.checkpoint.sdp import SdpFlow, is_table_folder
from tests.helpers.scripts import load_script
from tests.helpers.sdp_runs import SdpLogged

SW = str(Path(sys.executable).parent / "streamwatch")


@pytest.fixture(scope="module")
def storage(request):
    """A real pipeline's folders after `run` (streamwatch log --spec), then a landed file and
    `run --refresh bronze` (shared session fixtures, tests/helpers/sdp_runs.py)."""
    pytest.importorskip("yaml")
    logged: SdpLogged = request.getfixturevalue("sdp_logged")
    assert logged.logged.returncode == 0, logged.logged.stderr[-3000:]
    first = [(m.group(1), m.group(2)) for m in load_script("sdp_fixture").STATE.finditer(logged.logged.stderr)]
    second = request.getfixturevalue("sdp_refreshed")
    assert ("spark_catalog.default.silver", "COMPLETED") in first
    assert ("spark_catalog.default.bronze", "COMPLETED") in second
    assert ("spark_catalog.default.silver", "COMPLETED") not in second
    return logged.proj


def _unread_parts(proj: Path) -> set[str]:
    """bronze's part files (listed) that silver's file-source log does not name (read here)."""
    table = (proj / "spark-warehouse" / "bronze").resolve()
    parts = {str(p) for p in table.iterdir() if p.name.startswith("part-") and p.suffix == ".parquet"}
    log = proj / "pipeline-storage" / "_checkpoints" / "spark_catalog" / "default" / "silver" / "silver" / "0"
    read = set()
    for f in (log / "sources" / "0").iterdir():
        if f.name.isdecimal():
            for line in f.read_text().splitlines()[1:]:
                read.add(json.loads(line)["path"].removeprefix("file://").removeprefix("file:"))
    return parts - read


@pytest.mark.spark
def test_watch_draws_the_edge_from_a_table_to_the_flow_reading_it(storage, tmp_path):
    r = subprocess.run([SW, "watch", str(storage / "pipeline-storage"), "--log", "--once"], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    records = [orjson.loads(line) for line in r.stdout.splitlines()]
    edges = [d for d in records if d["kind"] == "pipeline-edge"]
    assert [(e["upstream"], e["downstream"]) for e in edges] == [("default.bronze", "default.silver")]
    [edge] = edges
    assert edge["path"] == str((storage / "spark-warehouse" / "bronze").resolve())
    unread = _unread_parts(storage)
    assert len(unread) == 1  # the file bronze wrote in the second run
    assert edge["backlogFiles"] == len(unread)
    assert edge["backlogBytes"] == sum(os.path.getsize(p) for p in unread)


FLOW = SdpFlow("spark_catalog", "default", "bronze", "bronze", 0)


@pytest.mark.parametrize("folder,flow,expected", [
    ("/p/spark-warehouse/bronze", FLOW, True),
    ("/p/spark-warehouse/silver", FLOW, False),  # another table's folder
    ("/p/warehouse/bronze", FLOW, False),  # a custom warehouse for default: not recognised
    ("/p/landing/bronze", FLOW, False),
    ("/p/wh/sales.db/bronze", SdpFlow("spark_catalog", "sales", "bronze", "bronze", 0), True),
    ("/p/spark-warehouse/bronze", SdpFlow("spark_catalog", "sales", "bronze", "bronze", 0), False),
    ("/p/spark-warehouse/bronze", SdpFlow("other", "default", "bronze", "bronze", 0), False),
])
def test_a_table_folder_is_recognised_only_where_the_session_catalog_puts_it(folder, flow, expected):
    assert is_table_folder(folder, flow) is expected
