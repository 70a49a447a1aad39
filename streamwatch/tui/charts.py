"""The detail tab's charts, drawn by plotext (through textual-plotext) with axes and tick
values, as the Spark UI's streaming tab draws its timelines:

* :class:`TimelineChart` — one line per series against a UTC time axis (``HH:MM:SS`` ticks),
  e.g. input vs processed rows/s, watermark gap (s), state rows and memory (MiB, right axis);
* :class:`StackedBars` — one bar per batch id, stacked by operation (``durationMs``: addBatch,
  getBatch, …, ms).

Each chart is a plot over a legend line that names every series in its colour with its latest
value. A chart keeps what it shows (``series``/``rows``), redraws only when that changes, and
draws at its laid-out size: nothing in a chart depends on the wall clock or on when it drew.
Points without a timestamp or a value are left out, so batches without a watermark never
reach the watermark-gap chart's scale.

The y axes get their ticks from here, not plotext: at most one a canvas row (plotext's own
ticks, a fixed number whatever the height, overwrite each other on a short plot and a value
goes missing), at round steps from 0 or the lowest value to just above the highest. A
chart whose unit is a duration (``ms``, ``s``) labels them as durations (``30 s``, ``2 m``,
``12 h``, ``5 d``; see :func:`y_ticks`), never as raw seconds (``435600``).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from typing import Callable, Sequence

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Vertical
from textual.content import Content
from textual.css.styles import RulesMap
from textual.screen import Screen
from textual.strip import Strip
from textual.style import Style
from textual.visual import RenderOptions, Visual
from textual.widgets import Static
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot

from streamwatch.analysis import fmt

#: one timeline series: (label, epoch-ms timestamps, values — None where there is none,
#: 256-colour code used by both plotext and the legend)
Series = tuple[str, Sequence[int | None], Sequence[float | None], int]
#: colours of stacked segments, in order (256-colour codes)
PALETTE = (33, 208, 40, 170, 220, 44, 160, 250)
#: the narrowest and lowest plot worth drawing (columns, lines)
MIN_PLOT = (16, 4)
#: seconds in one of each chart unit that is a duration
DURATION_UNITS = {"ms": 0.001, "s": 1.0}
#: the units a duration axis is labelled in (name, seconds), largest first
DURATION_LABELS = (("d", 86_400.0), ("h", 3_600.0), ("m", 60.0), ("s", 1.0), ("ms", 0.001))
#: the steps (seconds) a duration axis may take below a day; from a day on: 1, 2, 5 × 10ⁿ days
DURATION_STEPS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30,
                  60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200)
#: the most y ticks an axis gets (fewer on a plot with fewer rows)
MAX_Y_TICKS = 5


def short(v: float | None) -> str:
    """A value for a legend: ``1.2M``, ``35k``, ``1,234``, ``3.5``; ``-`` for None."""
    if v is None:
        return "-"
    if abs(v) >= 1_000_000:
        return f"{v / 1_000_000:.1f}M"
    if abs(v) >= 10_000:
        return f"{v / 1000:.0f}k"
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.1f}"


def _nice_steps(at_least: float, duration: bool) -> list[float]:
    """Round steps of at least ``at_least``, ascending (a few of them): 1, 2, 5 × 10ⁿ, or for
    a duration (in seconds) :data:`DURATION_STEPS` and then whole days."""
    if duration:
        steps = [float(x) for x in DURATION_STEPS if x >= at_least]
        day = 86_400.0
        e = max(0, math.floor(math.log10(max(at_least / day, 1e-12))))
        steps += [m * 10 ** k * day for k in range(e, e + 3) for m in (1, 2, 5)]
        return sorted(x for x in steps if x >= at_least)
    e = math.floor(math.log10(at_least)) if at_least > 0 else 0
    return [m * 10.0 ** k for k in range(e - 1, e + 3) for m in (1, 2, 5) if m * 10.0 ** k >= at_least]


def duration_label(seconds: float, step_s: float) -> str:
    """A duration tick: in the largest unit that ``step_s`` is a whole number of, so every
    tick of an axis reads in one unit (``0``, ``12 h``, ``24 h``; ``0``, ``2 d``)."""
    if abs(seconds) < 1e-9:
        return "0"
    for name, unit in DURATION_LABELS:
        ratio = step_s / unit
        if ratio >= 1 - 1e-9 and abs(ratio - round(ratio)) < 1e-6:
            return f"{round(seconds / unit):,} {name}"
    return f"{seconds * 1000:g} ms"


def number_label(v: float, step: float) -> str:
    """A tick of a count or rate axis: ``0``, ``500``, ``1,500``, ``20k``, ``1.5M``, ``0.25``
    (as many decimals as the step needs)."""
    if abs(v) < 1e-12:
        return "0"
    if step >= 1_000_000:
        return f"{v / 1_000_000:g}M"
    if step >= 10_000:
        return f"{v / 1000:g}k"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{v:,.{decimals}f}"


def y_ticks(low: float, high: float, rows: int, seconds: float | None = None) -> tuple[list[float], list[str]]:
    """Ticks for a y axis showing ``low`` … ``high`` on ``rows`` canvas rows: at round steps
    from a multiple of the step at or below ``low`` to the first one at or above ``high``
    (the axis limits: the first and last tick), never more than one a row nor more than
    :data:`MAX_Y_TICKS`. ``seconds``: the axis is a duration, one of its units being that many
    seconds (labels ``5 d``, ``30 s``, ``500 ms``); None: a count or rate."""
    if high < low:
        low, high = high, low
    if high == low:
        high = low + (abs(low) or (1.0 / seconds if seconds else 1.0))
    steps_allowed = max(1, min(rows - 1, MAX_Y_TICKS - 1))
    factor = seconds or 1.0
    span_s = (high - low) * factor
    for step_s in _nice_steps(span_s / steps_allowed, seconds is not None):  # the smallest that fits
        first = math.floor(low * factor / step_s + 1e-9)
        last = max(math.ceil(high * factor / step_s - 1e-9), first + 1)
        if last - first <= steps_allowed:
            break
    ticks_s = [k * step_s for k in range(first, last + 1)]
    ticks = [t / factor for t in ticks_s]
    if seconds is not None:
        return ticks, [duration_label(t, step_s) for t in ticks_s]
    return ticks, [number_label(t, step_s) for t in ticks_s]


def time_ticks(first_s: float, last_s: float, width: int) -> tuple[list[float], list[str]]:
    """Evenly spaced x ticks between two times (epoch s) labelled ``HH:MM:SS`` UTC: one per
    ~20 columns of ``width``, at least the two ends."""
    if last_s <= first_s:
        return [first_s], [fmt.clock(int(first_s * 1000))]
    n = max(2, min(6, width // 20))
    ticks = [first_s + (last_s - first_s) * i / (n - 1) for i in range(n)]
    return ticks, [fmt.clock(int(round(t * 1000))) for t in ticks]


def id_ticks(ids: Sequence[int], width: int) -> list[int]:
    """A readable subset of batch ids for an x axis: one per ~8 columns, always the last."""
    if not ids:
        return []
    step = max(1, -(-len(ids) * 8 // max(8, width)))
    picked = list(ids[::-1][::step])[::-1]
    return picked


#: screens on which a plot was built during the paint under way (at most one per paint)
_BUILT_IN_PAINT: weakref.WeakSet[Screen] = weakref.WeakSet()


class _Built(Visual):
    """A built plot, drawn into strips once per size, style and selection (a paint that
    defers its rebuild shows the same plot again: ~2 ms a chart to draw it anew)."""

    def __init__(self, content: Content) -> None:
        self.content = content
        self._drawn: tuple[object, list[Strip]] | None = None

    def render_strips(self, width: int, height: int | None, style: Style, options: RenderOptions) -> list[Strip]:
        key = (width, height, style, options.selection, options.selection_style, options.post_style)
        if self._drawn is None or self._drawn[0] != key:
            self._drawn = (key, self.content.render_strips(width, height, style, options))
        return self._drawn[1]

    def __str__(self) -> str:
        """The plot's characters (its axes, ticks and marks), without styles."""
        return str(self.content)

    def get_optimal_width(self, rules: RulesMap, container_width: int) -> int:
        return self.content.get_optimal_width(rules, container_width)

    def get_height(self, rules: RulesMap, width: int) -> int:
        return self.content.get_height(rules, width)


