"""``streamwatch log --spec``: a small Spark Declarative Pipelines project (scripts/sdp_fixture.py's
flows: streaming tables bronze ← JSON files, silver ← bronze where v >= 0, materialized view gold)
run once by pyspark's own ``spark-pipelines`` through streamwatch (the ``sdp_logged`` fixture's
run, shared with tests/cli/test_sdp_watch.py). Held against independent
accounts: the flow states equal the lines the CLI itself printed in that run (parsed here with the
fixture script's regex) and in the committed fixture run (tests/fixtures/sdp/facts.json, written
by the CLI for the same flows); each flow's recorded ``numInputRows`` add up to the rows of the
landed files (bronze reads them all, silver reads all bronze wrote: its filter is after the
source), counted from the files; the
recording replays in the dashboard (``streamwatch replay``, exit 0)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import orjson
import pytest

from streamwatch.events.reader import ReadReport, read_recording
from streamwatch.model.events import QueryProgress
from tests.helpers.scripts import load_script
from tests.helpers.sdp_runs import ENV, ROWS, SW, SdpLogged
from tests.helpers.terminal import Terminal

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]


def project(base: Path) -> Path:
    """A project like `spark-pipelines init` writes, with the fixture's flows; its spec path."""
    return load_script("sdp_fixture").write_project(base, ROWS)


@pytest.fixture
def logged(sdp_logged: SdpLogged):
    """The first run of the shared project (tests/helpers/sdp_runs.py): the rows landed for it
    (read from its files when it ended), ``log --spec``'s recording and its output."""
    return sdp_logged.landed_first, sdp_logged.recording, sdp_logged.logged


def _records(out: Path, kind: str) -> list[dict]:
    lines = [orjson.loads(raw) for raw in out.read_bytes().splitlines()]
    return [d["event"] for d in lines if d["kind"] == kind]


def test_flow_states_are_what_the_cli_printed(logged):
    _, out, r = logged
    assert r.returncode == 0, r.stderr[-3000:]
    regex = load_script("sdp_fixture").STATE  # the fixture script's reading of the CLI's lines
    printed = [(m.group(1), m.group(2)) for m in regex.finditer(r.stderr)]
    recorded = [(e["flow"], e["state"]) for e in _records(out, "flow-state")]
    assert recorded == printed
    committed = json.loads((ROOT / "tests" / "fixtures" / "sdp" / "facts.json").read_text())["runs"][0]
    assert recorded == [tuple(s) for s in committed]
    assert all(e["atMs"] > 0 for e in _records(out, "flow-state"))


def test_each_flows_input_rows_are_the_landed_rows(logged):
    landed, out, r = logged
    assert r.returncode == 0, r.stderr[-3000:]
    report = ReadReport()
    progress = [e for e in read_recording(out, report) if isinstance(e, QueryProgress)]
    rows: dict[str, int] = {}
    for p in progress:
        rows[p.name or ""] = rows.get(p.name or "", 0) + p.num_input_rows
    # silver reads every row bronze wrote (its filter drops rows after the source: not input)
    assert rows == {"spark_catalog.default.bronze": len(landed), "spark_catalog.default.silver": len(landed)}
    assert report.bad_lines == 0 and report.unknown == len(_records(out, "flow-state"))


def test_the_recording_replays(logged, tmp_path):
    _, out, r = logged
    assert r.returncode == 0, r.stderr[-3000:]
    t = Terminal("replay", str(out), "--speed", "0", cwd=tmp_path, deadline_s=120)
    try:
        t.wait_for(b"silver")
        t.press("q")
        assert t.exit_status() == 0
        assert b"Traceback" not in t.screen
    finally:
        t.close()


def test_spec_and_pipeline_exclude_each_other(tmp_path):
    spec = project(tmp_path)
    r = subprocess.run([SW, "log", "--spec", str(spec), "--pipeline", "orders"], capture_output=True, text=True,
                       timeout=120, env=ENV)
    assert r.returncode == 2 and "--spec and --pipeline exclude each other" in r.stderr


def _processes_naming(text: str) -> list[int]:
    """Pids whose command line names ``text`` (the OS's account, /proc)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdecimal():
            try:
                if text.encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                continue
    return pids


def test_duration_stops_the_run_and_leaves_no_process(tmp_path):
    spec = project(tmp_path)
    out = tmp_path / "short.jsonl"
    r = subprocess.run([SW, "log", "--spec", str(spec), "--out", str(out), "--duration", "3"], capture_output=True,
                       text=True, timeout=600, cwd=tmp_path, env=ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "--duration 3 s reached" in r.stderr
    assert _processes_naming(str(spec)) == []
    first = orjson.loads(out.read_bytes().splitlines()[0])
    assert first["kind"] == "header" and first["source"] == "spark-pipelines"
