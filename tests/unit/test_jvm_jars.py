"""The JVM dependencies: jvm/pom.xml pins what matches pyspark, `jvm/resolve` never fails the
build, and the table format follows what was resolved (no network at decision time)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.spark.tableformat import TableFormatError, decide_table_format, pinned_artifacts, resolved_jars

ROOT = Path(__file__).resolve().parents[2]


def _pyspark_jars() -> list[str]:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    assert spec and spec.origin
    return sorted(os.listdir(Path(spec.origin).parent / "jars"))


def _fake_set(root: Path, jar_set: str, names: list[str], resolved: bool = True) -> None:
    d = root / jar_set
    d.mkdir(parents=True)
    for n in names:
        (d / n).write_bytes(b"PK")
    if resolved:
        (d / ".resolved").touch()


def test_pom_pins_the_delta_and_kafka_releases_built_for_the_pinned_pyspark():
    from importlib import metadata

    pins = {(a.jar_set, a.artifact): a.version for a in pinned_artifacts()}
    spark = metadata.version("pyspark")
    major_minor = ".".join(spark.split(".")[:2])
    # delta-spark's pip package names the artifact delta-spark_<spark major.minor>_2.13
    assert pins[("spark", f"delta-spark_{major_minor}_2.13")].startswith(
        ".".join(metadata.version("delta-spark").split(".")[:2]))
    assert pins[("spark", "delta-storage")] == pins[("spark", f"delta-spark_{major_minor}_2.13")]
    assert pins[("spark", "spark-sql-kafka-0-10_2.13")] == spark
    assert pins[("kafka-broker", "kafka_2.13")] == pins[("spark", "kafka-clients")]
    hadoop = next(n for n in _pyspark_jars() if n.startswith("hadoop-client-api-"))
    assert pins[("s3", "hadoop-aws")] == hadoop.removeprefix("hadoop-client-api-").removesuffix(".jar")


def test_resolved_spark_set_repeats_no_jar_pyspark_ships():
    jars = resolved_jars("spark")
    if not jars:
        pytest.skip("`make jars` has not resolved the spark set here (no mvn / Maven Central)")


    shipped = {re.sub(r"-\d+(\.\d+)*.*$", "", n.removesuffix(".jar")) for n in _pyspark_jars()}
    clashes = [j.path.name for j in jars if j.artifact in shipped]
    assert not clashes, f"jars pyspark already ships would clash on the classpath: {clashes}"
    assert {"delta-spark_4.2_2.13", "delta-storage", "spark-sql-kafka-0-10_2.13", "kafka-clients",
            "commons-pool2"} <= {j.artifact for j in jars}


def test_jar_names_split_into_artifact_and_version(tmp_path):
    _fake_set(tmp_path, "spark", ["spark-sql-kafka-0-10_2.13-4.2.0.jar", "delta-spark_4.2_2.13-4.4.0.jar",
                                  "delta-storage-4.4.0.jar", "zstd-jni-1.5.7-7.jar"])
    got = {j.artifact: j.version for j in resolved_jars("spark", {"STREAMWATCH_JARS": str(tmp_path)})}
    assert got == {"spark-sql-kafka-0-10_2.13": "4.2.0", "delta-spark_4.2_2.13": "4.4.0",
                   "delta-storage": "4.4.0", "zstd-jni": "1.5.7-7"}


def test_delta_when_the_spark_set_is_resolved_with_every_jar_on_spark_jars(tmp_path):
    _fake_set(tmp_path, "spark", ["delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar",
                                  "spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar"])
    d = decide_table_format({"STREAMWATCH_JARS": str(tmp_path)})
    assert d.format == "delta" and d.kafka
    assert len(d.conf["spark.jars"].split(",")) == 4
    assert d.conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert "spark.jars.packages" not in d.conf  # never a network fetch at session start
    forced = decide_table_format({"STREAMWATCH_JARS": str(tmp_path), "STREAMWATCH_TABLE_FORMAT": "parquet"})
    assert forced.format == "parquet" and forced.kafka and "spark.sql.extensions" not in forced.conf


def test_parquet_without_jars_or_with_a_half_copied_set(tmp_path):
    _fake_set(tmp_path, "spark", ["delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"], resolved=False)
    d = decide_table_format({"STREAMWATCH_JARS": str(tmp_path)})
    assert d.format == "parquet" and not d.kafka and not d.conf
    assert "make jars" in d.reason
    with pytest.raises(TableFormatError, match="make jars"):
        decide_table_format({"STREAMWATCH_JARS": str(tmp_path), "STREAMWATCH_TABLE_FORMAT": "delta"})
    with pytest.raises(TableFormatError, match="expected delta, parquet or auto"):
        decide_table_format({"STREAMWATCH_TABLE_FORMAT": "orc"})


def test_resolve_without_mvn_says_what_is_off_and_succeeds(tmp_path):
    env = {"PATH": str(tmp_path / "empty-bin"), "HOME": str(tmp_path)}
    bash = shutil.which("bash")
    r = subprocess.run([bash, str(ROOT / "jvm" / "resolve"), "spark", str(tmp_path / "jars")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "mvn not found" in r.stderr and "Parquet tables" in r.stderr
    assert not (tmp_path / "jars" / "spark").exists()


def test_resolve_with_a_failing_mvn_leaves_no_half_set(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "mvn").write_text("#!/bin/sh\necho '[ERROR] Could not transfer artifact: Network is unreachable'\nexit 1\n")
    (fake / "mvn").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    r = subprocess.run([str(ROOT / "jvm" / "resolve"), "spark", str(tmp_path / "jars")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "could not resolve" in r.stderr and "Network is unreachable" in r.stderr
    assert os.listdir(tmp_path / "jars") == []


def test_doctor_lists_every_pinned_dependency_and_the_fallback(tmp_path, monkeypatch):
    from streamwatch.cli.doctor_cmd import doctor

    monkeypatch.setenv("STREAMWATCH_JARS", str(tmp_path))
    monkeypatch.delenv("STREAMWATCH_TABLE_FORMAT", raising=False)
    out = CliRunner().invoke(doctor).output
    for a in pinned_artifacts():
        assert f"{a.group}:{a.artifact}:{a.version}" in out
    assert "table format  parquet" in out and "make jars" in out
    _fake_set(tmp_path, "spark", ["delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"])
    out = CliRunner().invoke(doctor).output
    assert f"4.4.0 from {tmp_path / 'spark' / 'delta-storage-4.4.0.jar'}" in out
    assert "table format  delta" in out
    monkeypatch.setenv("STREAMWATCH_TABLE_FORMAT", "delta")
    monkeypatch.setenv("STREAMWATCH_JARS", str(tmp_path / "none"))
    assert CliRunner().invoke(doctor).exit_code == 1
