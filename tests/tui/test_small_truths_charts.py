"""The detail tab's y axes (issue 32 item 8.7): every tick set is drawn (none overwritten on
a short plot, as plotext's own fixed count of ticks was), the scale covers the data, and a
duration axis reads as durations (``2 d``, ``12 h``, ``200 ms``), never raw seconds
(``435600``). The account is the data (its maximum) and the plot's own text."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from textual_plotext.plot import Plot

from streamwatch.tui.charts import StackedBars, TimelineChart, duration_label, y_ticks

from conftest import run_app, wait_for

T0 = 1_700_000_000_000
SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _built(chart, width: int, height: int) -> list[str]:
    plt = Plot()
    plt.plotsize(width, height)
    plt._set_size(width, height)
    plt.theme("clear")
    chart.draw_plot(plt, width, height)
    return re.sub(r"\x1b\[[0-9;]*m", "", plt.build()).splitlines()


def _y_labels(lines: list[str]) -> list[str]:
    """The left axis' labels, top to bottom: what stands before a ``┤`` tick."""
    return [line.split("┤")[0].strip() for line in lines if "┤" in line and line.split("┤")[0].strip()]


def _seconds(label: str) -> float:
    if label == "0":
        return 0.0
    number, unit = label.split(" ")
    return float(number.replace(",", "")) * SECONDS[unit]


@pytest.mark.parametrize("height", range(7, 31))
def test_every_batch_duration_tick_is_drawn_and_reads_as_a_duration(height):
    chart = StackedBars("batch duration by operation", ["addBatch", "getBatch", "walCommit"], unit="ms")
    rows = [(1200, 30, 10), (800, 20, 10), (4100, 30, 15), (950, 15, 11), (2300, 12, 9)]
    chart.rows, chart.batch_ids = rows, [10, 11, 12, 13, 14]
    lines = _built(chart, 70, height)
    drawn = _y_labels(lines)
    ticks, labels = y_ticks(0, max(map(sum, rows)), height - 5, 0.001)
    assert drawn == labels[::-1], f"a tick went missing at height {height}: {drawn} vs {labels}"
    assert len(drawn) >= 2
    assert _seconds(drawn[0]) * 1000 >= max(map(sum, rows)), "the scale covers the longest batch"
    assert all(re.fullmatch(r"0|[\d,]+ (ms|s|m|h|d)", label) for label in drawn), drawn
    steps = {round(_seconds(a) - _seconds(b), 6) for a, b in pairwise(drawn)}
    assert len(steps) == 1, f"evenly stepped: {drawn}"


@pytest.mark.parametrize("gap_s", [435_600.0, 7_200.0, 95 * 60.0, 42.0, 0.4])
@pytest.mark.parametrize("height", [8, 11, 20])
def test_the_watermark_gap_axis_is_human_readable(gap_s, height):
    chart = TimelineChart("watermark gap (eventTime.max − watermark)", unit="s")
    chart.series = [("gap", tuple(T0 + i * 10_000 for i in range(20)), tuple(gap_s + i for i in range(20)), 170)]
    lines = _built(chart, 80, height)
    drawn = _y_labels(lines)
    assert drawn and all(re.fullmatch(r"0|[\d,]+ (ms|s|m|h|d)", label) for label in drawn), drawn
    if gap_s >= 60:
        assert not any(str(int(gap_s)) in line for line in lines if "┤" in line), "raw seconds on the axis"
    assert _seconds(drawn[0]) >= gap_s + 19 > _seconds(drawn[1]) if len(drawn) > 1 else True
    assert len({label.split(" ")[-1] for label in drawn if label != "0"}) == 1, f"one unit along the axis: {drawn}"
    assert "(s)" not in lines[0], "the ticks carry the unit"


def test_duration_labels():
    assert duration_label(432_000, 86_400) == "5 d"
    assert duration_label(121 * 3600, 3600) == "121 h"
    assert duration_label(90, 30) == "90 s"
    assert duration_label(1.5, 0.5) == "1,500 ms"
    assert duration_label(0, 60) == "0"


def test_the_legend_says_a_gap_as_a_duration():
    chart = TimelineChart("watermark gap", unit="s")
    chart.series = [("gap", (T0,), (435_600.0,), 170)]
    assert "gap 121h00m" in chart.legend().plain  # 435600 s = 121 h


def test_the_dashboards_watermark_chart_has_duration_ticks(make_app):
    app = make_app()
    seen: list[str] = []

    async def scenario(pilot):
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        chart = app.query_one("#chart-wm")
        gaps = chart.values("gap")
        plot = app.query_one("#chart-wm ChartPlot")
        await wait_for(pilot, lambda: plot.size.width > 0 and not plot.blank, "the gap chart")
        seen.extend(_y_labels(str(plot.render()).splitlines()))
        assert seen and _seconds(seen[0]) >= max(gaps)

    run_app(app, scenario, size=(140, 100))  # every chart in view: each is drawn
    assert all(re.fullmatch(r"0|[\d,]+ (ms|s|m|h|d)", label) for label in seen), seen
