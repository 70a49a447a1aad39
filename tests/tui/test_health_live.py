"""The health verdict in the detail head of the real dashboard (Pilot) on the real
:class:`~streamwatch.spark.live.LiveBackend` — the bundled flights pipeline cut to its bronze
layer (one file source) in the shared SparkSession.

While batches commit the head says ``health ok``; after ``x`` stops the query while files keep
landing it says ``health stopped``. Each is held against Spark's own account — the query in /
absent from ``spark.streams.active``, the ``commits/N`` files Spark wrote, the landed files no
entry of the file source's log (``sources/0/``) names — and against what ``streamwatch watch
CHECKPOINT --once --log`` judges for the same checkpoint then (the other face of the same
definition). Every wait is on a condition with a deadline, never a sleep."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.live_wait import until as wait_until

pytestmark = pytest.mark.spark

NAME = "flights_bronze"


def _pipeline():
    from streamwatch.pipeline import get_pipeline

    p = get_pipeline("flights")
    return dataclasses.replace(p, sources=tuple(s for s in p.sources if s.name == "flights"),
                               layers=(p.layer("bronze"),), setup=None, sdp_project=None)


def _commits(cp: Path) -> list[int]:
    """The batch ids of the ``commits/N`` files Spark wrote."""
    return _batch_ids(cp / "commits") if (cp / "commits").is_dir() else []


def _batch_ids(folder: Path) -> list[int]:
    return sorted(int(f.name) for f in folder.iterdir() if f.name.isdecimal())


def _unread(landing: Path, cp: Path) -> int:
    """Landed files (not hidden, as Spark lists them) that no entry of the source log names."""
    logged: set[str] = set()
    for f in (cp / "sources" / "0").iterdir():
        if f.name.startswith("."):
            continue
        for line in f.read_text().splitlines()[1:]:  # the first line is the log version (v1)
            if line.startswith("{"):
                logged.add(json.loads(line)["path"].rsplit("/", 1)[-1])
    landed = [f.name for f in landing.iterdir() if f.is_file() and not f.name.startswith((".", "_"))]
    return len([n for n in landed if n not in logged])


def _watch_once(cp: Path) -> dict:
    """The ``query-health`` record ``streamwatch watch CP --once --log`` writes."""
    exe = str(Path(sys.executable).parent / "streamwatch")
    out = subprocess.run([exe, "watch", str(cp), "--once", "--log"], capture_output=True, text=True, timeout=120)
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    health = [r for r in records if r["kind"] == "query-health"]
    assert len(health) == 1, (out.returncode, out.stderr[-2000:], records)
    return health[0]


def test_detail_head_says_ok_then_stopped_as_spark_and_watch_do(spark, tmp_path):
    from streamwatch.pipeline import Workspace
    from streamwatch.spark.live import PACE_BACKLOG, LiveBackend
    from streamwatch.tui.app import StreamwatchApp

    workspace = Workspace(tmp_path)
    backend = LiveBackend(_pipeline(), workspace, trigger="processingTime=1 second", spark=spark,
                          land_every_s=0.5, initial_files=2, ui=False)
    app = StreamwatchApp(backend, checkpoint_refresh_s=0.5)
    cp = Path(workspace.checkpoint("flights", "bronze"))
    landing = workspace.landing("flights", "flights")

    def active() -> bool:
        return any(q.name == NAME for q in spark.streams.active)

    def head() -> str:
        return str(app.query_one("#detail-head").render())

    def health() -> str:
        m = re.search(r"^health (\w+): (.*)$", head(), re.M)
        return m.group(1) if m else ""

    def state() -> str:
        return f"active {active()}; commits {_commits(cp)[-3:]}; head {head()!r}"

    async def until(pilot, predicate, what: str, timeout_s: float = 180) -> None:
        await wait_until(pilot, predicate, what, timeout_s=timeout_s, state=state)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: len(_commits(cp)) >= 3 and active(), "three batches committed")
            await pilot.press("enter")  # the selected (first) query's detail tab
            await until(pilot, lambda: health() == "ok", "the head to say ok")
            committed = _commits(cp)
            assert active()
            ok = _watch_once(cp)
            assert ok["health"] == "ok", ok
            await until(pilot, lambda: len(_commits(cp)) > len(committed), "a further commit while ok")
            await until(pilot, lambda: health() == "ok", "the head to say ok again", 30)

            await pilot.press("x")
            await until(pilot, lambda: not active(), "Spark to stop the query")
            await until(pilot, lambda: _unread(landing, cp) >= PACE_BACKLOG, "files to land up to the pace limit")
            last = _commits(cp)[-1]
            planned = _batch_ids(cp / "offsets")[-1]
            # stopped between batches: no batch for longer than idle allows while files wait
            # (landed up to the feeder's pace limit, where it holds); stopped mid-batch: offsets/N planned, never committed
            evidence = (lambda: f"while {_unread(landing, cp)} file(s) wait") if planned == last else \
                (lambda: f"batch {planned} planned ")
            await until(pilot, lambda: health() == "stopped" and evidence() in head(), "the head to say stopped")
            assert not active() and _commits(cp)[-1] == last
            unread = _unread(landing, cp)
            assert unread > 0
            stopped = _watch_once(cp)
            assert (stopped["health"], stopped["batchId"]) == ("stopped", planned), stopped
            assert evidence() in stopped["reason"] and stopped["backlog"] == unread, stopped
            assert health() == "stopped" and evidence() in head()

    try:
        asyncio.run(scenario())
    finally:
        backend.stop()
    assert not [q for q in spark.streams.active if q.name == NAME]
