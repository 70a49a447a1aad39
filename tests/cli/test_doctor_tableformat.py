"""``streamwatch doctor`` and the table-format decision for every ``STREAMWATCH_TABLE_FORMAT``
setting (parquet, delta with and without resolved jars, auto, a bogus value) and without
Java — from the installed command, with the environment a user would have. The decision
reads only the jar folder ``make jars`` fills (``$STREAMWATCH_JARS``): nothing is fetched."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")
DELTA = "4.4.0"  # the Delta release jvm/pom.xml pins for Spark 4.2


def _env(tmp_path: Path, jars: Path | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STREAMWATCH_TABLE_FORMAT", "STREAMWATCH_JARS")}
    env.update(HOME=str(tmp_path / "home"), STREAMWATCH_JARS=str(jars or tmp_path / "no-jars"), **extra)
    return env


def _doctor(env: dict[str, str]) -> tuple[int, dict[str, str], str]:
    r = subprocess.run([STREAMWATCH, "doctor"], capture_output=True, text=True, env=env, timeout=120)
    rows = {line[:13].strip(): line[13:].strip() for line in r.stdout.splitlines() if line.strip()}
    return r.returncode, rows, r.stderr


def _fake_jars(root: Path, resolved: bool = True) -> Path:
    """A jar folder as ``make jars`` leaves it (``spark/`` + its ``.resolved`` marker), with
    files named as Maven names Delta's jars (the decision looks at names only)."""
    folder = root / "spark"
    folder.mkdir(parents=True)
    (folder / f"delta-spark_4.2_2.13-{DELTA}.jar").write_bytes(b"")
    (folder / f"delta-storage-{DELTA}.jar").write_bytes(b"")
    if resolved:
        (folder / ".resolved").write_text("")
    return root


def test_parquet_forced(tmp_path):
    rc, rows, _ = _doctor(_env(tmp_path, _fake_jars(tmp_path / "jars"), STREAMWATCH_TABLE_FORMAT="parquet"))
    assert rc == 0
    assert rows["table format"] == "parquet — forced by STREAMWATCH_TABLE_FORMAT=parquet"
    assert rows["pyspark"] == metadata.version("pyspark") and rows["java"].startswith(("openjdk", "java"))


def test_delta_forced_with_resolved_jars(tmp_path):
    jars = _fake_jars(tmp_path / "jars")
    rc, rows, _ = _doctor(_env(tmp_path, jars, STREAMWATCH_TABLE_FORMAT="delta"))
    assert rc == 0
    assert rows["table format"] == f"delta — Delta {DELTA} jars from {jars / 'spark'}"
    assert rows["spark"] == f"2 jars in {jars / 'spark'}"  # where each jar is loaded from


def test_delta_forced_without_jars_is_an_error(tmp_path):
    rc, rows, err = _doctor(_env(tmp_path, STREAMWATCH_TABLE_FORMAT="delta"))
    assert rc == 1 and "Traceback" not in err
    assert rows["table format"] == (f"error — STREAMWATCH_TABLE_FORMAT=delta but Delta's jars are not in "
                                    f"{tmp_path / 'no-jars' / 'spark'}: run `streamwatch jars` (`make jars` in a checkout), "
                                    "which needs mvn and Maven Central")


@pytest.mark.parametrize("setting", ["auto", ""])
def test_auto_falls_back_to_parquet_and_says_why(tmp_path, setting):
    rc, rows, _ = _doctor(_env(tmp_path, STREAMWATCH_TABLE_FORMAT=setting))
    assert rc == 0
    assert rows["table format"].startswith(f"parquet — no Delta jars in {tmp_path / 'no-jars' / 'spark'}")
    assert rows["table format"].endswith("Parquet tables, no Kafka")
    assert rows["kafka"].startswith("off (")


def test_a_half_resolved_jar_folder_counts_as_absent(tmp_path):
    """``make jars`` writes ``.resolved`` only after Maven copied every jar: an interrupted
    resolution must not be taken for Delta."""
    rc, rows, _ = _doctor(_env(tmp_path, _fake_jars(tmp_path / "jars", resolved=False)))
    assert rc == 0 and rows["table format"].startswith("parquet — no Delta jars in")


def test_auto_takes_delta_from_resolved_jars(tmp_path):
    jars = _fake_jars(tmp_path / "jars")
    rc, rows, _ = _doctor(_env(tmp_path, jars, STREAMWATCH_TABLE_FORMAT="AUTO"))
    assert rc == 0 and rows["table format"] == f"delta — Delta {DELTA} jars from {jars / 'spark'}"


def test_bogus_setting_is_an_error_in_doctor_and_refuses_log_before_spark(tmp_path):
    env = _env(tmp_path, STREAMWATCH_TABLE_FORMAT="bogus")
    rc, rows, err = _doctor(env)
    assert rc == 1 and "Traceback" not in err
    assert rows["table format"] == "error — STREAMWATCH_TABLE_FORMAT='bogus': expected delta, parquet or auto"
    r = subprocess.run([STREAMWATCH, "log", "--pipeline", "events", "--workspace", str(tmp_path / "ws"), "--no-ui",
                        "--out", str(tmp_path / "ev.jsonl")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 3
    assert "Spark could not start: STREAMWATCH_TABLE_FORMAT='bogus'" in r.stderr and "Traceback" not in r.stderr


def test_java_missing_is_said(tmp_path):
    env = _env(tmp_path, STREAMWATCH_TABLE_FORMAT="parquet", JAVA_HOME=str(tmp_path / "no-java"))
    rc, rows, _ = _doctor(env)
    assert rows["java"] == "not found (install Java 17 and put it on PATH)"
    assert rc == 0  # doctor reports; it is `log`/`run` that cannot start Spark (exit 3)
