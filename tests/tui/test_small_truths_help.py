"""The ``?`` help as it is drawn on screen (issue 32 item 8.1): every ``:`` command's syntax
printed exactly (``restart [QUERY|all]``, never run into its text as ``[QUERY|all]restart``),
each entry's text wrapping under the text column, and the keys it lists are the keys the
app binds. The account of what a command takes is the parser (:func:`parse`), not the
synopsis strings the help prints."""

from __future__ import annotations

import pytest
from rich.console import Console
from textual.geometry import Region

from streamwatch.tui.commands import COMMANDS, KEYS, REGISTRY, CommandError, parse
from streamwatch.tui.help import help_renderable, help_text

from conftest import NAMES, run_app, wait_for


def _accepts(name: str, words: str) -> bool:
    try:
        parse(f"{name} {words}".strip(), list(NAMES))
        return True
    except CommandError:
        return False


def _synopsis_from_parser(name: str) -> str:
    """What a command takes, asked of the parser: a query, ``all``, a number, a trigger."""
    if name == "trigger":
        assert _accepts(name, "5s all") and _accepts(name, "5s flights_gold") and not _accepts(name, "")
        return "trigger SPEC [QUERY|all]"
    if name == "land":
        assert _accepts(name, "3") and _accepts(name, "3 flights") and _accepts(name, "")
        return "land [N] [SOURCE]"
    if name == "state":
        assert _accepts(name, "12") and _accepts(name, "") and not _accepts(name, "x")
        return "state [BATCH]"
    if name == "filter":
        assert _accepts(name, "any text")
        return "filter [TEXT]"
    if _accepts(name, "all"):
        assert _accepts(name, "flights_gold") and _accepts(name, "")
        return f"{name} [QUERY|all]"
    if _accepts(name, "flights_gold"):
        assert _accepts(name, "")
        return f"{name} [QUERY]"
    assert _accepts(name, "") and not _accepts(name, "flights_gold")
    return name


def _entries(lines: list[str]) -> dict[str, tuple[str, str]]:
    """First word of each entry line → (the entry as printed, the first text line)."""
    out = {}
    for line in lines:
        if line.startswith("  ") and line[2:3] != " ":
            entry, _, text = line[2:].partition("  ")
            out[entry.split(" ")[0]] = (entry, text.strip())
    return out


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_help_prints_every_command_synopsis_exactly_on_screen(make_app, size):
    app = make_app()
    seen: list[str] = []

    async def scenario(pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")
        static = app.screen.query_one("#help-text")
        await wait_for(pilot, lambda: static.size.height > 0, "the help to lay out")
        width, height = static.size
        seen.extend(s.text.rstrip() for s in static.render_lines(Region(0, 0, width, height)))

    run_app(app, scenario, size=size)
    entries = _entries(seen)
    for spec in REGISTRY:
        want = _synopsis_from_parser(spec.name)
        assert spec.name in entries, f"{spec.name} missing from the help: {seen}"
        printed, text = entries[spec.name]
        assert printed == want, f"help prints {printed!r} for :{spec.name}, which takes {want!r}"
        assert text and spec.help.startswith(text.rstrip()), (spec.name, text)
    assert not any("]" + c in line for line in seen for c in COMMANDS), "a synopsis ran into its text"
    # every wrapped text line is indented under the text column, never under the entries
    for line in seen:
        if line.startswith("  ") and line[2:3] == " ":
            assert len(line) - len(line.lstrip(" ")) > 10, line


def test_help_keys_are_the_keys_the_app_binds(make_app):
    app = make_app()
    bound: set[str] = set()

    async def scenario(pilot):
        bound.update(b.key_display or b.key for b in app.BINDINGS)
        bound.update(b.key for b in app.BINDINGS)

    run_app(app, scenario)
    text = help_text().plain
    keys_section = text.split("\n: commands")[0].splitlines()[1:]
    listed = {tok for line in keys_section for tok in line[2:].split("  ")[0].split()}
    shown = {b.key_display or b.key for b in app.BINDINGS}
    assert shown <= listed, f"bound but not in the help: {shown - listed}"
    # every key the help lists with a binding behind it is one the app binds
    for k in KEYS:
        for b in k.bindings:
            assert b.key in bound, f"the help lists {k.keys!r} but the app does not bind {b.key!r}"


@pytest.mark.parametrize("width", [50, 76, 86, 120])
def test_help_columns_never_collide_at_any_width(width):
    console = Console(width=width, record=True, color_system=None)
    console.print(help_renderable())
    lines = console.export_text().splitlines()
    entries = _entries(lines)
    for spec in REGISTRY:
        assert entries[spec.name][0] == f"{spec.name} {spec.args}".strip()
    # the plain text (tests, logs) says the same
    plain = _entries(help_text().plain.splitlines())
    assert {k: v[0] for k, v in plain.items() if k in COMMANDS} == {
        s.name: f"{s.name} {s.args}".strip() for s in REGISTRY}
