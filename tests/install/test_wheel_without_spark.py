"""The wheel as a user with a Spark job installs it: built from this checkout, installed into a
fresh venv with its core dependencies only (no pyspark, no Java on PATH), the JVM-free tools
read a real checkpoint — and a command that needs pyspark says, in one line, what to install."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CP = ROOT / "tests" / "fixtures" / "matrix" / "4.2.0" / "agg_rocks_cl" / "cp"


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A venv holding the built wheel and its core dependencies (pip's cache keeps it quick)."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(base / "dist"), str(ROOT)],
                   check=True, timeout=600)
    (wheel,) = (base / "dist").glob("streamwatch-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    subprocess.run([str(base / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                   check=True, timeout=900)
    return base / "venv"


def _run(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"  # no java here
    return subprocess.run([str(venv / "bin" / "streamwatch"), *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=venv.parent)


def test_the_core_install_has_no_pyspark(venv):
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import importlib.util as u; "
                            "print(u.find_spec('pyspark'), u.find_spec('delta'))"],
                           capture_output=True, text=True, timeout=60)
    assert probe.stdout.split() == ["None", "None"], probe


def test_inspect_state_and_watch_run_without_spark_or_java(venv):
    inspect = _run(venv, "inspect", str(CP), "--json")
    assert inspect.returncode == 0, inspect.stderr
    assert json.loads(inspect.stdout)["batches"]["last_committed"] == 6
    state = _run(venv, "state", str(CP), "--json")
    assert state.returncode == 0, state.stderr
    assert sum(len(t["rows"]) for t in json.loads(state.stdout)["tables"]) > 0
    watch = _run(venv, "watch", "--log", "--once", str(CP))
    assert watch.returncode == 0, watch.stderr
    kinds = {json.loads(line)["kind"] for line in watch.stdout.splitlines() if line.startswith("{")}
    assert "checkpoint-batch" in kinds


def test_a_command_that_needs_pyspark_names_the_install(venv):
    out = _run(venv, "log", "--pipeline", "flights", "--duration", "1")
    assert out.returncode == 3
    line = out.stderr.strip()
    assert "\n" not in line and "Traceback" not in out.stderr
    assert "pip install 'streamwatch[spark]'" in line
