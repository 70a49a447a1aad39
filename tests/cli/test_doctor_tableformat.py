"""``streamwatch doctor`` and the table-format decision for every ``STREAMWATCH_TABLE_FORMAT``
setting (parquet, delta with and without loadable jars, auto, a bogus value) and without
Java — from the installed command, with the environment a user would have. Maven Central is
made unreachable the real way: an HTTPS proxy on a loopback port that refuses connections."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


@pytest.fixture(scope="module")
def refused_proxy():
    """``http://127.0.0.1:PORT`` where PORT is bound (so nobody else takes it) but not
    listening: every connection is refused at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()


def _env(tmp_path: Path, proxy: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("STREAMWATCH_TABLE_FORMAT", "STREAMWATCH_DELTA_JARS", "no_proxy", "NO_PROXY")}
    env.update(HOME=str(tmp_path / "home"), https_proxy=proxy, HTTPS_PROXY=proxy, **extra)
    return env


def _doctor(env: dict[str, str]) -> tuple[int, dict[str, str], str]:
    r = subprocess.run([STREAMWATCH, "doctor", "--probe-timeout", "2"], capture_output=True, text=True,
                       env=env, timeout=120)
    rows = {line[:13].strip(): line[13:].strip() for line in r.stdout.splitlines() if line.strip()}
    return r.returncode, rows, r.stderr


def _fake_delta_jars(folder: Path) -> Path:
    """Files named as Spark's Ivy cache names Delta's jars (the decision looks at names only)."""
    folder.mkdir(parents=True)
    version = metadata.version("delta-spark")
    spark = ".".join(metadata.version("pyspark").split(".")[:2])
    (folder / f"io.delta_delta-spark_{spark}_2.13-{version}.jar").write_bytes(b"")
    (folder / f"io.delta_delta-storage-{version}.jar").write_bytes(b"")
    return folder


def test_parquet_forced(tmp_path, refused_proxy):
    rc, rows, _ = _doctor(_env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT="parquet"))
    assert rc == 0
    assert rows["table format"] == "parquet — forced by STREAMWATCH_TABLE_FORMAT=parquet"
    assert rows["pyspark"] == metadata.version("pyspark") and rows["java"].startswith(("openjdk", "java"))


def test_delta_forced_with_local_jars(tmp_path, refused_proxy):
    jars = _fake_delta_jars(tmp_path / "jars")
    rc, rows, _ = _doctor(_env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT="delta", STREAMWATCH_DELTA_JARS=str(jars)))
    assert rc == 0
    assert rows["delta jars"] == "loadable"
    assert rows["table format"] == f"delta — Delta {metadata.version('delta-spark')} jars found locally ({jars})"


def test_delta_forced_without_jars_or_maven_is_an_error(tmp_path, refused_proxy):
    rc, rows, err = _doctor(_env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT="delta"))
    assert rc == 1 and "Traceback" not in err
    assert rows["table format"].startswith("error — STREAMWATCH_TABLE_FORMAT=delta but Delta jars cannot be loaded")
    assert "Maven Central unreachable" in rows["table format"]


@pytest.mark.parametrize("setting", ["auto", ""])
def test_auto_falls_back_to_parquet_and_says_why(tmp_path, refused_proxy, setting):
    rc, rows, _ = _doctor(_env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT=setting))
    assert rc == 0
    assert rows["delta jars"] == "not loadable"
    assert rows["table format"].startswith("parquet — Delta jars not available: none local and Maven Central unreachable")


def test_auto_takes_delta_from_local_jars(tmp_path, refused_proxy):
    jars = _fake_delta_jars(tmp_path / "home" / ".ivy2.5.2" / "jars")  # where Spark's Ivy puts them
    rc, rows, _ = _doctor(_env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT="AUTO"))
    assert rc == 0 and rows["table format"].startswith(f"delta — Delta {metadata.version('delta-spark')} jars found locally ({jars})")


def test_bogus_setting_is_an_error_in_doctor_and_refuses_log_before_spark(tmp_path, refused_proxy):
    env = _env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT="bogus")
    rc, rows, err = _doctor(env)
    assert rc == 1 and "Traceback" not in err
    assert rows["table format"] == "error — STREAMWATCH_TABLE_FORMAT='bogus': expected delta, parquet or auto"
    r = subprocess.run([STREAMWATCH, "log", "--pipeline", "events", "--workspace", str(tmp_path / "ws"), "--no-ui",
                        "--out", str(tmp_path / "ev.jsonl")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 3
    assert "Spark could not start: STREAMWATCH_TABLE_FORMAT='bogus'" in r.stderr and "Traceback" not in r.stderr


def test_java_missing_is_said(tmp_path, refused_proxy):
    env = _env(tmp_path, refused_proxy, STREAMWATCH_TABLE_FORMAT="parquet", JAVA_HOME=str(tmp_path / "no-java"))
    rc, rows, _ = _doctor(env)
    assert rows["java"] == "not found (install Java 17 and put it on PATH)"
    assert rc == 0  # doctor reports; it is `log`/`run` that cannot start Spark (exit 3)
