"""``:advise [QUERY]`` without Spark: what the line parses to (the parser is the account of
what the command takes), its completion and ``?`` help entry, and the dashboard's answer
when there is nothing to advise on (no query selected; a checkpoint that does not exist)."""

from __future__ import annotations

import pytest

from streamwatch.tui.command_args import Advise
from streamwatch.tui.commands import CommandError, candidates, complete, parse
from streamwatch.tui.help import help_text

from conftest import NAMES, run_app, wait_for


def test_advise_parses_to_its_typed_command():
    assert parse("advise", list(NAMES)) == Advise("advise", None)
    assert parse("advise flights_gold", list(NAMES)) == Advise("advise", "flights_gold")
    assert parse("advise gold", list(NAMES)) == Advise("advise", "flights_gold")  # a unique suffix


@pytest.mark.parametrize("line", ["advise all", "advise nope", "advise flights_gold flights_silver"])
def test_advise_refuses_what_it_does_not_take(line):
    with pytest.raises(CommandError):
        parse(line, list(NAMES))


def test_advise_completes_and_is_in_the_help():
    assert complete("adv", list(NAMES)) == ("advise", ["advise"])
    assert candidates("advise flights_g", list(NAMES)) == ["advise flights_gold"]
    assert complete("advise a", list(NAMES)) == ("advise a", [])  # no `all`: one query at a time
    assert "  advise [QUERY]" in help_text().plain


def test_advise_without_a_selected_query_says_so(make_app):
    app = make_app()

    async def scenario(pilot):
        app.selected = None
        await pilot.press("colon", *"advise", "enter")
        await wait_for(pilot, lambda: "advise: no query selected" in str(app.query_one("#status").render()),
                       "the warning")

    run_app(app, scenario)


def test_advise_on_a_missing_checkpoint_says_why_in_the_detail_tab(make_app):
    from streamwatch.tui.tabs import Tab
    from streamwatch.tui.views.advice import AdviceSection

    app = make_app()
    checkpoint = app.plan.query("flights_gold").checkpoint

    async def scenario(pilot):
        await pilot.press("colon", *"advise gold", "enter")
        section = app.dashboard.query_one(AdviceSection)
        await wait_for(pilot, lambda: "cannot advise" in str(section.render()), "the error")
        assert (app.active_tab, app.selected, section.display, section.findings) == (
            Tab.DETAIL, "flights_gold", True, ())
        assert str(section.render()).startswith("advice for flights_gold")
        await pilot.press("colon", *"detail silver", "enter")  # another query: not its advice
        await wait_for(pilot, lambda: not section.display, "the section hidden")

    run_app(app, scenario)
    assert checkpoint  # the plan names one; it is not on this machine
