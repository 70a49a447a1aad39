"""Issue 32 item 7 (screens that hide data): at 80×24 and at 160×48 every column of the queries
table, every section of a stateful query's detail tab and every layer of the pipeline tab is
reached with keys — asserted on what the screen shows after the keys (Pilot, the recorded
flights run), not on the absence of a crash."""

from __future__ import annotations

import pytest
from textual.widgets import Tabs

from streamwatch.analysis.pipeview import Layer, Link, PipelineGraph, layout
from streamwatch.tui.views.pipeline import draw_graph
from streamwatch.tui.views.queries import QUERY_COLUMNS

from conftest import drawn, run_app, wait_for

SIZES = [(80, 24), (160, 48)]
size_ids = pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")

#: the bundled flights pipeline's six queries and its edges (sample_pipelines/flights)
FLIGHTS = ["flights_bronze", "flights_quarantine", "flights_weather", "flights_silver", "flights_enriched",
           "flights_gold"]
EDGES = [("flights_bronze", "flights_quarantine"), ("flights_bronze", "flights_silver"),
         ("flights_silver", "flights_enriched"), ("flights_weather", "flights_enriched"),
         ("flights_silver", "flights_gold")]


def flights_graph(backlog_versions: int | None = None) -> PipelineGraph:
    pos = layout(FLIGHTS, EDGES)
    layers = sorted((Layer(n, *pos[n], batch_id=20, status="active", layer_latency_ms=2_300, end_to_end_ms=5_400,
                           slowest=n == "flights_enriched") for n in FLIGHTS), key=lambda lay: (lay.column, lay.row))
    links = tuple(Link(u, d, backlog_files=3, backlog_bytes=144_000, backlog_versions=backlog_versions)
                  for u, d in EDGES)
    return PipelineGraph(tuple(layers), links, "flights_enriched", 5_400, 0)


def screen_text(app) -> str:
    """What the terminal shows now, as text (one line a row)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def press_until(pilot, app, key: str, shown, what: str, most: int = 30) -> int:
    """Press ``key`` until ``shown(screen text)`` holds (at most ``most`` times); the presses."""
    for n in range(most + 1):
        await drawn(pilot, app)
        if shown(screen_text(app)):
            return n
        await pilot.press(key)
    raise AssertionError(f"{what} not on screen after {most} × {key}:\n{screen_text(app)}")


def header_line(app) -> str:
    """The queries table's header row, as shown."""
    table = app.query_one("#query-table")
    y = table.region.y
    return screen_text(app).splitlines()[y]


# -- the queries table ------------------------------------------------------------------------


async def queries_table(pilot, app):
    """The queries table, once the screen shows the model (:func:`drawn`)."""
    await drawn(pilot, app)
    return app.query_one("#query-table")


@size_ids
def test_every_query_column_is_reached_with_the_arrow_keys(make_app, size):
    app = make_app()

    async def scenario(pilot):
        table = await queries_table(pilot, app)
        first = header_line(app)
        # the compact set is on screen at once, at 80 columns too
        for column in ("query", "status", "diagnosis", "batch", "input rows/s", "backlog", "trigger"):
            assert column in first, (column, first)
        if size[0] >= 160:  # wide: every column at once, the diagnosis bounded
            for column in QUERY_COLUMNS:
                assert column in first, (column, first)
        seen = set(c for c in QUERY_COLUMNS if c in first)
        for _ in range(len(QUERY_COLUMNS)):
            await pilot.press("right")
            await drawn(pilot, app)
            seen |= {c for c in QUERY_COLUMNS if c in header_line(app)}
        assert seen == set(QUERY_COLUMNS)
        text = screen_text(app)
        assert "append" in text and "17,580" in text  # mode and rows of gold, the last columns
        await pilot.press("home")
        await drawn(pilot, app)
        assert table.scroll_offset.x == 0 and header_line(app).lstrip().startswith("query")

    run_app(app, scenario, size=size)


@size_ids
def test_diagnosis_is_cut_with_an_ellipsis_and_whole_in_the_detail(make_app, size):
    app = make_app()

    async def scenario(pilot):
        table = await queries_table(pilot, app)
        shown = str(table.get_cell("flights_gold", "diagnosis"))
        full = app.model.diagnoses["flights_gold"].text
        assert shown.endswith("…") and full.startswith(shown[:-1]) and len(shown) < len(full)
        assert shown.startswith("failed in")
        await enter_gold(pilot, app)
        await drawn(pilot, app)
        assert full[:size[0] - 30] in screen_text(app).replace("\n", "")

    run_app(app, scenario, size=size)


# -- the detail tab ----------------------------------------------------------------------------

#: what each section of flights_gold's detail shows (gold: a window aggregation, stateful)
SECTIONS = {
    "header": "output mode append",
    "rates chart": "input vs processed",
    "durations chart": "batch duration by operation",
    "watermark chart": "watermark gap",
    "state chart": "state rows and memory",
    "state operators": "stateStoreSave",
    "sources": "FileStreamSource",
    "sink": "sink FileSink",
}


async def enter_gold(pilot, app) -> None:
    """From the queries table: down to flights_gold (the third row), enter — its detail tab."""
    await pilot.press("down", "down", "enter")
    await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")


