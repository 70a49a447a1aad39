"""The wheel as a user with a Spark job installs it: built from this checkout, installed into a
fresh venv with its core dependencies only (no pyspark, no Java on PATH), the JVM-free tools
read a real checkpoint — and a command that needs pyspark says, in one line, what to install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CP = ROOT / "tests" / "fixtures" / "matrix" / "4.2.0" / "agg_rocks_cl" / "cp"
#: what the wheel is built from (a copy: setuptools would reuse the checkout's build/ folder,
#: whose stale files end up in the wheel)
SOURCES = ("pyproject.toml", "README.md", "streamwatch", "sample_pipelines", "jvm")
BUNDLED = {"flights", "orders", "events", "clicks", "sessions"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a clean copy of the checkout's sources."""
    base = tmp_path_factory.mktemp("wheel")
    (base / "src").mkdir()
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, base / "src" / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, base / "src" / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(base / "dist"),
                    str(base / "src")], check=True, timeout=600)
    (built,) = (base / "dist").glob("streamwatch-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A venv holding the built wheel and its core dependencies (pip's cache keeps it quick)."""
    base = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(base / "venv")], check=True, timeout=300)
    subprocess.run([str(base / "venv" / "bin" / "python"), "-m", "pip", "install", "--quiet", str(wheel)],
                   check=True, timeout=900)
    return base / "venv"


def _run(venv: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAVA_HOME", "SPARK_HOME", "PYTHONPATH", "STREAMWATCH_JARS", "XDG_CACHE_HOME")}
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"  # no java here
    env.update(extra)
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


def test_everything_ships_inside_the_streamwatch_namespace(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"streamwatch"}, tops  # no top-level sample_pipelines in site-packages
    # every package of the checkout, the bundled pipelines under their new name, and the POM
    packages = {p.parent.relative_to(ROOT).as_posix() for p in (ROOT / "streamwatch").rglob("__init__.py")}
    packages |= {"streamwatch/" + p.parent.relative_to(ROOT).as_posix()
                 for p in (ROOT / "sample_pipelines").rglob("__init__.py")}
    missing = sorted(p for p in packages if f"{p}/__init__.py" not in names)
    assert not missing, f"packages left out of the wheel (pyproject.toml [tool.setuptools] packages): {missing}"
    assert "streamwatch/jvm/pom.xml" in names
    top_level = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/top_level.txt")))
    assert top_level.decode().split() == ["streamwatch"]


def test_the_bundled_pipelines_load_from_the_wheel(venv):
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import importlib.util as u; "
                            "print(u.find_spec('sample_pipelines'), u.find_spec('streamwatch.sample_pipelines') is not None)"],
                           capture_output=True, text=True, timeout=60, cwd=venv.parent)
    assert probe.stdout.split() == ["None", "True"], probe
    out = _run(venv, "pipelines", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    names = {p["name"] for p in doc["pipelines"]}
    assert names >= BUNDLED, names


def test_jars_without_pyspark_names_the_install_and_doctor_reads_the_packaged_pom(venv):
    out = _run(venv, "jars", "--dest", str(venv.parent / "jars"))
    assert out.returncode == 3
    line = out.stderr.strip()
    assert "\n" not in line and "Traceback" not in out.stderr
    assert "pip install 'streamwatch[spark]'" in line
    assert not (venv.parent / "jars").exists()
    # the POM the wheel carries is the checkout's: doctor lists each of its pins
    import xml.etree.ElementTree as ET

    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    props = {el.tag.split("}")[1]: el.text for el in ET.parse(ROOT / "jvm" / "pom.xml").getroot().find("m:properties", ns)}
    cache = venv.parent / "cache"
    doctor = _run(venv, "doctor", XDG_CACHE_HOME=str(cache))
    # outside a checkout the runtime looks in the per-user folder `streamwatch jars` fills
    assert f"(jvm/pom.xml → {cache / 'streamwatch' / 'jars' / 'no-pyspark'})" in doctor.stdout, doctor.stdout
    assert f"org.apache.spark:spark-sql-kafka-0-10_2.13:{props['spark.version']}" in doctor.stdout, doctor.stdout
    assert f"io.delta:{props['delta.artifact']}:{props['delta.version']}" in doctor.stdout
