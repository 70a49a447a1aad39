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

The y axes get their ticks from :mod:`streamwatch.tui.chart_axes`, not plotext: at most one a canvas row (plotext's own
ticks, a fixed number whatever the height, overwrite each other on a short plot and a value
goes missing), at round steps from 0 or the lowest value to just above the highest. A
chart whose unit is a duration (``ms``, ``s``) labels them as durations (``30 s``, ``2 m``,
``12 h``, ``5 d``; see :func:`~streamwatch.tui.chart_axes.y_ticks`), never as raw seconds
(``435600``).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable, Sequence

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
from streamwatch.tui.chart_axes import duration_label as duration_label
from streamwatch.tui.chart_axes import id_ticks, short, time_ticks, y_ticks

#: one timeline series: (label, epoch-ms timestamps, values — None where there is none,
#: 256-colour code used by both plotext and the legend)
Series = tuple[str, Sequence[int | None], Sequence[float | None], int]
#: colours of stacked segments, in order (256-colour codes)
PALETTE = (33, 208, 40, 170, 220, 44, 160, 250)
#: the narrowest and lowest plot worth drawing (columns, lines)
MIN_PLOT = (16, 4)
#: seconds in one of each chart unit that is a duration
DURATION_UNITS = {"ms": 0.001, "s": 1.0}


#: screens on which a plot was built during the paint under way (at most one per paint)
_BUILT_IN_PAINT: weakref.WeakSet[Screen[object]] = weakref.WeakSet()


class _Built(Visual):
    """A built plot, drawn into strips once per size, style and selection (a paint that
    defers its rebuild shows the same plot again, without drawing it anew)."""

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

    Building a plot (plotext) is the costliest step of a paint, so one paint builds at most one plot: a plot due
    while another was built in the same paint shows what it showed before (nothing after
    :meth:`forget`, and not in the paint right after it) and is built in a following paint,
    and keys typed meanwhile are answered between the two paints instead of after four plots
    (the detail tab shown by enter, ``bench/tui_bench.py --hundred``). ``pending`` is True
    while this plot waits its turn."""

    DEFAULT_CSS = "ChartPlot { height: 1fr; width: 1fr; }"

    def __init__(self, draw: Callable[[Plot, int, int], None]) -> None:
        super().__init__()
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

    def __init__(self, title: str, unit: str = "", *, id: str | None = None) -> None:
        super().__init__(id=id)
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
        # textual_plotext's stub types ``yside`` as a float; plotext takes "left"/"right"
        plt.ylim(ticks[0], ticks[-1], yside=side)  # type: ignore[arg-type]
        shown = slice(None) if rows >= 2 else slice(-1, None)  # one row: its top tick only
        plt.yticks(ticks[shown], labels[shown], yside=side)  # type: ignore[arg-type]  # as ylim's

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

    def __init__(self, title: str, unit: str = "", right: Sequence[str] = (), right_unit: str = "", *,
                 id: str | None = None) -> None:
        super().__init__(title, unit, id=id)
        self.right = tuple(right)
        self.right_unit = right_unit
        self.series: list[Series] = []

    def set_series(self, series: Sequence[Series]) -> None:
        """Show ``series``; nothing is redrawn when they did not change."""
        new: list[Series] = [(label, tuple(ts), tuple(vs), colour) for label, ts, vs, colour in series]
        if new != self.series:
            self.series = new
            self.changed(self.legend())

    def values(self, label: str) -> list[float]:
        """The plottable values of one series (points without a value or time left out)."""
        return [v for _, v in self.points(label)]

    def points(self, label: str) -> list[tuple[int, float]]:
        for name, times, vals, _ in self.series:
            if name == label:
                return [(t, v) for t, v in zip(times, vals, strict=True) if t is not None and v is not None]
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

    def __init__(self, title: str, labels: Sequence[str], unit: str = "ms", *, id: str | None = None) -> None:
        super().__init__(title, unit, id=id)
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
        # one colour a stack: plotext takes a list here, its stub one colour only
        plt.stacked_bar(ids, [[r[i] for r in rows] for i in used],
                        color=[PALETTE[i % len(PALETTE)] for i in used])  # type: ignore[arg-type]
        ticks: list[float] = list(id_ticks(ids, width))
        plt.xticks(ticks, [str(b) for b in ticks])
        plt.xlabel("batch")
        # the title, two axis lines, the batch ids, the x label
        self.y_axis(plt, 0.0, float(max(sum(r[i] for i in used) for r in rows)), height - 5, self.seconds)
