"""Spark Connect URLs a user gets wrong, end to end through ``streamwatch log --remote``:

* a URL pyspark's client would refuse (a parameter that is not ``key=value``, a
  ``session_id`` that is not a UUID, a path): one
  line, exit 2 (usage), before any connection, the token never printed (no JVM);
* a server that refuses the session — a real Spark Connect server that requires a token
  (``SPARK_CONNECT_AUTHENTICATE_TOKEN``), reached without one: one line, exit 3 (Spark could
  not start), at once (gRPC ``UNAUTHENTICATED`` is not retried), nothing recorded.

The server runs in a child process (:func:`tests.helpers.connect_server.connect_server`), and
so does every client: the test run's classic session must not become a Connect client."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.connect_server import connect_server

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


def _log(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STREAMWATCH, "log", "--pipeline", "orders", "--workspace", str(tmp_path / "ws"),
                           "--out", str(tmp_path / "events.jsonl"), "--duration", "30", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize(("url", "message"), [
    ("sc://127.0.0.1:1/;token=s3cr3t;bad",
     "streamwatch log: --remote: parameter 'bad' is not key=value, in 'sc://127.0.0.1:1/;token=*********;bad'"),
    ("sc://127.0.0.1:1/;token=s3c=r3t",
     "streamwatch log: --remote: parameter 'token=*********' is not key=value, in 'sc://127.0.0.1:1/;token=*********'"),
    ("sc://127.0.0.1:1/;session_id=last-one",
     "streamwatch log: --remote: session_id must be a UUID, not 'last-one'"),
    ("sc://127.0.0.1:1/spark",
     "streamwatch log: --remote: nothing may follow HOST[:PORT] but /;param=value…, in 'sc://127.0.0.1:1/spark'"),
])
def test_a_url_the_connect_client_refuses_is_usage(tmp_path, url, message):
    r = _log(tmp_path, "--remote", url)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [message]
    assert "s3c" not in r.stderr and not (tmp_path / "events.jsonl").exists()


def test_the_parameters_pyspark_takes_still_parse():
    from streamwatch.spark.connect import parse_remote

    url = "sc://127.0.0.1:15010/;session_id=4f6d3e1a-0000-4000-8000-00000000c0de;user_id=me;use_ssl=false"
    assert parse_remote(url) == ("127.0.0.1", 15010)
    assert parse_remote("sc://spark.example/;") == ("spark.example", 15002)


@pytest.mark.spark
def test_a_server_that_refuses_the_session_is_one_line_exit_3(tmp_path):
    token = "streamwatch-test-token-0123456789"
    with connect_server(tmp_path / "server", env={"SPARK_CONNECT_AUTHENTICATE_TOKEN": token}) as url:
        r = _log(tmp_path, "--remote", url)
    assert r.returncode == 3, r.stderr
    lines = r.stderr.splitlines()
    assert lines[0] == f"streamwatch log: connecting to Spark Connect at {url}", lines
    assert len(lines) == 2 and lines[1].startswith(
        f"streamwatch log: Spark could not start: the Spark Connect server at {url} did not open a session: "), lines
    assert lines[1].split(" did not open a session: ")[1].startswith("UNAUTHENTICATED: "), lines[1]
    assert token not in r.stderr
    assert not (tmp_path / "events.jsonl").exists() or "progress" not in (tmp_path / "events.jsonl").read_text()
