"""Every exit code and stop path of ``streamwatch log`` (docs/recording.md, Headless logging), each from
the installed command in a subprocess: 1 a query failed, 3 Spark could not start, 4 the
output cannot be written, 0 after SIGTERM and after ``--duration``; ``--max-bytes``
rotation read back whole; ``--prometheus`` scraped from the running process.

Every wait is on what the process reports (its stdout/stderr lines, its exit), never a sleep.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


class LogProcess:
    """``streamwatch log`` with its stdout (JSONL records) and stderr (lines) read on threads;
    :meth:`wait_for` blocks until a predicate over what was read holds."""

    def __init__(self, args: list[str], env: dict | None = None) -> None:
        self.proc = subprocess.Popen([STREAMWATCH, "log", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, **(env or {})})
        self.records: list[dict] = []
        self.stderr: list[str] = []
        self.cond = threading.Condition()
        self._threads = [threading.Thread(target=self._read, args=(s, f), daemon=True)
                         for s, f in ((self.proc.stdout, self._record), (self.proc.stderr, self._err))]
        for t in self._threads:
            t.start()

    def _record(self, line: bytes) -> None:
        self.records.append(json.loads(line))

    def _err(self, line: bytes) -> None:
        self.stderr.append(line.decode().rstrip("\n"))

    def _read(self, stream, add) -> None:
        for line in stream:
            with self.cond:
                add(line)
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, predicate, timeout: float, what: str) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: predicate() or self.proc.poll() is not None, timeout)
        assert ok and predicate(), f"{what}: not seen (exit {self.proc.poll()}); stderr: {self.stderr[-15:]}"

    def finish(self, timeout: float = 300) -> int:
        try:
            rc = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for t in self._threads:
            t.join(30)
        return rc

    def runs(self, kind: str) -> set[str]:
        return {r["event"]["runId"] for r in self.records if r["kind"] == kind}


def _queries(pipeline: str) -> int:
    from streamwatch.pipeline import get_pipeline

    return len(get_pipeline(pipeline).layers)


def test_exit_3_when_spark_cannot_start(tmp_path):
    """JAVA_HOME pointing nowhere: the JVM cannot be launched — one line, exit 3."""
    p = LogProcess(["--pipeline", "events", "--workspace", str(tmp_path / "ws"), "--no-ui",
                    "--out", str(tmp_path / "ev.jsonl")], env={"JAVA_HOME": str(tmp_path / "no-java")})
    assert p.finish(300) == 3
    err = "\n".join(p.stderr)
    assert "Spark could not start" in err and "Traceback" not in err, err
    assert [ln for ln in p.stderr if "Spark could not start" in ln] == [p.stderr[-1]]


@pytest.mark.parametrize("target", ["a-folder", "a-file/under-a-file.jsonl"])
def test_exit_4_when_the_output_cannot_be_written(tmp_path, target):
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("")
    out = subprocess.run([STREAMWATCH, "log", "--pipeline", "events", "--out", str(tmp_path / target)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 4
    why = "Is a directory" if target == "a-folder" else "Not a directory"
    assert out.stdout == "" and out.stderr.splitlines()[-1] == f"streamwatch log: cannot write {tmp_path / target}: {why}"
    assert "Traceback" not in out.stderr
    assert "starting Spark" not in out.stderr  # refused before the Spark start-up


@pytest.mark.spark
def test_exit_1_when_a_query_terminates_with_an_exception(tmp_path):
    """bronze's checkpoint holds an offsets log of a version Spark does not know: the query
    starts, fails in its stream thread, the others finish (availableNow) — exit 1."""
    from streamwatch.pipeline import Workspace

    from sample_pipelines.events.factory import EventsFactory

    ws = Workspace(tmp_path / "ws")
    EventsFactory(ws.landing("events", "events")).land(2)
    cp = Path(ws.checkpoint("events", "bronze"))
    (cp / "offsets").mkdir(parents=True)
    (cp / "metadata").write_text('{"id":"3f1c1d0e-0000-4000-8000-000000000001"}')
    (cp / "offsets" / "0").write_text('v99\n{"batchWatermarkMs":0,"batchTimestampMs":0,"conf":{}}\n{"logOffset":0}')
    out = tmp_path / "ev.jsonl"
    p = LogProcess(["--pipeline", "events", "--workspace", str(ws.root), "--no-ui", "--trigger", "availableNow",
                    "--out", str(out)])
    assert p.finish(600) == 1, p.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    failed = [r for r in records if r["kind"] == "terminated" and r["event"]["exception"]]
    assert failed, "the failing query's terminated event carries its exception"
    assert any("failed:" in ln for ln in p.stderr)
    assert records[-1]["kind"] == "stats"


@pytest.mark.spark
def test_sigterm_stops_every_query_and_prometheus_is_scraped_while_it_runs(tmp_path):
    n = _queries("events")
    p = LogProcess(["--pipeline", "events", "--workspace", str(tmp_path / "ws"), "--no-ui",
                    "--trigger", "processingTime=1 second", "--land-every", "0.5", "--prometheus", "0"])
    try:
        p.wait_for(lambda: any("Prometheus metrics on" in ln for ln in p.stderr), 300, "the metrics address")
        url = re.search(r"(http://127\.0\.0\.1:\d+/metrics)", next(ln for ln in p.stderr if "Prometheus" in ln))[1]
        progressed = lambda: len(p.runs("started")) == n and p.runs("progress") >= p.runs("started")  # noqa: E731
        p.wait_for(progressed, 300, "progress of every query")
        with p.cond:  # the sinks run in order per event (recorder, then metrics), so every
            batches = {}  # record before the last one read has reached the metrics already
            for r in p.records[:-1]:
                if r["kind"] == "progress":
                    batches[r["event"]["name"]] = max(batches.get(r["event"]["name"], -1), r["event"]["batchId"])
        text = urllib.request.urlopen(url, timeout=30).read().decode()
        for name, batch in batches.items():  # the gauge is at least the batch we saw before scraping
            m = re.search(rf'^streamwatch_batch_id\{{[^}}]*query="{re.escape(name)}"[^}}]*\}} (\S+)$', text, re.M)
            assert m, f"no streamwatch_batch_id for {name}:\n{text[:2000]}"
            assert float(m[1]) >= batch
        assert "streamwatch_input_rows_per_second" in text and "streamwatch_batch_duration_ms" in text
        p.proc.send_signal(signal.SIGTERM)
        rc = p.finish(300)
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
    assert rc == 0, p.stderr
    assert any("interrupted: stopping the queries" in ln for ln in p.stderr)
    assert p.runs("terminated") == p.runs("started") and len(p.runs("started")) == n
    assert p.records[-1]["kind"] == "stats" and p.records[-1]["event"]["dropped"] == 0
    with pytest.raises(OSError):  # the metrics server is gone with the process
        urllib.request.urlopen(url, timeout=5)


@pytest.mark.spark
def test_duration_stops_with_exit_0_and_max_bytes_rotates_without_losing_an_event(tmp_path):
    from streamwatch.events.reader import ReadReport, read_recording
    from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

    out = tmp_path / "rec" / "ev.jsonl"
    p = LogProcess(["--pipeline", "events", "--workspace", str(tmp_path / "ws"), "--no-ui",
                    "--trigger", "processingTime=1 second", "--land-every", "0.5", "--duration", "15",
                    "--max-bytes", "1500", "--out", str(out)])
    assert p.finish(600) == 0, p.stderr
    assert any("--duration 15 s reached" in ln for ln in p.stderr)
    rotated = sorted(out.parent.glob("ev.jsonl.*"), key=lambda f: int(f.suffix[1:]))
    # header + 5 started + 5 terminated events alone exceed 1,500 bytes, whatever the machine's pace
    assert rotated, "1500-byte files: the recording must have rotated"
    assert [f.name for f in rotated] == [f"ev.jsonl.{i}" for i in range(1, len(rotated) + 1)]
    report = ReadReport()
    events = list(read_recording(out, report))
    assert report.bad_lines == 0
    started = {e.run_id for e in events if isinstance(e, QueryStarted)}
    assert {e.run_id for e in events if isinstance(e, QueryTerminated)} == started and len(started) == _queries("events")
    for run in started:  # every progress exactly once, batch ids contiguous per run
        ids = [e.batch_id for e in events if isinstance(e, QueryProgress) and e.run_id == run]
        assert ids == list(range(ids[0], ids[0] + len(ids))) if ids else True
    # (no progress count is asserted: --duration counts from the queries' start, and on a busy
    # machine 15 s may pass before a first micro-batch completes)
