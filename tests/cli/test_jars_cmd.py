"""``streamwatch jars``: the JVM jars for the installed pyspark, resolved by the real mvn (Maven
Central through the configured mirror; ~/.m2 warm) into a folder the runtime then loads them
from — and, without mvn or with a repository it cannot reach, one line and exit 3 with nothing
left behind. Run as a user runs it: the installed command, a fresh process each."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata, util
from pathlib import Path

import pytest

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def _pyspark_jars() -> list[str]:
    spec = util.find_spec("pyspark")
    assert spec and spec.origin
    return sorted(os.listdir(Path(spec.origin).parent / "jars"))


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STREAMWATCH_JARS", "STREAMWATCH_TABLE_FORMAT", "MVN")}
    env.update(extra)
    return env


def _jars(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STREAMWATCH, "jars", *args], capture_output=True, text=True, env=env, timeout=600, cwd=cwd)


@pytest.mark.skipif(shutil.which("mvn") is None, reason="mvn not installed")
def test_spark_set_matches_the_installed_pyspark_and_the_runtime_loads_it(tmp_path):
    spark = metadata.version("pyspark")
    shipped = _pyspark_jars()
    scala = ".".join(next(n for n in shipped if n.startswith("scala-library-"))
                     .removeprefix("scala-library-").split(".")[:2])
    dest = tmp_path / "jars"
    # a relative --dest, as `make jars` gives it: relative to where the command runs
    r = _jars("--dest", "jars", env=_env(tmp_path), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    folder = dest / "spark"
    names = sorted(p.name for p in folder.glob("*.jar"))
    assert (folder / ".resolved").is_file()
    assert f"spark-sql-kafka-0-10_{scala}-{spark}.jar" in names  # the connector of this very pyspark
    delta = [n for n in names if n.startswith("delta-spark_")]
    assert len(delta) == 1 and f"_{scala}-" in delta[0], names
    assert all(zipfile.is_zipfile(folder / n) for n in names)  # real jars, fully copied
    # no jar pyspark already ships (two versions of one class on the driver's classpath)
    shipped_artifacts = {re.sub(r"-\d+(\.\d+)*[^-]*$", "", n.removesuffix(".jar")) for n in shipped}
    assert not [n for n in names if re.sub(r"-\d+(\.\d+)*[^-]*$", "", n.removesuffix(".jar")) in shipped_artifacts]
    # progress on stderr, nothing on stdout; no temporary folder or log left beside the set
    assert r.stdout == ""
    assert r.stderr.splitlines()[-1] == f"jars: spark → {folder} ({len(names)} jars)"
    assert sorted(os.listdir(dest)) == ["spark"]
    # the folder is where the runtime looks: doctor takes Delta and the Kafka connector from it
    doctor = subprocess.run([STREAMWATCH, "doctor"], capture_output=True, text=True, timeout=120,
                            env=_env(tmp_path, STREAMWATCH_JARS=str(dest)))
    rows = {line[:13].strip(): line[13:].strip() for line in doctor.stdout.splitlines() if line.strip()}
    delta_version = delta[0].rsplit("-", 1)[1].removesuffix(".jar")
    assert rows["table format"] == f"delta — Delta {delta_version} jars from {folder}"
    assert rows["kafka"] == "Spark Kafka source/sink loadable"


def test_without_mvn_one_line_and_exit_3(tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    dest = tmp_path / "jars"
    r = _jars("--dest", str(dest), env=_env(tmp_path, PATH=str(empty)))
    assert r.returncode == 3
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("streamwatch jars: mvn not found on PATH — Delta tables and the Kafka pipeline are off")
    assert "install Maven" in r.stderr
    assert not dest.exists()


@pytest.mark.skipif(shutil.which("mvn") is None, reason="mvn not installed")
def test_unreachable_repository_one_line_exit_3_and_nothing_left(tmp_path):
    """The real mvn with an empty local repository and every repository mirrored to a closed
    loopback port: resolution fails as it does offline."""
    home = tmp_path / "home"
    (home / ".m2").mkdir(parents=True)
    (home / ".m2" / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>"
        "<url>https://127.0.0.1:9/maven2</url></mirror></mirrors></settings>")
    env = _env(tmp_path, HOME=str(home),
               MAVEN_OPTS=f"-Duser.home={home} -Dmaven.repo.local={home / '.m2' / 'repository'}")
    dest = tmp_path / "jars"
    (dest / "spark").mkdir(parents=True)
    (dest / "spark" / "old.jar").write_bytes(b"PK")  # a previous set stays as it was
    r = _jars("--dest", str(dest), env=env)
    assert r.returncode == 3, r.stderr
    line = r.stderr.splitlines()[-1]
    assert line.startswith("streamwatch jars: mvn could not resolve the spark set") and "127.0.0.1" in line, r.stderr
    assert sorted(os.listdir(dest)) == ["spark"] and os.listdir(dest / "spark") == ["old.jar"]


def test_an_unknown_set_is_a_usage_error(tmp_path):
    r = _jars("--set", "hive", "--dest", str(tmp_path / "jars"), env=_env(tmp_path))
    assert r.returncode == 2 and "'hive' is not one of" in r.stderr
    assert not (tmp_path / "jars").exists()