class ChartPlot(PlotextPlot):
    """A plotext plot that asks its chart to draw into it at render time, at its laid-out size
    (so ticks and the number of points follow the width).

    Building a plot costs ~45 ms (plotext), so one paint builds at most one plot: a plot due
    while another was built in the same paint shows what it showed before (nothing after
    :meth:`forget`, and not in the paint right after it) and is built in a following paint,
    and keys typed meanwhile are answered between the two paints instead of after four plots
    (the detail tab shown by enter, ``bench/tui_bench.py --hundred``). ``pending`` is True
    while this plot waits its turn."""

    DEFAULT_CSS = "ChartPlot { height: 1fr; width: 1fr; }"

    def __init__(self, draw: Callable[[Plot, int, int], None], **kw: str) -> None:
        super().__init__(**kw)
        self._draw = draw
        self._shown: RenderResult = ""
        self._fresh = False
        self.pending = False

    @property
    def blank(self) -> bool:
        """Nothing built to show yet (or forgotten since)."""
        return self._shown == ""

    def forget(self) -> None:
        """Drop what the plot showed (it shows another query now): blank until rebuilt, which
        is not in the first paint (the one showing the new query's text and tables)."""
        self._shown = ""
        self._fresh = True
        self.refresh()

    def defer(self) -> None:
        """Build nothing in the next paint, which shows what the plot showed before: that
        paint brings a tab on screen, and answers the key that asked for it first."""
        self._fresh = True

    def render(self) -> RenderResult:
        width, height = self.size
        if width < MIN_PLOT[0] or height < MIN_PLOT[1]:
            self.pending = False  # nothing to build at this size
            return ""
        screen = self.screen
        if screen in _BUILT_IN_PAINT or self._fresh:  # another plot was built in this paint: the next one
            self._fresh = False
            self.pending = True
            self.call_after_refresh(self.refresh)
            return self._shown
        _BUILT_IN_PAINT.add(screen)
        # a paint is one step of the event loop (no awaits in the compositor): the next step
        # ends it, before any deferred plot's refresh can start another paint
        asyncio.get_running_loop().call_soon(_BUILT_IN_PAINT.discard, screen)
        self.pending = False
        self.plt.clear_data()
        self.plt.clear_figure()
        self._draw(self.plt, width, height)
        built = super().render()  # plotext's ANSI output as a rich Text
        # converted and drawn once: a deferred paint shows it again at no cost
        self._shown = _Built(Content.from_rich_text(built, console=self.app.console)) if isinstance(built, Text) else built
        return self._shown


