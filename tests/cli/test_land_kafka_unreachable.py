"""``streamwatch land clicks --kafka-bootstrap`` at a loopback port nothing listens on (no
JVM, no broker): one line on stderr naming the broker, exit 4 (documented: the broker did
not take the events), no librdkafka log lines (``%3|…|FAIL|rdkafka#…``), no manifest
landed, and it gives up after the connect bound (5 s), not librdkafka's 30 s+ of retries."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


def _closed_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_broker_is_one_line_exit_4_within_the_connect_bound(tmp_path):
    bootstrap = f"127.0.0.1:{_closed_loopback_port()}"
    ws = tmp_path / "ws"
    started = time.monotonic()
    r = subprocess.run([STREAMWATCH, "land", "clicks", "--kafka-bootstrap", bootstrap, "--workspace", str(ws)],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    took = time.monotonic() - started
    assert r.returncode == 4, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"streamwatch land: clicks/clicks: cannot reach Kafka at {bootstrap}: "), lines
    assert "rdkafka" not in r.stderr
    assert r.stdout == ""
    assert not list((ws / "landing" / "clicks" / "clicks").glob("batch-*.json"))
    # generous: the bound is 5 s plus interpreter start; librdkafka's own retries took 30 s
    assert took < 25, took
