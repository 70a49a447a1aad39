"""`streamwatch log` in a subprocess: JSONL on stdout only; SIGINT stops the queries and exits 0."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.helpers.imports import loads_module

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def test_bad_pipeline_is_one_line_and_exit_2():
    out = subprocess.run([STREAMWATCH, "log", "--pipeline", "nope"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stdout == ""
    assert "unknown pipeline 'nope'" in out.stderr and "Traceback" not in out.stderr


def test_trigger_once_is_accepted_with_a_note_before_anything_starts(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("")
    out = subprocess.run([STREAMWATCH, "log", "--trigger", "once", "--out", str(target / "x.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert "availableNow replaces it" in out.stderr
    assert out.returncode == 4 and "Traceback" not in out.stderr  # the --out check still fails fast (docs/recording.md: 4)
    assert "cannot write" in out.stderr
    assert out.stdout == ""


def test_headless_modules_never_import_textual():
    code = ("import streamwatch.cli.log_cmd, streamwatch.spark.live, streamwatch.spark.record, "
            "streamwatch.spark.session, streamwatch.events.jsonl, streamwatch.metrics")
    assert not loads_module(code, "textual")


@pytest.mark.spark
def test_jsonl_on_stdout_and_sigint_stops_the_queries_and_exits_0(tmp_path):
    proc = subprocess.Popen(
        [STREAMWATCH, "log", "--pipeline", "flights", "--workspace", str(tmp_path / "ws"), "--no-ui",
         "--trigger", "processingTime=1 second", "--land-every", "0.5", "--max-files", "8"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    from sample_pipelines.flights import pipeline

    n_queries = len(pipeline().layers)
    lines: list[bytes] = []
    seen = threading.Condition()
    started: set[str] = set()
    progressed: set[str] = set()

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            rec = json.loads(line)
            with seen:
                lines.append(line)
                if rec["kind"] == "started":
                    started.add(rec["event"]["runId"])
                elif rec["kind"] == "progress":
                    progressed.add(rec["event"]["runId"])
                seen.notify_all()
        with seen:
            seen.notify_all()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # SIGINT once every query of the pipeline has started and made progress (not "1 s
        # after the first progress"): all of them must then be stopped, and say so
        with seen:
            assert seen.wait_for(lambda: (len(started) == n_queries and progressed >= started)
                                 or proc.poll() is not None, 300), "not every query made progress"
        assert proc.poll() is None, "streamwatch log ended before SIGINT"
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(180)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(10)
    stderr = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert rc == 0, stderr
    records = [json.loads(line) for line in lines]  # every stdout line is JSON
    assert all(r["v"] == 1 for r in records)
    assert records[0]["kind"] == "header" and records[0]["app"]["pipeline"] == "flights"
    assert records[-1]["kind"] == "stats" and records[-1]["event"]["dropped"] == 0
    started = {r["event"]["runId"] for r in records if r["kind"] == "started"}
    terminated = {r["event"]["runId"] for r in records if r["kind"] == "terminated"}
    assert started and terminated == started, "every query must be stopped (and say so)"
    assert all(r["event"]["exception"] is None for r in records if r["kind"] == "terminated")
    assert "interrupted: stopping the queries" in stderr