class Chart(Vertical):
    """A plot over a one-line legend."""

    DEFAULT_CSS = """
    Chart { height: 12; width: 1fr; }
    Chart > Static { height: 1; padding: 0 1; }
    """

    def __init__(self, title: str, unit: str = "", **kw: str) -> None:
        super().__init__(**kw)
        self.title = title
        self.unit = unit

    def compose(self) -> ComposeResult:
        yield ChartPlot(self.draw_plot)
        yield Static("no data yet", classes="legend")

    def draw_plot(self, plt: Plot, width: int, height: int) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def seconds(self) -> float | None:
        """Seconds in one of the chart's unit when it is a duration (``ms``, ``s``), else None."""
        return DURATION_UNITS.get(self.unit)

    def y_axis(self, plt: Plot, low: float, high: float, rows: int, seconds: float | None,
               side: str = "left") -> None:
        """Set one y axis: its limits and its ticks (:func:`y_ticks`) for ``rows`` canvas rows."""
        ticks, labels = y_ticks(low, high, rows, seconds)
        plt.ylim(ticks[0], ticks[-1], yside=side)
        shown = slice(None) if rows >= 2 else slice(-1, None)  # one row: its top tick only
        plt.yticks(ticks[shown], labels[shown], yside=side)

    def forget(self) -> None:
        """The chart shows another subject (query) now: its old plot is not shown meanwhile."""
        if self.is_mounted:
            self.query_one(ChartPlot).forget()

    def defer(self) -> None:
        """The plot is not built in the next paint (see :meth:`ChartPlot.defer`)."""
        if self.is_mounted:
            self.query_one(ChartPlot).defer()

    @property
    def pending(self) -> bool:
        """The plot waits for a paint to be built in (see :class:`ChartPlot`). A hidden chart
        waits for nothing: it is not painted (its plot is built when it is shown again)."""
        return self.is_mounted and self.display and self.query_one(ChartPlot).pending

    def changed(self, legend: Text) -> None:
        """What the chart shows changed: redraw the plot, rewrite the legend."""
        if self.is_mounted:
            self.query_one(ChartPlot).refresh()
            # the legend is one line high and as wide as the chart whatever it says: no layout
            # (Textual lays out the whole screen again for an update that may change a size)
            self.query_one(Static).update(legend, layout=False)

    def on_mount(self) -> None:
        self.query_one(Static).update(self.legend())

    def legend(self) -> Text:  # pragma: no cover - overridden
        raise NotImplementedError


