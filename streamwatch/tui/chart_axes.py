"""The charts' axes and legends as text: y ticks at round steps (durations labelled in one
unit, ``30 s``, ``2 m``, ``12 h``, ``5 d``; counts and rates ``1,500``, ``20k``, ``1.5M``),
``HH:MM:SS`` UTC time ticks, a readable subset of batch ids, and a legend's short value.
Pure functions of their arguments; :mod:`streamwatch.tui.charts` draws with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from streamwatch.analysis import fmt

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
