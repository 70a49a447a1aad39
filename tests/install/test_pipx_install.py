"""`pipx install` of the built wheel, as a user with a Spark job installs the command-line
tools: pipx (installed from PyPI into a temporary venv, pip's cache keeps it quick) puts
streamwatch into its own venv under temporary ``PIPX_HOME``/``PIPX_BIN_DIR`` (nothing leaks
into the user's ~/.local), with no pyspark and no Java on PATH (``JAVA_HOME`` unset); then
``inspect``, ``state`` and ``watch --log --once`` read checkpoints Spark wrote:

* the shared corpus' ``checkpoint-version-4.0.0/hdfs/join2`` (Spark's StateDataSourceReadSuite
  golden files), held against ``../shared/corpus/EXPECTED.md`` §17: batches 0–4 with
  watermarks 0, 0, 5000, 5000, 9000 and operator metadata v1 for ``symmetricHashJoin`` with
  4 stores × 5 partitions; and the copy's own files (only ``commits/3``; no state store files);
* ``state`` rows of the matrix fixture ``4.2.0/agg_rocks_cl`` against Spark's ``statestore``
  reader (``facts.json``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.install.test_wheel_without_spark import ROOT, wheel  # noqa: F401 - the built wheel fixture

JOIN = Path("spark") / "checkpoint-version-4.0.0" / "hdfs" / "join2"
MATRIX = ROOT / "tests" / "fixtures" / "matrix" / "4.2.0"


@pytest.fixture(scope="module")
def pipx_home(wheel, tmp_path_factory) -> Path:  # noqa: F811 - pytest's fixture by that name
    """A temporary folder holding pipx's own venv (``pipx-venv``), its ``home`` and ``bin``
    with streamwatch installed from the wheel by ``pipx install``."""
    base = tmp_path_factory.mktemp("pipx")
    subprocess.run([sys.executable, "-m", "venv", str(base / "pipx-venv")], check=True, timeout=300)
    py = str(base / "pipx-venv" / "bin" / "python")
    pip = subprocess.run([py, "-m", "pip", "install", "--quiet", "--progress-bar", "off", "pipx"],
                         capture_output=True, text=True, timeout=600)
    if pip.returncode != 0:
        pytest.skip(f"pipx not installable here (offline, not in pip's cache): {pip.stderr[-300:]}")
    out = subprocess.run([py, "-m", "pipx", "install", "--python", sys.executable, str(wheel)],
                         capture_output=True, text=True, timeout=900, env=_env(base, base / "pipx-venv" / "bin"))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return base


def _env(base: Path, bin_dir: Path) -> dict[str, str]:
    """The environment without Java, Spark or this checkout: PATH holds ``bin_dir`` only."""
    drop = ("JAVA_HOME", "SPARK_HOME", "PYTHONPATH", "STREAMWATCH_JARS", "VIRTUAL_ENV", "PYSPARK_PYTHON")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(PATH=str(bin_dir), PIPX_HOME=str(base / "home"), PIPX_BIN_DIR=str(base / "bin"),
               PIPX_MAN_DIR=str(base / "man"), COLUMNS="200")
    return env


def _sw(base: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = _env(base, base / "bin")
    assert shutil.which("java", path=env["PATH"]) is None
    return subprocess.run([str(base / "bin" / "streamwatch"), *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=base)


def test_pipx_puts_the_command_in_its_bin_dir_without_pyspark(pipx_home):
    assert (pipx_home / "bin" / "streamwatch").exists()
    venv_py = pipx_home / "home" / "venvs" / "streamwatch" / "bin" / "python"
    probe = subprocess.run([str(venv_py), "-c", "import importlib.util as u; print(u.find_spec('pyspark'))"],
                           capture_output=True, text=True, timeout=60, cwd=pipx_home)
    assert probe.stdout.split() == ["None"], probe
    doctor = _sw(pipx_home, "doctor")
    assert doctor.returncode == 0, doctor.stderr
    assert next(line for line in doctor.stdout.splitlines() if line.startswith("java ")).split(None, 1)[1].startswith("not found")
    assert next(line for line in doctor.stdout.splitlines() if line.startswith("pyspark ")).split(None, 1)[1] == "not installed"


def test_inspect_and_watch_read_a_spark_golden_checkpoint(pipx_home, corpus):
    cp = corpus / JOIN
    if not cp.is_dir():
        pytest.skip(f"{cp} not in the shared corpus")
    inspect = _sw(pipx_home, "inspect", str(cp), "--json")
    assert "Traceback" not in inspect.stderr, inspect.stderr
    doc = json.loads(inspect.stdout)
    assert (doc["batches"]["first"], doc["batches"]["latest"]) == (0, 4)
    assert doc["batches"]["last_committed"] == 3  # the copy holds commits/3 only
    assert doc["watermark_ms"] == 9000
    assert [s["id"] for s in doc["sources"]] == ["0", "1"]
    (op,) = doc["state"]
    assert (op["operator_id"], op["name"], op["metadata_version"], op["partitions"]) == (0, "symmetricHashJoin", 1, 5)
    assert sorted(op["stores"]) == ["left-keyToNumValues", "left-keyWithIndexToValue",
                                    "right-keyToNumValues", "right-keyWithIndexToValue"]

    watch = _sw(pipx_home, "watch", "--log", "--once", str(cp))
    assert watch.returncode == 0, watch.stderr
    events = [json.loads(line) for line in watch.stdout.splitlines() if line.startswith("{")]
    batches = [e for e in events if e["kind"] == "checkpoint-batch"]
    assert [(e["batchId"], e["watermarkMs"]) for e in batches] == [(3, 5000)]
    (status,) = [e for e in events if e["kind"] == "checkpoint-status"]
    assert (status["lastBatchId"], status["lastCommittedBatchId"], status["inFlightBatchId"]) == (4, 3, 4)


def test_state_reads_without_spark(pipx_home, corpus):
    # the corpus copies keep no state store files: on one with no commit, state says so
    agg = corpus / "spark" / "checkpoint-version-4.0.0" / "rocksdb" / "agg"
    if not agg.is_dir():
        pytest.skip(f"{agg} not in the shared corpus")
    assert not (agg / "commits").exists()
    empty = _sw(pipx_home, "state", str(agg), "--json")
    assert "Traceback" not in empty.stderr, empty.stderr
    doc = json.loads(empty.stdout)
    assert doc["tables"] == [] and "no committed batch" in doc["note"]
    # rows: a checkpoint pyspark 4.2.0 wrote, against its statestore reader
    case = json.loads((MATRIX / "facts.json").read_text())["cases"]["agg_rocks_cl"]
    state = _sw(pipx_home, "state", str(MATRIX / case["checkpoint"]), "--json")
    assert state.returncode == 0, state.stderr
    (table,) = json.loads(state.stdout)["tables"]
    (store,) = case["stores"]
    assert (table["operator_name"], table["store"]) == (case["metadata"][0]["operatorName"], store["options"]["storeName"])
    assert len(table["rows"]) == store["count"]
    cols = [c["name"] for c in table["columns"]]
    keys = {tuple(r[cols.index("key.key")] for r in table["rows"])} if "key.key" in cols else set()
    assert keys and sorted(keys.pop()) == sorted(r["key"]["key"] for r in store["rows"])
