"""Tab on the ``:`` line completes as a shell does (issue 32 item 8.2): to the longest prefix
the fitting names share (``fl`` → ``flights_`` among six ``flights_*`` queries, never the
first of them), a second tab lists the candidates and the tabs after it cycle through them.
The account of the candidates is the queries the app shows (its board's rows)."""

from __future__ import annotations

import os

from streamwatch.model.events import QueryStarted
from streamwatch.model.runtime import QueryPlan, RunPlan
from streamwatch.tui.commands import COMMANDS, candidates, complete

from conftest import RecordedBackend, run_app, wait_for

SIX = ("flights_bronze", "flights_silver", "flights_gold", "flights_quarantine", "flights_weather", "flights_delays")


def test_complete_goes_to_the_longest_common_prefix():
    queries = list(SIX) + ["orders_bronze"]
    line, hits = complete("restart fl", queries)
    assert line == "restart " + os.path.commonprefix(list(SIX)) == "restart flights_"
    assert hits == [f"restart {q}" for q in SIX]
    assert complete("restart flights_", queries) == ("restart flights_", hits)  # nothing more to add
    assert complete("restart flights_g", queries) == ("restart flights_gold", ["restart flights_gold"])
    assert complete("restart o", queries)[0] == "restart orders_bronze"
    assert complete("restart a", queries) == ("restart all", ["restart all"])
    assert complete("detail a", queries) == ("detail a", [])  # detail takes no `all`
    # the command word: every command starting with it, the shared prefix
    starting_with_s = sorted(c for c in COMMANDS if c.startswith("s"))
    assert sorted(candidates("s", queries)) == starting_with_s
    assert complete("s", queries)[0] == os.path.commonprefix(starting_with_s)
    assert complete("resta", queries) == ("restart", ["restart"])
    assert complete("queries x", queries) == ("queries x", [])


def _app(names):
    from streamwatch.tui.app import StreamwatchApp

    plan = RunPlan(pipeline="flights", description="six queries",
                   queries=tuple(QueryPlan(n, n.split("_")[1], f"/nowhere/cp/{n}", f"/nowhere/t/{n}") for n in names),
                   landing=(), trigger="processingTime=2 seconds")
    objects = [QueryStarted(id=f"id-{n}", run_id=f"run-{n}", timestamp=None, name=n) for n in names]
    return StreamwatchApp(RecordedBackend(plan, objects), checkpoint_refresh_s=0, watch_landing=False,
                          clock=lambda: 1_767_261_600_000)


def run_on_six(scenario) -> None:
    """Run ``scenario(pilot, app)`` in the app showing the :data:`SIX` queries."""
    app = _app(SIX)
    run_app(app, lambda pilot: scenario(pilot, app))


async def typed(pilot, app, opener: str, text: str):
    """Open the command line (``opener`` ``colon``) or the filter line (``slash``) and type
    ``text`` into it: the line's widget."""
    await pilot.press(opener, *text)
    return app.query_one("#cmdline")


def test_tab_completes_the_shared_prefix_then_lists_then_cycles():
    async def scenario(pilot, app):
        shown = list(app.model.board.rows)  # the independent account: the queries on screen
        assert sorted(shown) == sorted(SIX)
        line = await typed(pilot, app, "colon", "restart fl")
        await wait_for(pilot, lambda: line._suggestion == "restart flights_", "the greyed prefix")
        await pilot.press("tab")
        assert line.value == "restart flights_", "tab completes to the prefix all six share, not the first"
        assert app.active_tab == "queries"
        await pilot.press("tab")  # nothing to add: list them
        assert line.value == "restart flights_"
        assert [c.split(" ")[1] for c in line.listed] == shown
        assert any("flights_weather" in n.message for n in app._notifications), "the list is shown"
        seen = []
        for _ in range(len(shown) + 1):
            await pilot.press("tab")
            seen.append(line.value)
        assert seen == [f"restart {q}" for q in shown] + [f"restart {shown[0]}"], "tab cycles, round and round"
        # an edit ends the cycle: the next tab completes what is typed now
        await pilot.press(*["backspace"] * (len(shown[0]) - len("flights_")), "s")
        assert line.value == "restart flights_s"
        await pilot.press("tab")
        assert line.value == "restart flights_silver "
        await pilot.press("escape")

    run_on_six(scenario)


def test_a_unique_completion_is_taken_whole_with_a_space():
    async def scenario(pilot, app):
        line = await typed(pilot, app, "colon", "restart flights_w")
        await pilot.press("tab")
        assert line.value == "restart flights_weather "
        await pilot.press("escape")
        await pilot.press("colon", *"chec", "tab")
        assert line.value == "checkpoint "
        await pilot.press("escape")

    run_on_six(scenario)


def test_the_filter_line_completes_nothing():
    async def scenario(pilot, app):
        line = await typed(pilot, app, "slash", "resta")
        await pilot.pause()
        assert line.mode == "filter" and line._suggestion == ""
        await pilot.press("tab")
        assert line.value == "resta"
        await pilot.press("escape")

    run_on_six(scenario)
