"""`streamwatch watch --log` carries each file source's lag (``source-lag`` records) and
serves it as Prometheus gauges. The numbers themselves are held against Spark in
tests/spark/test_source_lag_truth.py; here the landed files and their times are the account."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from streamwatch.cli import main
from tests.helpers.fake_checkpoint import QUERY_ID, FakeCheckpoint

EXE = str(Path(sys.executable).with_name("streamwatch"))


def _landed(folder: Path, name: str, mtime_ms: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("{}")
    os.utime(p, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return p


def _query(tmp_path: Path) -> tuple[Path, int]:
    """Two batches read f0 and f1; f2, f3 and a hidden _SUCCESS landed after. Returns the
    checkpoint and f2's mtime (ms)."""
    now = int(time.time() * 1000)
    landing = tmp_path / "landing"
    cp = FakeCheckpoint(tmp_path / "checkpoints/p/q")
    for b in range(2):
        f = _landed(landing, f"f{b}.json", now - 60_000 + b)
        cp.plan(b, now - 50_000 + b * 1000, [f"file://{f}"])
        cp.commit(b, now - 50_000 + b * 1000 + 200)
    _landed(landing, "f2.json", now - 30_000)
    _landed(landing, "f3.json", now - 20_000)
    _landed(landing, "_SUCCESS", now - 40_000)
    return cp.root, now - 30_000


def test_once_writes_the_source_lag(tmp_path):
    root, oldest = _query(tmp_path)
    r = CliRunner().invoke(main, ["watch", str(root), "--log", "--once"])
    assert r.exit_code == 0, r.output
    lags = [json.loads(line) for line in r.stdout.splitlines() if '"source-lag"' in line]
    assert len(lags) == 1
    lag = lags[0]
    assert (lag["id"], lag["source"], lag["sourceKind"], lag["backlog"], lag["oldestUnreadMs"]) == (
        QUERY_ID, "0", "file", 2, oldest)
    assert lag["lagSeconds"] == (lag["atMs"] - oldest) / 1000


def test_prometheus_serves_the_lag(tmp_path):
    root, oldest = _query(tmp_path)
    p = subprocess.Popen([EXE, "watch", str(root), "--log", "--poll", "0.1", "--prometheus", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in p.stderr:
            if "metrics at " in line:
                url = line.split("metrics at ", 1)[1].strip()
                break
        assert url, "no metrics line"
        for line in p.stdout:  # the gauges are set before the records are written
            if json.loads(line)["kind"] == "source-lag":
                break
        metrics = urllib.request.urlopen(url, timeout=10).read().decode()
        labels = f'id="{QUERY_ID}",query="q",source="0"'
        assert f"streamwatch_checkpoint_source_backlog_files{{{labels}}} 2.0" in metrics, metrics
        lag = next(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                   if line.startswith(f"streamwatch_checkpoint_source_lag_seconds{{{labels}}}"))
        assert lag >= (int(time.time() * 1000) - oldest) / 1000 - 60  # served from a poll within the last minute
        assert lag <= (int(time.time() * 1000) - oldest) / 1000
    finally:
        p.terminate()
        p.wait(30)


def test_edge_lag_gauge_follows_the_edge_record():
    from streamwatch.analysis.records import PipelineEdge
    from streamwatch.watch_metrics import WatchMetrics

    m = WatchMetrics(0)
    try:
        url = f"http://127.0.0.1:{m.port}/metrics"
        m(PipelineEdge("p_bronze", "p_silver", "a", "b", "/t/bronze", 3, 30, lag_s=42.5))
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert 'streamwatch_checkpoint_edge_lag_seconds{downstream="p_silver",upstream="p_bronze"} 42.5' in body
        m(PipelineEdge("p_bronze", "p_silver", "a", "b", "/t/bronze", 3, 30, lag_s=None))  # unknown now
        body = urllib.request.urlopen(url, timeout=10).read().decode()
        assert 'streamwatch_checkpoint_edge_lag_seconds{' not in body
        assert 'streamwatch_checkpoint_backlog_files{downstream="p_silver",upstream="p_bronze"} 3.0' in body
    finally:
        m.close()
