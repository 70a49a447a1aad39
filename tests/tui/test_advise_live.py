"""``:advise QUERY`` typed in the real dashboard (Pilot) on the real
:class:`~streamwatch.spark.live.LiveBackend`: one stateful rate-source query (count by key,
complete mode, memory sink, ``spark.sql.shuffle.partitions`` 3 set by the layer) started with a
500 ms processing-time trigger in the shared local[2] SparkSession, run for 3 micro-batches,
stopped from the dashboard, then advised.

The independent accounts are Spark's own: the trigger Spark runs the query with (the running
query's ``StreamExecution.trigger``, a ``ProcessingTimeTrigger``), the session's
``defaultParallelism``, the state partition folders Spark wrote under ``state/0`` and the
``numShufflePartitions`` of its last progress. The findings the detail tab shows must equal
what ``streamwatch advise CHECKPOINT --trigger <Spark's interval> --cores <defaultParallelism>
--json`` prints on the same checkpoint (the cores' and trigger's *source* texts aside: the
dashboard names its own accounts), and the trigger rule is judged, not unknown. Every wait
is on a condition with a deadline, never a sleep."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.live_wait import until as wait_until

pytestmark = pytest.mark.spark

EXE = str(Path(sys.executable).parent / "streamwatch")
NAME = "adv_agg"
PARTITIONS = 3


def _agg(ctx):
    return ctx.spark.readStream.format("rate").option("rowsPerSecond", 5).load() \
        .selectExpr("value % 3 AS k").groupBy("k").count()


def _pipeline():
    from streamwatch.pipeline import Layer, Pipeline

    return Pipeline("adv", "the :advise command", (), (
        Layer("agg", "agg", "rate → count by key", _agg, "complete", "memory", "rate",
              conf=(("spark.sql.shuffle.partitions", str(PARTITIONS)),)),
    ))


def _query(spark):
    return next((q for q in spark.streams.active if q.name == NAME), None)


def _spark_trigger_ms(q) -> int:
    """The interval (ms) of the ``ProcessingTimeTrigger`` Spark runs ``q`` with."""
    text = str(q._jsq.streamingQuery().trigger().toString())
    m = re.fullmatch(r"ProcessingTimeTrigger\((\d+)\)", text)
    assert m, f"not a processing-time trigger: {text}"
    return int(m.group(1))


def _without_own_sources(finding: dict) -> dict:
    """A finding with the cores' and the trigger interval's source texts left out (the
    dashboard names its accounts, the CLI its options); every number stays."""
    ev = [{**e, "source": None} if e["what"] in ("cores", "trigger interval") else e for e in finding["evidence"]]
    return {**finding, "evidence": ev}


def _cli(checkpoint: str, trigger_ms: int, cores: int) -> dict:
    r = subprocess.run([EXE, "advise", checkpoint, "--trigger", f"{trigger_ms}ms", "--cores", str(cores), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_advise_shows_in_the_detail_tab_what_the_cli_says_with_sparks_trigger(spark, tmp_path):
    from streamwatch.pipeline import Workspace
    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.app import StreamwatchApp
    from streamwatch.tui.tabs import Tab
    from streamwatch.tui.views.advice import AdviceSection

    backend = LiveBackend(_pipeline(), Workspace(tmp_path), trigger="500ms", spark=spark, initial_files=0, ui=False)
    app = StreamwatchApp(backend, checkpoint_refresh_s=0, watch_landing=False)
    seen: dict[str, object] = {}

    def state() -> str:
        return f"status {app.query_one('#status').render()}"

    async def until(pilot, predicate, what: str, timeout_s: float = 180) -> None:
        await wait_until(pilot, predicate, what, timeout_s=timeout_s, state=state)

    async def scenario() -> None:
        async with app.run_test(size=(140, 50)) as pilot:
            await until(pilot, lambda: (q := _query(spark)) is not None and (q.lastProgress or {}).get("batchId", -1) >= 2,
                        "3 micro-batches")
            q = _query(spark)
            seen["trigger_ms"], seen["progress"] = _spark_trigger_ms(q), q.lastProgress
            await pilot.press("colon", *f"stop {NAME}", "enter")
            await until(pilot, lambda: _query(spark) is None, "the query to stop")
            await pilot.press("colon", *"advise agg", "enter")
            section = app.dashboard.query_one(AdviceSection)
            await until(pilot, lambda: bool(section.findings), "the advice", 60)
            await until(pilot, lambda: section.display, "the section shown")
            seen["active"], seen["selected"] = app.active_tab, app.selected
            seen["findings"] = [a.to_dict() for a in section.findings]
            seen["text"] = str(section.render())

    try:
        asyncio.run(scenario())
    finally:
        backend.stop()
    assert (seen["active"], seen["selected"]) == (Tab.DETAIL, NAME)
    checkpoint = backend.plan.query(NAME).checkpoint
    cores = spark.sparkContext.defaultParallelism
    doc = _cli(checkpoint, int(seen["trigger_ms"]), cores)
    shown = seen["findings"]
    assert [_without_own_sources(f) for f in shown] == [_without_own_sources(f) for f in doc["findings"]]
    # each finding's head line, as the CLI prints it, is on screen
    for f in doc["findings"]:
        assert f"{f['code']}  [{f['verdict']}, {f['confidence']}]  {f['setting']}" in seen["text"]

    # Spark's own account
    by_code = {f["code"]: f for f in shown}
    trig = by_code["advise-trigger-interval"]
    assert trig["verdict"] != "unknown", trig  # the dashboard knows the trigger: judged
    assert {e["what"]: e["value"] for e in trig["evidence"]}["trigger interval"] == seen["trigger_ms"] == 500
    shuffle = {e["what"]: e["value"] for e in by_code["advise-shuffle-partitions"]["evidence"]}
    on_disk = len([d for d in (Path(checkpoint) / "state" / "0").iterdir() if d.name.isdecimal()])
    reported = {o["numShufflePartitions"] for o in seen["progress"]["stateOperators"]}
    assert shuffle["state partitions"] == on_disk == PARTITIONS and reported == {PARTITIONS}
    assert shuffle["cores"] == cores
    # 3 partitions on `cores` cores: at most OVER_PER_CORE (4) a core, so kept
    assert by_code["advise-shuffle-partitions"]["verdict"] == ("keep" if 4 * cores >= PARTITIONS else "change")
