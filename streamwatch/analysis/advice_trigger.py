"""The rule ``advise-trigger-interval`` of :mod:`streamwatch.analysis.advice` (pure over model objects, no
I/O, no Spark): the trigger the query runs with (given by the user: neither the
checkpoint nor ``QueryStartedEvent`` records it; without it the verdict is ``unknown``, the
spacing of batch starts given as evidence only) against its recent batches (the last
:data:`RECENT_BATCHES`; batch 0, the JVM's warm-up, left out of the median batch time when
later ones were measured). (b) **idle polling**: a processing-time interval of at most
:data:`IDLE_MAX_INTERVAL_MS` (or the default trigger, which polls every
:data:`POLLING_DELAY_MS`, Spark's ``spark.sql.streaming.pollingDelay``, while no data
arrives) on a query that waits for the next batch at least its median batch time and
:data:`IDLE_GAP_FACTOR` polls (it waits for data half of the time or more): every idle
trigger asks each source for its latest offset (a file source lists its folder) — measured
at 100 ms on an idle file source: 3.5% of a core of driver CPU above the idle JVM, the
default trigger 11% (``bench/advise_trigger_bench.py``, docs/advise.md); the cost goes with
the trigger rate, so 1 s and above costs ≲ 0.5%. Advises the spacing of
batch starts, within :data:`IDLE_TARGET_MIN_MS`–:data:`IDLE_TARGET_MAX_MS`; ``measured``
when the recording holds Spark's ``QueryIdleEvent``s (the query ran through the wait),
else ``likely`` (the wait may be time the query was stopped). (a) **overrun**: the median
batch time (``triggerExecution`` or commit time) above the processing-time interval while
the query does not wait between batches: batches run back to back, the interval is not in
effect; advises :data:`BEHIND_HEADROOM` × the median batch time (rounded up to
:data:`INTERVAL_LADDER_MS`). ``target`` is an interval in ms.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from streamwatch.analysis.advice import Advice, BatchDuration, Confidence, Evidence, Verdict, start_spacing_ms
from streamwatch.analysis.triggers import Trigger
from streamwatch.model.checkpoint import Checkpoint

TRIGGER_CODE = "advise-trigger-interval"
#: Batches judged by the trigger rule: the most recent this many.
RECENT_BATCHES = 10
#: An interval (or the default trigger's polling delay) at or below this is judged for idle polling (ms).
IDLE_MAX_INTERVAL_MS = 1_000
#: A query is judged idle when its batches start at least this many times their median batch
#: time (and interval) apart: it waits for data at least half of the time.
IDLE_GAP_FACTOR = 2
#: Spark's ``spark.sql.streaming.pollingDelay`` default: the default trigger's wait between idle triggers (ms).
POLLING_DELAY_MS = 10
#: The interval advised after batches overran theirs: this many times the median batch time.
BEHIND_HEADROOM = 1.5
#: The advised idle interval is the spacing of batch starts, kept within these bounds (ms).
IDLE_TARGET_MIN_MS = 2_000
IDLE_TARGET_MAX_MS = 60_000
#: Intervals advised (ms): round numbers a user would write.
INTERVAL_LADDER_MS = (500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000)


def _ladder_up(ms: float) -> int:
    """The smallest interval of :data:`INTERVAL_LADDER_MS` at or above ``ms`` (its last above it)."""
    return next((x for x in INTERVAL_LADDER_MS if x >= ms), INTERVAL_LADDER_MS[-1])


def _ladder_down(ms: float) -> int:
    """The largest interval of :data:`INTERVAL_LADDER_MS` at or below ``ms`` (its first below it)."""
    return next((x for x in reversed(INTERVAL_LADDER_MS) if x <= ms), INTERVAL_LADDER_MS[0])


def interval_text(ms: int) -> str:
    """``ms`` as a trigger interval spec: ``500ms``, ``2s``, ``1m`` (the grammar of
    :mod:`streamwatch.analysis.triggers`)."""
    if ms % 60_000 == 0:
        return f"{ms // 60_000}m"
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


@dataclass(frozen=True, slots=True)
class _Pace:
    """How the recent batches ran (ms, None when not measured): ``batch_ms`` the median batch
    time (batch 0 left out when later ones were measured: it carries the JVM's warm-up),
    ``spacing_ms`` the median spacing of batch starts, ``wait_ms`` the median wait from a
    batch's end to the next batch's start (``offsets/N+1`` ``batchTimestampMs`` − ``offsets/N``
    ``batchTimestampMs`` − batch N's time), and the ``evidence`` for each."""

    batch_ms: int | None
    spacing_ms: int | None
    wait_ms: int | None
    evidence: tuple[Evidence, ...]


def _pace(cp: Checkpoint | None, durations: Sequence[BatchDuration]) -> _Pace:
    by_id = {d.batch_id: d for d in durations}
    ids = sorted(by_id)
    judged = (ids[1:] if len(ids) > 1 and ids[0] == 0 else ids)[-RECENT_BATCHES:]
    ev: tuple[Evidence, ...] = ()
    med = int(statistics.median(by_id[b].ms for b in judged)) if judged else None
    if med is not None:
        ev += (Evidence("median batch time", med, "ms", f"last {len(judged)} batches, {by_id[judged[0]].source}"),)
    spacing = start_spacing_ms(cp) if cp is not None else None
    if spacing is not None:
        ev += (Evidence("observed spacing of batch starts", spacing, "ms",
                        "median gap of offsets/N batchTimestampMs, recent batches"),)
    planned = {e.batch_id: e.timestamp_ms for e in cp.offsets if e.timestamp_ms is not None} if cp is not None else {}
    waits = [max(0, nxt - planned[b] - by_id[b].ms) for b in ids[-RECENT_BATCHES:]
             if b in planned and (nxt := planned.get(b + 1)) is not None]
    wait = int(statistics.median(waits)) if waits else None
    if wait is not None:
        ev += (Evidence("median wait for the next batch", wait, "ms",
                        f"{len(waits)} batches: offsets/N+1 batchTimestampMs − offsets/N batchTimestampMs − batch time"),)
    return _Pace(med, spacing, wait, ev)


def trigger_interval(trigger: Trigger | None, cp: Checkpoint | None, durations: Sequence[BatchDuration],
                     idle_events: int | None = None, trigger_source: str = "--trigger") -> Advice:
    """``advise-trigger-interval`` (see the module docstring). ``trigger`` is the one the query
    runs with (``--trigger``: neither the checkpoint nor the listener's events record it; None:
    unknown); ``durations`` the batch times measured (the last :data:`RECENT_BATCHES` are
    judged); ``idle_events`` the ``QueryIdleEvent``s of the recording (None without one);
    ``trigger_source`` where the trigger came from (the evidence names it). ``target`` is the
    advised interval in ms."""
    code, setting = TRIGGER_CODE, "trigger (DataStreamWriter.trigger)"
    pace = _pace(cp, durations)
    ev = pace.evidence
    if idle_events is not None:
        ev += (Evidence("idle triggers reported", idle_events, "QueryIdleEvents",
                        "the recording (Spark posts at most one per spark.sql.streaming.noDataProgressEventInterval, "
                        "10 s by default)"),)
    if trigger is None:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      "the trigger is unknown: neither the checkpoint nor the listener's events record it", ev,
                      needs="the trigger the query runs with: pass --trigger (e.g. --trigger 5s)")
    if trigger.kind not in ("processingTime", "default"):
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"trigger {trigger.spec}: the rule judges processing-time and default triggers only", ev,
                      needs="a query run with a processing-time trigger or the default one")
    interval = trigger.interval_ms or 0
    poll = interval or POLLING_DELAY_MS
    ev = (Evidence("trigger interval", interval, "ms", f"{trigger_source} {trigger.spec}"), *ev)
    med, wait = pace.batch_ms, pace.wait_ms
    # waiting for data at least half of the time, polled at least every IDLE_MAX_INTERVAL_MS
    waiting = wait is not None and wait >= max(med or 0, IDLE_GAP_FACTOR * poll)
    if waiting and poll <= IDLE_MAX_INTERVAL_MS and pace.spacing_ms is not None:
        assert wait is not None
        return _idle(code, setting, ev, poll, pace.spacing_ms, wait, trigger, idle_events)
    if med is not None and interval and med > interval and (wait is None or wait < med):
        return _behind(code, setting, ev, interval, med)
    if med is None and wait is None:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"trigger {trigger.spec}; no batch time nor batch spacing measured", ev,
                      needs="at least two committed batches (or --recording with the query's progress)")
    return Advice(code, setting, Verdict.KEEP, Confidence.MEASURED if med is not None else Confidence.LIKELY,
                  f"trigger {trigger.spec}: the batches do not overrun the interval back to back, and no interval "
                  f"of {interval_text(IDLE_MAX_INTERVAL_MS)} or less polls an idle source", ev)


