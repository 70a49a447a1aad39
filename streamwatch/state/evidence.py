"""State growth evidence from a query's progress reports: ``stateOperators[].numRowsTotal``,
``numRowsRemoved`` and ``numRowsDroppedByWatermark`` per batch, with the batch's watermark
(``eventTime.watermark``), read from a streamwatch recording (JSONL) or a Spark event log
(``QueryProgressEvent`` lines) — the metrics ``StateOperatorProgress`` reports.

The state files show how many rows the state holds; the progress reports also show whether
anything is ever evicted. A stateful operator whose ``numRowsRemoved`` stays ≈ 0 while
its rows rise is growing, whether or not a watermark advances (an advancing watermark that
evicts nothing is the tell-tale of a leak: a dropDuplicates key without the event-time
column, a ``complete``-mode aggregation); rows that level off while ``numRowsRemoved`` follows
the watermark are bounded.

Operators are matched by position: ``stateOperators[i]`` is the state operator with
operator id ``i`` (Spark assigns both in plan order). Reports of other queries than the
checkpoint's (``id`` ≠ the checkpoint's ``metadata`` id) are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from streamwatch.model.events import QueryProgress

#: Removals below this share of the rows added over the reports count as "≈ 0".
REMOVED_SHARE = 0.01
MIN_REPORTS = 3


@dataclass(frozen=True, slots=True)
class MetricPoint:
    """One batch's ``stateOperators[i]``: ``rows_total`` (rows in the state after the batch),
    ``rows_removed`` and ``rows_dropped`` (late input rows dropped by the watermark) in that
    batch, ``watermark_ms`` (epoch ms; None without a watermark)."""

    batch_id: int
    rows_total: int
    rows_removed: int
    rows_dropped: int
    watermark_ms: int | None


@dataclass(frozen=True, slots=True)
class MetricsEvidence:
    """What the progress reports say of one state operator: ``verdict`` ``growing``,
    ``bounded`` or None (fewer than :data:`MIN_REPORTS` reports), ``reason`` (one line),
    ``points`` per batch, totals of removed and dropped rows, whether the watermark moved."""

    operator_id: int
    operator_name: str
    verdict: str | None
    reason: str
    points: tuple[MetricPoint, ...]
    removed: int
    dropped: int
    watermark_moved: bool


def slope(xs: list[int], ys: list[int]) -> float:
    """Least-squares slope of ``ys`` over ``xs`` (units of y per unit of x; 0.0 for fewer
    than two points or when every x is the same)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def progress_of(events: Iterable[object], query_id: str | None) -> list[QueryProgress]:
    """The :class:`QueryProgress` reports of ``query_id`` (all when None) among ``events``,
    one per batch id (the last report wins), in batch order."""
    out: dict[int, QueryProgress] = {}
    for e in events:
        if isinstance(e, QueryProgress) and (query_id is None or e.id == query_id):
            out[e.batch_id] = e
    return [out[b] for b in sorted(out)]


def classify(operator_id: int, reports: list[QueryProgress]) -> MetricsEvidence | None:
    """The evidence for state operator ``operator_id`` (``stateOperators[operator_id]``) in
    ``reports`` (see module docstring); None when no report has that operator."""
    pts = []
    name = ""
    for r in reports:
        if operator_id < len(r.state_operators):
            s = r.state_operators[operator_id]
            name = s.operator_name
            pts.append(MetricPoint(r.batch_id, s.num_rows_total, s.num_rows_removed,
                                   s.num_rows_dropped_by_watermark, r.watermark_ms))
    if not pts:
        return None
    removed = sum(p.rows_removed for p in pts)
    dropped = sum(p.rows_dropped for p in pts)
    marks = [p.watermark_ms for p in pts if p.watermark_ms is not None]
    moved = len(set(marks)) > 1
    if len(pts) < MIN_REPORTS:
        return MetricsEvidence(operator_id, name, None, f"{len(pts)} progress reports (need {MIN_REPORTS})",
                               tuple(pts), removed, dropped, moved)
    xs = [p.batch_id for p in pts]
    ys = [p.rows_total for p in pts]
    half = len(pts) // 2
    late = slope(xs[half:], ys[half:])
    added = max(0, ys[-1] - ys[0]) + removed
    rising = ys[-1] > ys[0] and late > 0
    few_removed = removed <= REMOVED_SHARE * added
    if rising and few_removed:
        if moved:
            why = (f"numRowsRemoved stayed {'0' if removed == 0 else f'≈ 0 ({removed})'} while the watermark "
                   f"advanced over batches {xs[0]}–{xs[-1]}: nothing is ever evicted")
        elif marks:
            why = f"numRowsRemoved stayed {removed} and the watermark never advanced"
        else:
            why = f"numRowsRemoved stayed {removed} and the query has no watermark"
        return MetricsEvidence(operator_id, name, "growing", why, tuple(pts), removed, dropped, moved)
    if removed > 0:
        why = f"{removed} rows removed over batches {xs[0]}–{xs[-1]}" + (" as the watermark advanced" if moved else "")
    else:
        why = f"numRowsTotal level at {ys[-1]} over batches {xs[0]}–{xs[-1]}"
    return MetricsEvidence(operator_id, name, "bounded", why, tuple(pts), removed, dropped, moved)