async def open_gold(pilot, app) -> None:
    """flights_gold's detail tab, its charts drawn."""
    await enter_gold(pilot, app)
    await wait_for(pilot, lambda: not app.query_one("#detail-view").charts_pending, "the charts")
    await drawn(pilot, app)


@size_ids
@pytest.mark.parametrize("key", ["pagedown", "down"])
def test_every_detail_section_is_reached_with_keys(make_app, size, key):
    app = make_app()

    async def scenario(pilot):
        await open_gold(pilot, app)
        view = app.query_one("#detail-view")
        assert app.focused is view
        for name, marker in SECTIONS.items():
            await press_until(pilot, app, key, lambda text, marker=marker: marker in text, name, most=120)
        assert view.scroll_offset.y == view.max_scroll_y or "sink FileSink" in screen_text(app)
        if size[1] < 48:
            assert view.max_scroll_y > 0  # it did scroll

    run_app(app, scenario, size=size)


async def focus_tab_row(pilot, app) -> None:
    """shift+tab until the tab row has the focus (a few presses at most)."""
    for _ in range(5):
        if isinstance(app.focused, Tabs):
            break
        await pilot.press("shift+tab")
    assert isinstance(app.focused, Tabs)


@size_ids
def test_end_home_and_pageup_in_the_detail_also_from_the_tab_row(make_app, size):
    app = make_app()

    async def scenario(pilot):
        await open_gold(pilot, app)
        view = app.query_one("#detail-view")
        await focus_tab_row(pilot, app)
        await pilot.press("end")
        await drawn(pilot, app)
        assert "sink FileSink" in screen_text(app) and "stateStoreSave" in screen_text(app)
        assert view.scroll_offset.y == view.max_scroll_y
        await pilot.press("home")
        await drawn(pilot, app)
        assert view.scroll_offset.y == 0 and "output mode append" in screen_text(app)
        # the tab row again, then pgdn: the tab scrolls (it had the focus given back)
        await focus_tab_row(pilot, app)
        await pilot.press("pagedown")
        await drawn(pilot, app)
        assert view.scroll_offset.y > 0 or view.max_scroll_y == 0
        await pilot.press("pageup")
        await drawn(pilot, app)
        assert view.scroll_offset.y == 0

    run_app(app, scenario, size=size)


def test_detail_tables_columns_are_reached_with_the_arrow_keys(make_app):
    app = make_app()

    async def scenario(pilot):
        await open_gold(pilot, app)
        await pilot.press("end")
        await drawn(pilot, app)
        assert "custom metrics" not in screen_text(app)  # off to the right at 80 columns
        await press_until(pilot, app, "right", lambda text: "custom metrics" in text and "metrics" in text,
                          "the operators' custom metrics")
        await press_until(pilot, app, "right", lambda text: "in rows/s" in text, "the sources' rates")

    run_app(app, scenario, size=(80, 24))


# -- the pipeline tab --------------------------------------------------------------------------


def boxes_whole(text: str, names: list[str]) -> None:
    """Each layer's box is drawn whole: its title line closes with ┐ after the name."""
    for name in names:
        lines = [line for line in text.splitlines() if f"┌ {name} " in line]
        assert lines, f"{name} not drawn"
        assert all("┐" in line[line.index(name):] for line in lines), f"{name}'s box is cut:\n{text}"


@size_ids
def test_every_pipeline_layer_is_reached_with_keys(make_app, size):
    app = make_app()

    async def scenario(pilot):
        app.emit(flights_graph(backlog_versions=2))  # Delta backlog: the longest box lines
        await wait_for(pilot, lambda: app.model.pipeline is not None, "the graph")
        await pilot.press("7")
        await drawn(pilot, app)
        assert app.focused is app.query_one("#pipeline-view")
        for name in FLIGHTS:
            await press_until(pilot, app, "pagedown", lambda text, name=name: f"┌ {name} " in text, name)
            boxes_whole(screen_text(app), [name])
        # the box lines are whole too: the longest one, in the box that reads two upstreams
        await press_until(pilot, app, "pagedown", lambda text: "← weather: 2 version(s), 3 file(s)" in text,
                          "enriched's incoming edge")
        if size[0] >= 160:  # the whole DAG at once, side by side with arrows
            await pilot.press("home")
            await drawn(pilot, app)
            text = screen_text(app)
            boxes_whole(text, FLIGHTS)
            assert "▶" in text

    run_app(app, scenario, size=size)


@pytest.mark.parametrize("width", [40, 76, 120, 156, 200])
def test_draw_graph_fits_the_width_and_never_cuts_a_box(width):
    text = draw_graph(flights_graph(backlog_versions=2), width).plain
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= max(width, 30)
    assert text.count("┌ flights_") == len(FLIGHTS)
    if width >= 40:
        boxes_whole(text, FLIGHTS)
    # three stages of 39-cell boxes (the longest line, "← weather: 2 version(s), 3 file(s)", whole)
    # and two 8-cell gaps: 133 cells side by side, else one stage under the other
    assert ("▼" in text) == (width < 133)
    assert ("▶" in text) == (width >= 133)