def _behind(code: str, setting: str, ev: tuple[Evidence, ...], interval: int, med: int) -> Advice:
    """Verdict (a): the median batch time exceeds the processing-time interval, batches back to back."""
    target = _ladder_up(BEHIND_HEADROOM * med)
    return Advice(code, setting, Verdict.CHANGE, Confidence.MEASURED,
                  f"batches take {med:,} ms (median) against a {interval:,} ms interval: they run back to back, "
                  "the interval is not in effect", ev,
                  f"trigger(processingTime=\"{interval_text(target)}\") ({BEHIND_HEADROOM}× the median batch time), "
                  "or more cores so that a batch fits in the interval; it applies on restart, the checkpoint kept",
                  f"batches start on the {interval_text(target)} interval instead of back to back: the same data "
                  "in fewer, bigger batches, so less CPU for the same rows, and results later (each row waits for "
                  "its trigger); measured both ways in docs/advise.md", target=target)


def _idle(code: str, setting: str, ev: tuple[Evidence, ...], poll: int, spacing: int, wait: int,
          trigger: Trigger, idle_events: int | None) -> Advice:
    """Verdict (b): a tiny interval (or the default trigger's polling) on a mostly idle source."""
    target = min(IDLE_TARGET_MAX_MS, max(IDLE_TARGET_MIN_MS, _ladder_down(spacing)))
    what = ("the default trigger polls the sources every "
            f"{POLLING_DELAY_MS} ms (spark.sql.streaming.pollingDelay) while no data arrives"
            if trigger.kind == "default" else f"a {poll:,} ms interval")
    # the wait is measured between batches; only Spark's idle events say the query ran through it
    sure = Confidence.MEASURED if idle_events else Confidence.LIKELY
    return Advice(code, setting, Verdict.CHANGE, sure,
                  f"{what}; a batch starts every {spacing:,} ms and waits {wait:,} ms for the next (medians): "
                  f"about {wait / poll:,.0f} triggers find no data for every one that does", ev,
                  f"trigger(processingTime=\"{interval_text(target)}\") (the spacing of batch starts, within "
                  f"{interval_text(IDLE_TARGET_MIN_MS)}–{interval_text(IDLE_TARGET_MAX_MS)}), or "
                  "trigger(availableNow=True) run on a schedule when data lands rarely; it applies on restart, "
                  "the checkpoint kept",
                  f"{60_000 // poll:,} → {max(1, 60_000 // target):,} triggers a minute: each idle trigger asks every "
                  "source for its latest offset (a file source lists its folder), so the driver's CPU falls "
                  f"(measured: docs/advise.md); new data waits up to {interval_text(target)} for its trigger",
                  target=target)
