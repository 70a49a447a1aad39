"""``streamwatch log --remote sc://127.0.0.1:PORT`` at a loopback port that accepts TCP but is
no Spark Connect (gRPC) server — one that says nothing, one that answers HTTP/1.1 garbage: the
``connecting to`` progress line, then one error line on stderr, exit 3 (docs/recording.md: the ``--remote`` server is unreachable or refuses the
session), after the handshake bound (5 s), not pyspark's client retrying for 10 minutes.
Nothing recorded, no JVM (the check comes before any session)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


@contextmanager
def _not_connect_server(reply: bytes | None) -> Iterator[int]:
    """A loopback TCP server on an ephemeral port; each connection gets ``reply`` after the
    client's first bytes (then is closed), or nothing at all (kept open) when None."""
    srv = socket.create_server(("127.0.0.1", 0))
    kept: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:  # closed: the test is over
                return
            kept.append(conn)
            if reply is not None:
                try:
                    conn.recv(4096)
                    conn.sendall(reply)
                except OSError:
                    pass
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1]
    finally:
        srv.close()
        for conn in kept:
            conn.close()
        thread.join(10)


@pytest.mark.parametrize("reply", [None, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nBad Request"],
                         ids=["silent", "http-garbage"])
def test_a_port_that_is_not_spark_connect_is_one_line_exit_3(tmp_path, reply):
    with _not_connect_server(reply) as port:
        started = time.monotonic()
        r = subprocess.run([STREAMWATCH, "log", "--remote", f"sc://127.0.0.1:{port}", "--pipeline", "orders",
                            "--workspace", str(tmp_path / "ws"), "--out", str(tmp_path / "events.jsonl"),
                            "--duration", "30"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=180)
        took = time.monotonic() - started
    assert r.returncode == 3, r.stderr
    lines = r.stderr.splitlines()  # the progress line, then the one error line
    assert len(lines) == 2, lines
    assert lines[0] == f"streamwatch log: connecting to Spark Connect at sc://127.0.0.1:{port}", lines
    assert lines[1].startswith(f"streamwatch log: Spark could not start: the server at 127.0.0.1:{port} "
                               "does not answer as a Spark Connect (gRPC) server"), lines
    assert r.stdout == ""
    out = tmp_path / "events.jsonl"
    assert not out.exists() or "progress" not in out.read_text()
    # generous: the bound is 5 s plus interpreter and pyspark import; pyspark retried for minutes
    assert took < 60, took
