"""A real Spark standalone cluster on loopback, started from the installed pyspark: one
``org.apache.spark.deploy.master.Master`` and one ``…deploy.worker.Worker`` (1 core, 1 GiB),
each in its own process group so that teardown can stop them and their executors."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def cluster_env(work: Path) -> dict[str, str]:
    """Environment for the daemons and for drivers talking to them: SPARK_HOME is the pip
    package, everything binds to 127.0.0.1, logs and pid files stay under ``work``."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_PID_DIR": str(work / "pids"),
        "SPARK_WORKER_DIR": str(work / "worker"),
        "SPARK_NO_DAEMONIZE": "1",
    })
    return env


@dataclass
class StandaloneCluster:
    """A running master + worker. ``url`` is the master URL (``spark://127.0.0.1:PORT``),
    ``ui`` the master's web UI, ``env`` the environment a driver process should use."""

    work: Path
    port: int = field(default_factory=free_port)
    webui_port: int = field(default_factory=free_port)
    worker_webui_port: int = field(default_factory=free_port)
    procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ui(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    @property
    def env(self) -> dict[str, str]:
        return cluster_env(self.work)

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        cmd = [str(spark_home() / "bin" / "spark-class"), *args]
        with open(self.work / f"{name}.out", "ab") as log:  # the child holds its own copy of the descriptor
            p = subprocess.Popen(cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
        self.procs.append(p)
        return p

    def state(self) -> dict:
        """The master's ``/json/`` status (workers, cores, active applications)."""
        with urllib.request.urlopen(f"{self.ui}/json/", timeout=5) as r:
            return json.load(r)

    def start(self, timeout_s: float = 120) -> StandaloneCluster:
        """Start the master, then the worker; return when the worker is ALIVE on the master.
        Raises ``RuntimeError`` (with the daemons' last output) when that takes longer than
        ``timeout_s``."""
        for d in ("logs", "pids", "worker"):
            (self.work / d).mkdir(parents=True, exist_ok=True)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.webui_port))
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", self.url, "--cores", "1",
                    "--memory", "1g", "--host", "127.0.0.1", "--webui-port", str(self.worker_webui_port),
                    "--work-dir", str(self.work / "worker"))
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"spark daemon exited ({p.returncode}): {self.output()}")
            try:
                workers = [w for w in self.state().get("workers", []) if w.get("state") == "ALIVE"]
                if workers:
                    return self
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"worker did not register within {timeout_s:g} s: {self.output()}")

    def output(self) -> str:
        return " | ".join(f"{f.name}: {f.read_text(errors='replace')[-1500:]}" for f in sorted(self.work.glob("*.out")))

    def stop(self) -> None:
        """SIGTERM each daemon's process group (the worker's executors are its children), then
        SIGKILL what is still alive after 10 s."""
        for p in reversed(self.procs):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(5)
