"""``streamwatch log`` judges each query's health (docs/health.md) while it runs: a real run of
the bundled ``events`` pipeline in a subprocess, checked against independent accounts —
Spark's own checkpoint files (``metadata``, ``commits/N``), an independent face
(``streamwatch watch CHECKPOINT --log --once``, reading only Spark's files after the run),
the ``/metrics`` text scraped over loopback (parsed with prometheus_client's parser), and the
recording read back by the recording reader and ``streamwatch events``.

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
from itertools import pairwise
from pathlib import Path

import pytest

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")
#: The keys of a query-health record (docs/health.md, "Record").
HEALTH_KEYS = {"kind", "id", "query", "checkpoint", "atMs", "health", "previous", "reason", "sinceMs", "batchId",
               "backlog", "lagSeconds", "commits", "samples", "failedRuns"}
STATES = {"ok", "lagging", "stalled", "stopped", "failing", "idle", "unknown"}


class LogRun:
    """``streamwatch log`` with its stdout (JSONL lines) and stderr read on threads."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen([STREAMWATCH, "log", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ))
        self.lines: list[bytes] = []
        self.stderr: list[str] = []
        self.cond = threading.Condition()
        self._threads = [threading.Thread(target=self._read, args=(s, out), daemon=True)
                         for s, out in ((self.proc.stdout, self.lines), (self.proc.stderr, None))]
        for t in self._threads:
            t.start()

    def _read(self, stream, lines: list[bytes] | None) -> None:
        for line in stream:
            with self.cond:
                if lines is not None:
                    lines.append(line)
                else:
                    self.stderr.append(line.decode().rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def records(self) -> list[dict]:
        with self.cond:
            return [json.loads(ln) for ln in self.lines]

    def health(self, query: str) -> list[dict]:
        return [r["event"] for r in self.records() if r["kind"] == "query-health" and r["event"]["query"] == query]

    def wait_for(self, predicate, timeout: float, what: str) -> None:
        with self.cond:
            ok = self.cond.wait_for(lambda: predicate() or self.proc.poll() is not None, timeout)
        seen = [(r["event"]["query"], r["event"]["health"], r["event"]["reason"]) for r in self.records()
                if r["kind"] == "query-health"]
        assert ok and predicate(), (f"{what}: not seen (exit {self.proc.poll()}); health so far: {seen}; "
                                    f"stderr: {self.stderr[-15:]}")

    def finish(self, timeout: float) -> int:
        try:
            rc = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for t in self._threads:
            t.join(30)
        return rc


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = urllib.request.urlopen(url, timeout=30).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _spark_commits(cp: Path) -> list[int]:
    return sorted(int(f.name) for f in (cp / "commits").iterdir() if f.name.isdecimal())


@pytest.mark.spark
def test_log_records_and_serves_the_health_watch_judges(tmp_path):
    from streamwatch.pipeline import Workspace

    ws = Workspace(tmp_path / "ws")
    bronze_cp = Path(ws.checkpoint("events", "bronze"))
    # two files land, then nothing: bronze reads them and goes idle — a verdict that holds
    # as long as nothing lands, so the run and a later `watch --once` judge the same state
    p = LogRun(["--pipeline", "events", "--workspace", str(ws.root), "--no-ui", "--trigger", "processingTime=1 second",
                "--land-every", "0.3", "--max-files", "2", "--prometheus", "0"])
    try:
        p.wait_for(lambda: any("Prometheus metrics on" in ln for ln in p.stderr), 300, "the metrics address")
        url = re.search(r"(http://127\.0\.0\.1:\d+/metrics)", next(ln for ln in p.stderr if "Prometheus" in ln))[1]
        # on a loaded machine the first micro-batches take minutes: the deadline is generous
        p.wait_for(lambda: any(h["health"] == "idle" for h in p.health("events_bronze")), 600, "bronze idle")
        scraped = _scrape(url)  # the gauges are set before the line is written: already idle
        p.proc.send_signal(signal.SIGTERM)
        rc = p.finish(300)
    finally:
        if p.proc.poll() is None:
            p.proc.kill()
    assert rc == 0, p.stderr
    records = p.records()
    meta_id = json.loads((bronze_cp / "metadata").read_text())["id"]

    # the documented shape, in the recording's envelope; ids are Spark's own
    lines = [r for r in records if r["kind"] == "query-health"]
    started = {r["event"]["name"]: r["event"]["id"] for r in records if r["kind"] == "started"}
    assert {r["event"]["query"] for r in lines} == set(started), "every query of the run is judged"
    for r in lines:
        assert set(r) == {"v", "kind", "t", "event"} and r["v"] == 1
        assert set(r["event"]) == HEALTH_KEYS and r["event"]["kind"] == "query-health"
        assert r["event"]["health"] in STATES and r["event"]["id"] == started[r["event"]["query"]]
    for query in started:  # written when the health changes: each previous is the one before
        chain = p.health(query)
        assert [h["previous"] for h in chain] == [None, *[h["health"] for h in chain[:-1]]]
        assert all(a["health"] != b["health"] for a, b in pairwise(chain))
    bronze = p.health("events_bronze")
    assert bronze[0]["id"] == meta_id and bronze[0]["checkpoint"] == str(bronze_cp)
    last = bronze[-1]
    assert last["health"] == "idle" and last["backlog"] == 0
    assert last["batchId"] == _spark_commits(bronze_cp)[-1]  # Spark's commits/N

    # the gauge of that state, scraped over loopback while it ran: 1 for idle, 0 for the rest
    states = {dict(lb)["state"]: v for (name, lb), v in scraped.items()
              if name == "streamwatch_health" and dict(lb)["query"] == "events_bronze"}
    assert states == {s: (1.0 if s == "idle" else 0.0) for s in STATES}, states
    backlog = {dict(lb)["source"]: v for (name, lb), v in scraped.items()
               if name == "streamwatch_source_backlog_files" and dict(lb)["query"] == "events_bronze"}
    assert backlog == {"0": 0.0}

    # an independent face: `watch` on the checkpoint Spark left, after the run
    out = subprocess.run([STREAMWATCH, "watch", str(bronze_cp), "--log", "--once"], capture_output=True, text=True,
                         timeout=180)
    assert out.returncode == 0, out.stderr
    watched = [json.loads(ln) for ln in out.stdout.splitlines() if '"query-health"' in ln]
    assert [w["health"] for w in watched] == [last["health"]]
    assert watched[0]["id"] == meta_id and watched[0]["batchId"] == last["batchId"]

    _replays(tmp_path / "run.jsonl", p.lines, len(lines))


def _replays(rec: Path, lines: list[bytes], health_lines: int) -> None:
    """The recording with query-health lines reads back whole: the reader skips them as a kind
    it does not decode (no bad line), ``streamwatch events`` summarizes it without complaint."""
    from streamwatch.events.reader import ReadReport, read_recording
    from streamwatch.model.events import QueryStarted

    rec.write_bytes(b"".join(lines))
    report = ReadReport()
    events = list(read_recording(rec, report))
    assert report.bad_lines == 0 and report.unknown == health_lines
    assert sum(isinstance(e, QueryStarted) for e in events) == 5
    out = subprocess.run([STREAMWATCH, "events", str(rec)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "unreadable" not in out.stderr, out.stderr
