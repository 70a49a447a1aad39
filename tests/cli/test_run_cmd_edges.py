"""``streamwatch run`` as a person runs it, on the paths the other tests leave out:

* an ``s3a://`` workspace while ``hadoop-aws`` is not resolved: one line, exit 3, before
  Spark starts (no JVM);
* the Kafka pipeline without Spark's Kafka connector jars: one line, exit 3 (no JVM);
* the dashboard in a real pseudo-terminal on the orders pipeline (a real local Spark in the
  child process), sent SIGINT once the queries run: the dashboard quits as on ``q`` (Textual
  turns the signal into its quit), stops the queries and exits 0 — no traceback, the terminal
  restored.

``STREAMWATCH_JARS`` points at an empty folder where the test needs jars to be missing, so
the result does not depend on what ``make jars`` resolved here."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers.terminal import STREAMWATCH, Terminal

DEADLINE_S = 240.0  # a hang fails instead of blocking CI; waits are on what the terminal shows


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    empty = tmp_path / "no-jars"
    empty.mkdir(exist_ok=True)
    env = {**os.environ, "STREAMWATCH_JARS": str(empty)}
    return subprocess.run([STREAMWATCH, "run", *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=120)


def test_s3a_workspace_without_hadoop_aws_is_one_line_exit_3(tmp_path):
    r = _run(tmp_path, "--workspace", "s3a://my-bucket/streamwatch", "--no-ui")
    assert r.returncode == 3, r.stderr
    assert r.stderr.splitlines() == [
        "streamwatch run: --workspace s3a://my-bucket/streamwatch: Spark needs hadoop-aws for s3a:// and it is "
        "not resolved (run `streamwatch jars --set s3`, which needs mvn and Maven Central)"]
    assert r.stdout == ""
    assert not (tmp_path / "streamwatch-workspace").exists()


def test_kafka_pipeline_without_the_connector_jars_is_one_line_exit_3(tmp_path):
    r = _run(tmp_path, "--pipeline", "clicks", "--workspace", str(tmp_path / "ws"), "--no-ui")
    assert r.returncode == 3, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "streamwatch run: pipeline 'clicks' reads Kafka: Spark's Kafka connector jars are not in "
        f"{tmp_path / 'no-jars' / 'spark'}"), lines
    assert "Traceback" not in r.stderr


@pytest.mark.spark
def test_run_dashboard_sigint_quits_cleanly_with_exit_0(tmp_path):
    ws = tmp_path / "ws"
    # the default trigger starts every layer at once: "queries running" is the last status line.
    # Under availableNow, later layers are queued by a thread of their own, and on a loaded
    # machine their "queued" notices could replace that line before any paint showed it.
    t = Terminal("run", "--pipeline", "orders", "--workspace", str(ws), "--max-files", "1", "--land-every", "60",
                 "--no-ui", cwd=tmp_path, deadline_s=DEADLINE_S)
    try:
        t.wait_for(b"queries running")  # Spark started, the queries started: the dashboard is live
        os.kill(t.proc.pid, signal.SIGINT)
        assert t.exit_status() == 0
        assert b"Traceback" not in t.screen and b"Error" not in t.screen
        assert t.screen.rfind(b"\x1b[?1049l") > t.screen.rfind(b"\x1b[?1049h") > -1, \
            "the terminal was not restored (still on the alternate screen)"
        assert (ws / "landing" / "orders" / "orders" / "orders_000001.json").is_file()
    finally:
        t.close()
