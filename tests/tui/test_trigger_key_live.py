"""``t`` (``:trigger``) typed in the real dashboard (Pilot) on the real
:class:`~streamwatch.spark.live.LiveBackend`, two rate-source queries in the shared
SparkSession: the trigger parsed from the line is the one Spark restarts the named query with.

The independent account is Spark's own: each running query's ``StreamExecution.trigger``
(reached through the query's JVM object) — the query named runs with a 5 s
``ProcessingTimeTrigger`` under the same query id (its checkpoint resumed), the other keeps
its 2 s trigger and its run; the queries table's trigger column then says what Spark says.
Every wait is on that state, never a sleep."""

from __future__ import annotations

import asyncio
import re

import pytest

from tests.helpers.live_wait import until as wait_until

pytestmark = pytest.mark.spark


def _spark_trigger_ms(q) -> int:
    """The interval (ms) of the ``ProcessingTimeTrigger`` Spark runs ``q`` with."""
    text = str(q._jsq.streamingQuery().trigger().toString())
    m = re.fullmatch(r"ProcessingTimeTrigger\((\d+)\)", text)
    assert m, f"not a processing-time trigger: {text}"
    return int(m.group(1))


def _runs(spark) -> dict[str, tuple[str, str, int]]:
    """query name → (id, runId, trigger interval ms) of the active ``keys_*`` queries."""
    return {q.name: (q.id, q.runId, _spark_trigger_ms(q)) for q in spark.streams.active
            if q.name in ("keys_a", "keys_b")}


def _rate(ctx):
    return ctx.spark.readStream.format("rate").option("rowsPerSecond", 1).load()


def _pipeline():
    from streamwatch.pipeline import Layer, Pipeline

    return Pipeline("keys", "the t key", (), (
        Layer("a", "a", "rate → table", _rate, "append", "table", "rate"),
        Layer("b", "b", "rate → table", _rate, "append", "table", "rate"),
    ))


def test_t_restarts_the_named_query_with_the_trigger_spark_then_runs(spark, tmp_path):
    from streamwatch.pipeline import Workspace
    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.app import StreamwatchApp

    backend = LiveBackend(_pipeline(), Workspace(tmp_path), trigger="processingTime=2 seconds", spark=spark,
                          initial_files=0, ui=False)
    app = StreamwatchApp(backend, checkpoint_refresh_s=0, watch_landing=False)

    def state() -> str:
        return f"spark {_runs(spark)}; status {app.query_one('#status').render()}"

    async def until(pilot, predicate, what: str, timeout_s: float = 120) -> None:
        await wait_until(pilot, predicate, what, timeout_s=timeout_s, state=state)

    def cell(name: str) -> str:
        return str(app.dashboard.query_one("#query-table").get_cell(name, "trigger"))

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: set(_runs(spark)) == {"keys_a", "keys_b"}, "both queries to run")
            before = _runs(spark)
            assert {n: ms for n, (_, _, ms) in before.items()} == {"keys_a": 2000, "keys_b": 2000}
            await pilot.press("t", *"5s keys_b", "enter")
            await until(pilot, lambda: _runs(spark).get("keys_b", before["keys_b"])[1] != before["keys_b"][1],
                        "keys_b's new run")
            after = _runs(spark)
            assert after["keys_b"][0] == before["keys_b"][0] and after["keys_b"][2] == 5000
            assert after["keys_a"] == before["keys_a"], "the other query was restarted"
            await until(pilot, lambda: "trigger now" in str(app.query_one("#status").render()), "the outcome")
            assert str(app.query_one("#status").render()).startswith("trigger now processingTime=5s (keys_b) in ")
            await until(pilot, lambda: cell("keys_b") == "5s", "the trigger column to follow", 30)
            assert cell("keys_a") == "2s"

    try:
        asyncio.run(scenario())
    finally:
        backend.stop()
    assert not [q for q in spark.streams.active if q.name in ("keys_a", "keys_b")]
