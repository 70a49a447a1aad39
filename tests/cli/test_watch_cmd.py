"""`streamwatch watch --log`: JSONL records, exit codes, Prometheus gauges, clean SIGTERM,
and no textual on the headless path."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from streamwatch.cli import main
from tests.helpers.fake_checkpoint import QUERY_ID, FakeCheckpoint
from tests.helpers.imports import loads_module

T0 = 1_790_000_000_000
EXE = str(Path(sys.executable).with_name("streamwatch"))


def _cp(tmp_path, commit_last=False):
    cp = FakeCheckpoint(tmp_path / "checkpoints/p/q")
    for b in range(3):
        cp.plan(b, T0 + b * 1000)
        cp.commit(b, T0 + b * 1000 + 200)
    cp.plan(3, T0 + 3000)  # long ago: stuck
    if commit_last:
        cp.commit(3, T0 + 3200)
    return cp


def test_once_writes_joinable_jsonl_and_exits_1_when_stuck(tmp_path):
    _cp(tmp_path)
    out = tmp_path / "w.jsonl"
    r = CliRunner().invoke(main, ["watch", str(tmp_path), "--log", "--once", "--out", str(out)])
    assert r.exit_code == 1, r.output
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    batches = [x for x in recs if x["kind"] == "checkpoint-batch"]
    assert [(x["id"], x["query"], x["batchId"], x["durationMs"]) for x in batches] == \
        [(QUERY_ID, "p_q", b, 200) for b in range(3)]
    status = [x for x in recs if x["kind"] == "checkpoint-status"][-1]
    assert status["stuck"] and status["inFlightBatchId"] == 3


def test_once_exits_0_when_nothing_is_stuck(tmp_path):
    _cp(tmp_path, commit_last=True)
    r = CliRunner().invoke(main, ["watch", str(tmp_path / "checkpoints/p/q"), "--log", "--once"])
    assert r.exit_code == 0, r.output
    assert sum(1 for line in r.stdout.splitlines() if '"checkpoint-batch"' in line) == 4


def test_bad_usage_and_unreadable_paths(tmp_path):
    r = CliRunner().invoke(main, ["watch", str(tmp_path), "--once"])
    assert r.exit_code == 2 and "need --log" in r.stderr
    r = CliRunner().invoke(main, ["watch", str(tmp_path / "nope"), "--log", "--once"])
    assert r.exit_code == 4 and "no such folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(main, ["watch", str(tmp_path / "empty"), "--log", "--once"])
    assert r.exit_code == 4 and "no checkpoint found" in r.stderr


def test_headless_watch_never_imports_textual():
    assert not loads_module("import streamwatch.cli.watch_cmd, streamwatch.analysis.session, "
                            "streamwatch.watch_metrics", "textual")
    assert not loads_module("import streamwatch.analysis.session", "pyspark")


def test_prometheus_gauges_and_sigterm_exits_0(tmp_path):
    cp = _cp(tmp_path, commit_last=True)
    p = subprocess.Popen([EXE, "watch", str(tmp_path), "--log", "--poll", "0.1", "--prometheus", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in p.stderr:  # the process says where it serves, once it does
            if "metrics at " in line:
                url = line.split("metrics at ", 1)[1].strip()
                break
        assert url, "no metrics line"
        cp.plan(4, T0 + 4000, ["file:///gone.csv"])
        cp.commit(4, T0 + 4500)
        for line in p.stdout:  # blocks until the poll derives batch 4
            rec = json.loads(line)
            if rec["kind"] == "checkpoint-batch" and rec["batchId"] == 4:
                break
        else:
            raise AssertionError(f"ended without batch 4: {p.stderr.read()}")
        metrics = urllib.request.urlopen(url, timeout=10).read().decode()
        labels = f'id="{QUERY_ID}",query="p_q"'
        assert f"streamwatch_checkpoint_batch_id{{{labels}}} 4.0" in metrics, metrics
        assert f"streamwatch_checkpoint_batch_duration_ms{{{labels}}} 500.0" in metrics
        assert f"streamwatch_checkpoint_input_files{{{labels}}} 1.0" in metrics
        assert f"streamwatch_checkpoint_in_flight_seconds{{{labels}}} 0.0" in metrics
        assert "streamwatch_checkpoint_backlog_files" in metrics
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
