"""`streamwatch doctor` lists the JVM dependencies `streamwatch jars` would resolve for the
pyspark that is installed — not jvm/pom.xml's pins for the pyspark the project pins. Held
against pyspark itself: its ``__version__`` and the Scala/Hadoop versions of the jars it ships,
for this checkout's pyspark and for pyspark 3.5.7 (installed from pip's cache beside it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamwatch.spark.jars import InstalledSpark, planned_artifacts

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")
# "  <set>  <group>:<artifact>:<version>  <where>" under the "JVM dependencies" header
_LINE = re.compile(r"^  (?P<set>\S+)\s+(?P<gav>[^\s:]+:[^\s:]+:\S+)\s")


def _pyspark_facts(pythonpath: str | None) -> InstalledSpark:
    """pyspark's own account: ``pyspark.__version__`` as the interpreter imports it and the
    versions in the file names of the jars it ships."""
    env = _env(pythonpath)
    out = subprocess.run([sys.executable, "-c", "import pyspark, os; print(pyspark.__version__); "
                          "print(os.path.dirname(pyspark.__file__))"],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    version, home = out.stdout.split()
    jars = os.listdir(Path(home) / "jars")

    def of(prefix: str) -> str | None:
        found = [m[1] for n in jars if (m := re.fullmatch(re.escape(prefix) + r"-(\d[\w.\-]*)\.jar", n))]
        return found[0] if found else None

    scala = of("scala-library")
    assert scala is not None
    return InstalledSpark(version, ".".join(scala.split(".")[:2]), of("hadoop-client-api"), of("jackson-databind"))


def _env(pythonpath: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


def _doctor_pins(pythonpath: str | None, tmp_path: Path) -> tuple[str, set[str]]:
    out = subprocess.run([STREAMWATCH, "doctor"], capture_output=True, text=True, timeout=300,
                         env={**_env(pythonpath), "STREAMWATCH_JARS": str(tmp_path / "jars")})
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith("JVM dependencies")]
    pins = {f"{m['set']} {m['gav']}" for line in lines[start + 1:] if (m := _LINE.match(line))}
    return lines[start], pins


def _check(spark: InstalledSpark, header: str, pins: set[str]) -> None:
    assert header.startswith(f"JVM dependencies for pyspark {spark.version} ")
    assert pins == {f"{a.jar_set} {a.group}:{a.artifact}:{a.version}" for a in planned_artifacts(spark)}
    # the connector Spark publishes for that very pyspark and Scala line; hadoop-aws = its Hadoop
    assert f"spark org.apache.spark:spark-sql-kafka-0-10_{spark.scala}:{spark.version}" in pins
    assert f"s3 org.apache.hadoop:hadoop-aws:{spark.hadoop}" in pins


def test_doctor_lists_what_jars_resolves_for_the_installed_pyspark(tmp_path):
    spark = _pyspark_facts(None)
    header, pins = _doctor_pins(None, tmp_path)
    _check(spark, header, pins)


def test_doctor_on_pyspark_3_5_lists_its_own_connector_not_the_poms(tmp_path):
    site = tmp_path / "site"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                          "pyspark==3.5.7"], capture_output=True, text=True, timeout=900)
    if pip.returncode != 0:
        pytest.skip(f"pyspark 3.5.7 not installable here (offline, not in pip's cache): {pip.stderr[-300:]}")
    spark = _pyspark_facts(str(site))
    assert (spark.version, spark.scala) == ("3.5.7", "2.12")
    header, pins = _doctor_pins(str(site), tmp_path)
    _check(spark, header, pins)
    assert "spark io.delta:delta-spark_2.12:3.3.2" in pins  # Delta's last release for Spark 3.5
    assert not any(":4.2.0" in p for p in pins), pins  # none of the POM's pins for pyspark 4.2
