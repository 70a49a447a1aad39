"""Real-time mode (``trigger(realTime=…)``, Spark 4.1+) recognised from what Spark reports
(pure Python).

In real-time mode a "batch" is a long-running checkpoint interval (``RealTimeTrigger``'s
``batchDurationMs``, default 5 minutes): the tasks read and write records as they come for the
whole interval, then the query writes ``offsets/N`` (the end offsets are known only then —
a micro-batch writes them when it plans the batch) and ``commits/N`` right after. What shows
(observed with pyspark 4.2.0, Kafka → Kafka):

* the offsets log's ``conf`` does **not** name the trigger;
* each ``StreamingQueryProgress`` covers one interval: ``batchDuration`` ≈ the interval,
  ``durationMs.addBatch`` ≈ ``batchDuration`` even when ``numInputRows`` is 0, and a source's
  ``endOffset`` may be *past* its ``latestOffset`` (records that arrived during the interval);
* Spark reports no per-record latency in open-source 4.2's progress: the latency figures are
  the interval itself and the Kafka source's ``minOffsetsBehindLatest`` /
  ``avgOffsetsBehindLatest`` / ``maxOffsetsBehindLatest`` (records not yet read when the
  interval closed).

A query is taken to run in real-time mode when its trigger says so, or — its trigger unknown
(an event log, a ``record()`` recording) — once a progress event of its run carries what no
micro-batch can: an ``endOffset`` past ``latestOffset``. An empty
batch whose ``addBatch`` is most of its duration is *not* such a sign: a heavy micro-batch (a
Delta MERGE, a slow sink, no-data batches of a stateful query) looks just like it, and a known
trigger always wins (see :meth:`~streamwatch.analysis.dashboard.DashboardModel.real_time`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import orjson

from streamwatch.model.events import QueryProgress

RECENT = 5


def _offsets(text: str | None) -> dict[tuple[str, ...], int]:
    """Flatten a source offset JSON (Kafka: topic → partition → offset) into path → number."""
    if not text:
        return {}
    try:
        doc: Any = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    out: dict[tuple[str, ...], int] = {}
    _walk(doc, (), out)
    return out


def _walk(node: Any, path: tuple[str, ...], out: dict[tuple[str, ...], int]) -> None:
    """Put every integer leaf of ``node`` in ``out`` under its key path. A module function: a
    recursive closure refers to itself through its cell, a reference cycle per call that only
    the garbage collector frees (~1,000 a second under a 100-query flood, each one making
    the full collections that pause the dashboard come sooner)."""
    if isinstance(node, dict):
        for k, v in node.items():
            _walk(v, path + (str(k),), out)
    elif isinstance(node, int) and not isinstance(node, bool):
        out[path] = node


def end_past_latest(p: QueryProgress) -> bool:
    """True when a source's ``endOffset`` is past its ``latestOffset`` for some partition —
    impossible for a micro-batch, which plans its end at or before the latest offset."""
    for s in p.sources:
        end, latest = _offsets(s.end_offset), _offsets(s.latest_offset)
        if any(k in latest and v > latest[k] for k, v in end.items()):
            return True
    return False


def has_real_time_signs(p: QueryProgress) -> bool:
    """One progress event shows what only a real-time interval can (see the module
    docstring): a source read past the latest offset it reported."""
    return end_past_latest(p)


def looks_real_time(progress: Iterable[QueryProgress]) -> bool:
    """Some event of ``progress`` shows real-time mode (:func:`has_real_time_signs`): one is
    proof, a micro-batch never reads past the latest offset it planned against."""
    return any(has_real_time_signs(p) for p in progress)


def _metric(p: QueryProgress, name: str) -> float | None:
    vals: list[float] = []
    for s in p.sources:
        try:
            vals.append(float(s.metrics[name]))
        except (KeyError, ValueError):
            continue
    return max(vals) if vals else None


@dataclass(frozen=True, slots=True)
class RealTimeFigures:
    """What a real-time query's recent progress says: ``interval_ms`` (median batchDuration,
    ms: the checkpoint interval as run), ``last_rows`` (rows in the latest interval),
    ``rows_per_s`` (latest interval's rows / its duration, rows/s), ``behind_latest`` (the
    largest ``maxOffsetsBehindLatest`` of the latest interval's sources, records; None when
    the source does not report it), ``behind_growing`` (it rose across every one of the recent
    intervals) and ``overrun_ms`` (latest batchDuration minus the trigger's interval, ms)."""

    interval_ms: int
    last_rows: int
    rows_per_s: float
    behind_latest: float | None
    behind_growing: bool
    overrun_ms: int | None


def figures(progress: Sequence[QueryProgress], trigger_ms: int | None = None, recent: int = RECENT) -> RealTimeFigures | None:
    """:class:`RealTimeFigures` of the last ``recent`` progress events (None without any);
    ``trigger_ms`` is the trigger's interval when known (ms)."""
    last = list(progress)[-recent:]
    if not last:
        return None
    p = last[-1]
    behind = [_metric(q, "maxOffsetsBehindLatest") for q in last]
    known = [b for b in behind if b is not None]
    growing = len(known) >= 3 and len(known) == len(behind) and all(a < b for a, b in pairwise(known))
    return RealTimeFigures(
        interval_ms=int(statistics.median(q.batch_duration for q in last)),
        last_rows=p.num_input_rows,
        rows_per_s=p.num_input_rows * 1000 / p.batch_duration if p.batch_duration > 0 else 0.0,
        behind_latest=behind[-1],
        behind_growing=growing,
        overrun_ms=(p.batch_duration - trigger_ms) if trigger_ms else None,
    )
