"""The clicks pipeline from the command line, in subprocesses: `streamwatch log --pipeline
clicks` starts its own Kafka broker (temporary log folder), `streamwatch land clicks` produces
more events to it while it runs, and the broker is gone — port closed, folder removed — after
SIGTERM, and after SIGINT while it was still starting. Without the Kafka jars: one line, exit 3."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "STREAMWATCH_KAFKA_BOOTSTRAP"}
    env.update(extra)
    return env


def _accepts(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def _processes_mentioning(text: str) -> list[int]:
    """Pids whose command line contains ``text`` (the broker's java names its log folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("command", ["log", "run"])
def test_without_the_kafka_jars_clicks_is_one_line_and_exit_3(tmp_path, command):
    out = subprocess.run([STREAMWATCH, command, "--pipeline", "clicks", "--workspace", str(tmp_path / "ws")],
                         capture_output=True, text=True, timeout=120, env=_env(STREAMWATCH_JARS=str(tmp_path)))
    assert out.returncode == 3, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "Kafka connector jars are not in" in lines[0] and "make jars" in lines[0]
    assert out.stdout == ""


def test_land_clicks_without_a_broker_says_how_to_get_one(tmp_path):
    out = subprocess.run([STREAMWATCH, "land", "clicks", "--workspace", str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=_env())
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "no Kafka broker known" in out.stderr and "--kafka-bootstrap" in out.stderr


def test_pipelines_lists_clicks(tmp_path):
    out = subprocess.run([STREAMWATCH, "pipelines", "-v"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    assert re.search(r"^clicks\s+click events from Kafka", out.stdout, re.M), out.stdout
    assert "clicks_bronze [append → table bronze]" in out.stdout


def _broker_jars():
    from streamwatch.cli.kafka_opts import kafka_connector_missing
    from streamwatch.spark.kafka_broker import broker_available

    ok, why = broker_available()
    if not ok:
        pytest.skip(why)
    missing = kafka_connector_missing()
    if missing:
        pytest.skip(missing)


class _Lines:
    """Collects a pipe's lines on a thread; ``wait_for(pred)`` waits on each new line."""

    def __init__(self, pipe, parse=lambda s: s) -> None:
        self.lines: list = []
        self.done = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe, parse), daemon=True)
        self._thread.start()

    def _read(self, pipe, parse) -> None:
        for raw in pipe:
            with self._cv:
                self.lines.append(parse(raw))
                self._cv.notify_all()
        with self._cv:
            self.done = True
            self._cv.notify_all()

    def wait_for(self, pred, timeout: float) -> bool:
        with self._cv:
            return self._cv.wait_for(lambda: pred(self.lines) or self.done, timeout) and pred(self.lines)

    def join(self) -> None:
        self._thread.join(30)


def _input_rows(records: list, query: str) -> int:
    return sum(s["numInputRows"] for r in records if r["kind"] == "progress" and r["event"]["name"] == query
               for s in r["event"]["sources"])


@pytest.mark.spark
@pytest.mark.timeout(1200)  # two JVMs (Spark, broker) and three queries' first Delta batches
def test_log_clicks_runs_its_own_broker_land_produces_more_and_sigterm_stops_it(tmp_path, spark, table_format):
    _broker_jars()
    ws = tmp_path / "ws"
    proc = subprocess.Popen(
        [STREAMWATCH, "log", "--pipeline", "clicks", "--workspace", str(ws), "--no-ui",
         "--trigger", "processingTime=1 second", "--land-every", "0.5", "--max-files", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(TMPDIR=str(tmp_path)))
    events = _Lines(proc.stdout, json.loads)
    errors = _Lines(proc.stderr)
    try:
        assert errors.wait_for(lambda ls: any("Kafka broker on" in s for s in ls), 240), errors.lines
        said = next(s for s in errors.lines if "Kafka broker on" in s)
        bootstrap, log_dir = re.search(r"Kafka broker on (\S+) \(log dir (\S+),", said).groups()
        assert Path(log_dir).parent == tmp_path and Path(log_dir).is_dir()
        landing = ws / "landing" / "clicks" / "clicks"
        assert (landing / ".kafka-bootstrap").read_text().strip() == bootstrap
        # the feeder produces 3 batches of 100 (--max-files 3); bronze reads all of them
        assert events.wait_for(lambda rs: _input_rows(rs, "clicks_bronze") >= 300, 600), errors.lines[-5:]
        landed = subprocess.run([STREAMWATCH, "land", "clicks", "--workspace", str(ws), "--files", "2",
                                 "--bad-ratio", "0.25", "--late-ratio", "0.1"],
                                capture_output=True, text=True, timeout=120, env=_env())
        assert landed.returncode == 0, landed.stderr
        manifests = [Path(p) for p in landed.stdout.split()]
        assert [p.name for p in manifests] == ["batch-000004.json", "batch-000005.json"]
        docs = [json.loads(p.read_text()) for p in manifests]
        bad = sum(d["bad"] for d in docs)
        assert all(d["events"] == 100 for d in docs) and 0 < bad < 200 and sum(d["late"] for d in docs) > 0
        assert sum(last - first + 1 for d in docs for first, last in d["offsets"].values()) == 200
        assert events.wait_for(lambda rs: _input_rows(rs, "clicks_bronze") >= 500
                               and _input_rows(rs, "clicks_silver") >= 500, 600), errors.lines[-5:]
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(180)
    finally:
        if proc.poll() is None:
            proc.kill()
    events.join()
    errors.join()
    assert rc == 0, errors.lines
    assert any(f"Kafka broker on {bootstrap} stopped" in s for s in errors.lines)
    assert not _accepts(bootstrap) and not Path(log_dir).exists() and not _processes_mentioning(log_dir)
    assert not (landing / ".kafka-bootstrap").exists()
    assert _input_rows(events.lines, "clicks_bronze") == 500  # every event once
    tables = ws / "tables" / "clicks"
    assert spark.read.format(table_format).load(str(tables / "bronze")).count() == 500
    assert spark.read.format(table_format).load(str(tables / "silver")).count() == 500 - bad


@pytest.mark.spark
def test_sigint_while_the_broker_starts_leaves_no_broker_behind(tmp_path):
    _broker_jars()
    proc = subprocess.Popen([STREAMWATCH, "log", "--pipeline", "clicks", "--workspace", str(tmp_path / "ws")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(TMPDIR=str(tmp_path)))
    errors = _Lines(proc.stderr)
    try:
        assert errors.wait_for(lambda ls: any("starting a single-node Kafka broker" in s for s in ls), 120)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    errors.join()
    assert rc == 0, errors.lines
    assert "Traceback" not in "".join(errors.lines)
    assert not list(tmp_path.glob("streamwatch-kafka-*")), "the broker's temporary folder was left behind"
    assert not _processes_mentioning(f"{tmp_path}/streamwatch-kafka-")
