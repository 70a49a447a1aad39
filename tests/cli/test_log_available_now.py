"""The real command line: ``streamwatch log --trigger availableNow --max-files 0`` over files
landed beforehand runs every layer after its upstream layers, so each one processes exactly
what its input implies (counted independently from the landed JSON lines)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def test_log_available_now_runs_the_layers_in_medallion_order(tmp_path):
    from streamwatch.model.events import QueryProgress

    from sample_pipelines.events.factory import EventsFactory

    ws = tmp_path / "ws"
    landed = EventsFactory(ws / "landing" / "events" / "events", bad_ratio=0.05).land(6)
    lines = [line for p in landed for line in Path(p).read_text().splitlines()]
    good = 0
    for line in lines:
        with contextlib.suppress(ValueError):
            good += isinstance(json.loads(line).get("time"), int)
    assert 0 < good < len(lines)
    out = tmp_path / "run.jsonl"
    proc = subprocess.run(
        [STREAMWATCH, "log", "--pipeline", "events", "--workspace", str(ws), "--no-ui", "--trigger", "availableNow",
         "--max-files", "0", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "events_silver queued: waits for events_bronze to finish" in proc.stderr
    assert "events_gold queued: waits for events_silver to finish" in proc.stderr
    assert "every query has finished" in proc.stderr
    assert "local[" in proc.stderr and "cores]" in proc.stderr, "the master says the cores in local mode"

    records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    kinds = [(r.get("kind"), r.get("event", {}).get("name")) for r in records]
    rows: dict[str, int] = {}
    order: list[str] = []
    for r in records:
        ev = r.get("event") or {}
        if r.get("kind") == "started":
            order.append(ev["name"])
        if r.get("kind") == "progress":
            rows[ev["name"]] = rows.get(ev["name"], 0) + QueryProgress.from_dict(ev).num_input_rows
        if r.get("kind") == "terminated":
            assert ev["exception"] is None, ev
    assert order.index("events_bronze") < order.index("events_silver") < order.index("events_gold"), kinds
    assert rows["events_bronze"] == len(lines), "bronze read every landed line"
    assert rows["events_silver"] == rows["events_quarantine"] == len(lines), "both read all of bronze"
    assert rows["events_gold"] == rows["events_gold_sliding"] == good, "gold read every good event of silver"
