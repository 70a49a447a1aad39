"""Two small chart widgets drawn with block characters (no plotting dependency):

* :class:`SeriesChart` — one sparkline row per series on a shared scale (e.g. input vs
  processed rows/s), newest value on the right with its number;
* :class:`StackedBars` — one column per batch, stacked by operation (e.g. ``durationMs``
  addBatch/getBatch/…), with a legend line.
"""

from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

BLOCKS = " ▁▂▃▄▅▆▇█"
PALETTE = ("dodger_blue2", "orange3", "green3", "magenta", "yellow", "cyan", "red", "white")


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1_000_000:
        return f"{v / 1_000_000:.1f}M"
    if abs(v) >= 10_000:
        return f"{v / 1000:.0f}k"
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:.1f}"


def sparkline(values: Sequence[float | None], width: int, top: float) -> str:
    """The last ``width`` values as block characters scaled to ``top`` (None → space)."""
    vals = list(values)[-width:] if width > 0 else []
    out = []
    for v in vals:
        if v is None or top <= 0:
            out.append(" ")
        else:
            out.append(BLOCKS[max(1 if v > 0 else 0, min(8, round(8 * v / top)))])
    return "".join(out).rjust(width)


class SeriesChart(Widget):
    """Rows of ``(label, values, style)``; all rows share one scale (their common max).
    ``unit`` is appended to the scale line (e.g. ``rows/s``, ``s``)."""

    DEFAULT_CSS = "SeriesChart { height: auto; min-height: 2; }"
    version: reactive[int] = reactive(0, layout=True)

    def __init__(self, title: str, unit: str = "", **kw) -> None:
        super().__init__(**kw)
        self.title = title
        self.unit = unit
        self.series: list[tuple[str, list[float | None], str]] = []

    def set_series(self, series: list[tuple[str, list[float | None], str]]) -> None:
        self.series = series
        self.version += 1

    def get_content_height(self, container, viewport, width: int) -> int:
        return 1 + max(1, len(self.series))

    def render(self) -> Text:
        width = max(10, self.size.width)
        label_w = max([len(s[0]) for s in self.series] + [6]) + 1
        width_vals = max(1, width - label_w - 9)
        window = [v for s in self.series for v in s[1][-width_vals:] if v is not None]
        top = max(window) if window else 0.0
        text = Text(f"{self.title}  (max {_fmt(top)} {self.unit})".rstrip(), style="bold")
        if not self.series:
            text.append("\n  no data yet", style="dim")
        for label, values, style in self.series:
            last = next((v for v in reversed(values) if v is not None), None)
            text.append("\n" + label.ljust(label_w), style=style)
            text.append(sparkline(values, width_vals, top), style=style)
            text.append(" " + _fmt(last).rjust(7))
        return text


class StackedBars(Widget):
    """Columns of stacked segments: ``rows`` is one tuple of non-negative numbers per column
    (oldest first), ``labels`` names each segment; ``bar_height`` lines of bars + a legend."""

    DEFAULT_CSS = "StackedBars { height: auto; }"
    version: reactive[int] = reactive(0, layout=True)

    def __init__(self, title: str, labels: Sequence[str], unit: str = "ms", bar_height: int = 5, **kw) -> None:
        super().__init__(**kw)
        self.title = title
        self.labels = tuple(labels)
        self.unit = unit
        self.bar_height = bar_height
        self.rows: list[tuple[int, ...]] = []

    def set_rows(self, rows: list[tuple[int, ...]]) -> None:
        self.rows = rows
        self.version += 1

    def get_content_height(self, container, viewport, width: int) -> int:
        return self.bar_height + 2

    def render(self) -> Text:
        width = max(10, self.size.width)
        cols = self.rows[-width:]
        top = max((sum(r) for r in cols), default=0)
        text = Text(f"{self.title}  (max {_fmt(top)} {self.unit})", style="bold")
        h = self.bar_height
        grid: list[list[tuple[str, str]]] = [[(" ", "")] * len(cols) for _ in range(h)]
        for x, r in enumerate(cols):
            total = sum(r)
            if top <= 0 or total <= 0:
                continue
            cells = max(1, round(h * total / top))
            bounds, acc = [], 0
            for v in r:
                acc += v
                bounds.append(acc / total)
            for level in range(cells):  # level 0 = bottom
                mid = (level + 0.5) / cells
                seg = next((i for i, b in enumerate(bounds) if mid <= b), len(r) - 1)
                grid[h - 1 - level][x] = ("█", PALETTE[seg % len(PALETTE)])
        pad = " " * (width - len(cols))
        for line in grid:
            text.append("\n" + pad)
            for ch, style in line:
                text.append(ch, style=style)
        text.append("\n")
        for i, label in enumerate(self.labels):
            text.append("█", style=PALETTE[i % len(PALETTE)])
            text.append(f"{label} ")
        return text
