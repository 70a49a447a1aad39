"""The detail tab's charts, drawn by plotext (through textual-plotext) with axes and tick
values, as the Spark UI's streaming tab draws its timelines:

* :class:`TimelineChart` — one line per series against a UTC time axis (``HH:MM:SS``), e.g.
  input vs processed rows/s, watermark gap (s) or state rows and memory;
* :class:`StackedBars` — one bar per batch id, stacked by operation (``durationMs``: addBatch,
  getBatch, …, ms), with a legend.

Each chart keeps what it shows (``series``/``rows``) and redraws itself when it changes;
titles carry the latest value of each series.
"""

from __future__ import annotations

from typing import Sequence

from textual.reactive import reactive
from textual_plotext import PlotextPlot

from streamwatch.analysis import fmt

#: one series: (label, epoch-ms timestamps, values — None where there is no value, colour)
Series = tuple[str, list[int | None], list[float | None], str]


def short(v: float | None) -> str:
    """A value for a title: ``1.2M``, ``35k``, ``1,234``, ``3.5``; ``-`` for None."""
    if v is None:
        return "-"
    if abs(v) >= 1_000_000:
        return f"{v / 1_000_000:.1f}M"
    if abs(v) >= 10_000:
        return f"{v / 1000:.0f}k"
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.1f}"


class TimelineChart(PlotextPlot):
    """Lines against a UTC time axis; points without a timestamp or a value are left out
    (so batches without a watermark do not flatten the watermark-gap chart)."""

    DEFAULT_CSS = "TimelineChart { height: 12; width: 1fr; }"
    series: reactive[list[Series]] = reactive(list, always_update=True, init=False)

    def __init__(self, title: str, unit: str = "", right: Sequence[str] = (), **kw: str) -> None:
        super().__init__(**kw)
        self.title = title
        self.unit = unit
        self.right = tuple(right)  # labels of series drawn against the right-hand axis

    def set_series(self, series: list[Series]) -> None:
        self.series = series

    def values(self, label: str) -> list[float]:
        """The plotted values of one series (None dropped)."""
        for name, _, vals, _ in self.series:
            if name == label:
                return [v for v in vals if v is not None]
        return []

    def watch_series(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.date_form("H:M:S")
        latest = []
        for label, times, vals, colour in self.series:
            pts = [(fmt.clock(t), v) for t, v in zip(times, vals) if t is not None and v is not None]
            if pts:
                plt.plot([p[0] for p in pts], [p[1] for p in pts], label=label, color=colour, marker="braille",
                         yside="right" if label in self.right else "left")
            latest.append(f"{label} {short(pts[-1][1]) if pts else '-'}")
        unit = f" ({self.unit})" if self.unit else ""
        plt.title(f"{self.title}{unit} — last: {', '.join(latest)}")
        plt.xlabel("time (UTC)")
        self.refresh()


class StackedBars(PlotextPlot):
    """One bar per batch id, its height stacked by ``labels`` (one value per label)."""

    DEFAULT_CSS = "StackedBars { height: 12; width: 1fr; }"
    rows: reactive[list[tuple[int, ...]]] = reactive(list, always_update=True, init=False)

    def __init__(self, title: str, labels: Sequence[str], unit: str = "ms", **kw: str) -> None:
        super().__init__(**kw)
        self.title = title
        self.labels = tuple(labels)
        self.unit = unit
        self.batch_ids: list[int] = []

    def set_rows(self, rows: list[tuple[int, ...]], batch_ids: list[int] | None = None) -> None:
        self.batch_ids = list(batch_ids) if batch_ids is not None else list(range(len(rows)))
        self.rows = rows

    def watch_rows(self) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        used = [i for i in range(len(self.labels)) if any(r[i] for r in self.rows)]
        if self.rows and used:
            plt.stacked_bar([str(b) for b in self.batch_ids], [[r[i] for r in self.rows] for i in used],
                            labels=[self.labels[i] for i in used])
        last = f"{sum(self.rows[-1]):,} {self.unit}" if self.rows else "-"
        plt.title(f"{self.title} ({self.unit}) — last batch: {last}")
        plt.xlabel("batch")
        self.refresh()
