"""A real Spark Connect server for tests: pyspark's own (``spark-connect_2.13-4.2.0.jar`` ships
in the wheel) started in a child process as a classic local session with
``spark.plugins=org.apache.spark.sql.connect.SparkConnectPlugin``, gRPC bound to an ephemeral
port on 127.0.0.1 (``spark.connect.grpc.binding.port=0``). The child prints
``sc://127.0.0.1:<port>`` (``SparkConnectService.localPort``) once the server listens and
stops Spark when its stdin closes. Its JVM and Python logs go to ``server.log`` beside it.

A separate process, not ``SparkSession.builder.remote("local[1]")``: that starts the server
in the test run's own JVM (which already holds the shared classic session) on the fixed port
15002, and marks the whole interpreter as a Connect client (``SPARK_CONNECT_MODE_ENABLED``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("streamwatch-connect-test")
             .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
             .config("spark.connect.grpc.binding.address", "127.0.0.1")
             .config("spark.connect.grpc.binding.port", "0")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "1").config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("WARN")
    service = getattr(spark._jvm.org.apache.spark.sql.connect.service, "SparkConnectService$").__getattr__("MODULE$")
    print(f"sc://127.0.0.1:{service.localPort()}", flush=True)
    sys.stdin.read()  # until the test run closes our stdin
    spark.stop()
""")


@contextlib.contextmanager
def connect_server(workdir: Path, start_timeout_s: float = 300.0, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start the server (see the module docstring); yields its URL ``sc://127.0.0.1:PORT``.
    ``env``: more environment for the server (e.g. ``SPARK_CONNECT_AUTHENTICATE_TOKEN``).
    On exit closes the child's stdin and waits for Spark to stop (killed after 60 s). Fails
    the test (with the server's log tail) when no URL is printed within ``start_timeout_s`` s;
    skips when pyspark's Connect client libraries are not installed."""
    pytest.importorskip("grpc", reason="Spark Connect needs pip install -e '.[test]' (the connect extra)")
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / "server.log"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})}
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", SERVER], cwd=workdir, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True)
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(start_timeout_s)  # the line, or EOF when the child died
    try:
        url = first[0].strip() if first else ""
        if not url.startswith("sc://"):
            tail = log_path.read_text(errors="replace")[-3000:]
            pytest.fail(f"the Spark Connect server did not start (exit {proc.poll()}):\n{tail}")
        yield url
    finally:
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