class TimelineChart(Chart):
    """Lines against a UTC time axis; ``right`` names series drawn against the right-hand
    axis (another unit). Shows the newest points that fit (two per column, braille)."""

    def __init__(self, title: str, unit: str = "", right: Sequence[str] = (), right_unit: str = "",
                 **kw: str) -> None:
        super().__init__(title, unit, **kw)
        self.right = tuple(right)
        self.right_unit = right_unit
        self.series: list[Series] = []

    def set_series(self, series: Sequence[Series]) -> None:
        """Show ``series``; nothing is redrawn when they did not change."""
        new = [(label, tuple(ts), tuple(vs), colour) for label, ts, vs, colour in series]
        if new != self.series:
            self.series = new
            self.changed(self.legend())

    def values(self, label: str) -> list[float]:
        """The plottable values of one series (points without a value or time left out)."""
        return [v for _, v in self.points(label)]

    def points(self, label: str) -> list[tuple[int, float]]:
        for name, times, vals, _ in self.series:
            if name == label:
                return [(t, v) for t, v in zip(times, vals) if t is not None and v is not None]
        return []

    def legend(self) -> Text:
        text = Text()
        for label, _, _, colour in self.series:
            pts = self.points(label)
            unit = self.right_unit if label in self.right else self.unit
            if text:
                text.append("  ")
            text.append("━━ ", style=f"color({colour})")
            seconds = DURATION_UNITS.get(unit)
            if seconds is not None:  # a duration reads as one: 121h02m, not 435720 s
                text.append(f"{label} {fmt.duration(round(pts[-1][1] * seconds * 1000)) if pts else '-'}")
            else:
                text.append(f"{label} {short(pts[-1][1]) if pts else '-'} {unit}".rstrip())
        if not any(self.points(s[0]) for s in self.series):
            text.append("  no data yet" if text else "no data yet", style="dim")
        else:
            last = max(t for s in self.series for t, _ in self.points(s[0]))
            text.append(f"  (latest at {fmt.clock(last)} UTC)", style="dim")
        return text

    def draw_plot(self, plt: Plot, width: int, height: int) -> None:
        keep = max(8, 2 * width)
        drawn: list[int] = []
        span: dict[str, tuple[float, float]] = {}
        for label, _, _, colour in self.series:
            pts = self.points(label)[-keep:]
            if pts:
                side = "right" if label in self.right else "left"
                drawn.extend(t for t, _ in pts)
                values = [v for _, v in pts]
                low, high = span.get(side, (0.0, 0.0))  # counts, rates, gaps: from 0, so heights compare
                span[side] = (min(low, *values), max(high, *values))
                plt.plot([t / 1000 for t, _ in pts], values, color=colour, marker="braille", yside=side)
        rows = height - 4  # the title, two axis lines, the time ticks
        for side, (low, high) in span.items():
            unit = self.right_unit if side == "right" else self.unit
            self.y_axis(plt, low, high, rows, DURATION_UNITS.get(unit), side)
        units = [u for u in (self.unit, f"{self.right_unit} right" if self.right else "")
                 if u and u not in DURATION_UNITS]  # a duration axis says its unit at every tick
        plt.title(f"{self.title} ({' · '.join(units)})" if units else self.title)
        if drawn:
            ticks, labels = time_ticks(min(drawn) / 1000, max(drawn) / 1000, width)
            plt.xticks(ticks, labels)


class StackedBars(Chart):
    """One bar per batch id, its height stacked by ``labels`` (one value per label, ms);
    segments that are zero in every batch shown are left out of the plot. Shows the newest
    batches that fit (at least two columns each)."""

    def __init__(self, title: str, labels: Sequence[str], unit: str = "ms", **kw: str) -> None:
        super().__init__(title, unit, **kw)
        self.labels = tuple(labels)
        self.rows: list[tuple[int, ...]] = []
        self.batch_ids: list[int] = []

    def set_rows(self, rows: Sequence[Sequence[int]], batch_ids: Sequence[int] | None = None) -> None:
        """Show one stacked bar per row (oldest first) labelled with ``batch_ids`` (default
        0, 1, …); nothing is redrawn when they did not change."""
        new_rows = [tuple(r) for r in rows]
        new_ids = list(batch_ids) if batch_ids is not None else list(range(len(new_rows)))
        if (new_rows, new_ids) != (self.rows, self.batch_ids):
            self.rows, self.batch_ids = new_rows, new_ids
            self.changed(self.legend())

    def legend(self) -> Text:
        text = Text()
        for i, label in enumerate(self.labels):
            if self.rows and not any(r[i] for r in self.rows):
                continue
            if text:
                text.append(" ")
            text.append("█ ", style=f"color({PALETTE[i % len(PALETTE)]})")
            text.append(label)
        if self.rows:
            text.append(f"  (batch {self.batch_ids[-1]}: {sum(self.rows[-1]):,} {self.unit})", style="dim")
        else:
            text = Text("no batch yet", style="dim")
        return text

    def draw_plot(self, plt: Plot, width: int, height: int) -> None:
        plt.title(self.title if self.seconds is not None else f"{self.title} ({self.unit})")
        keep = max(4, (width - 8) // 2)
        rows, ids = self.rows[-keep:], self.batch_ids[-keep:]
        used = [i for i in range(len(self.labels)) if any(r[i] for r in rows)]
        if not rows or not used:
            return
        plt.stacked_bar(ids, [[r[i] for r in rows] for i in used],
                        color=[PALETTE[i % len(PALETTE)] for i in used])
        ticks = id_ticks(ids, width)
        plt.xticks(ticks, [str(b) for b in ticks])
        plt.xlabel("batch")
        # the title, two axis lines, the batch ids, the x label
        self.y_axis(plt, 0.0, float(max(sum(r[i] for i in used) for r in rows)), height - 5, self.seconds)
