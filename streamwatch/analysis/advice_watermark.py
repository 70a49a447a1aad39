"""The rule ``advise-watermark-delay`` of :mod:`streamwatch.analysis.advice` (pure over model
objects, no I/O, no Spark): the delay of the query's ``withWatermark(col, delay)`` against the
lateness its data shows, read off the progress of a recording (Spark's ``eventTime``
``min``/``max``/``watermark`` per batch, ISO strings turned to epoch ms, and
``stateOperators[].numRowsDroppedByWatermark``/``numRowsTotal``).

Definitions (all ms; a batch is a progress event with event-time stats, the last event of a
batch id kept; batches in batch-id order):

* **running max** before batch N: the largest ``eventTime.max`` of the batches before N in
  the progress given.
* **observed lateness** of batch N: running max before N − batch N's ``eventTime.min``
  (0 when negative; undefined for the first batch given). It is how far behind the newest
  event seen before it the oldest row of batch N was. **Limits**: Spark reports only each
  batch's min and max, so it is a lower bound of the lateness of that batch's latest row
  (rows of the same batch are not ordered against one another, and batches before the
  recording are not seen); a later run may bring later data. *Observed max lateness* is its
  max over the batches.
* **inferred delay**: the delay is not in the checkpoint (``offsets/N`` holds only
  ``batchWatermarkMs``) nor in the listener's events. Spark sets the watermark of batch N to
  at least (max event time of each earlier batch − delay) (``WatermarkTracker``), so
  running max before N − batch N's ``eventTime.watermark`` ≤ delay for every N; the max of
  that over the batches is a lower bound, equal to the delay once the watermark has advanced
  (one ``withWatermark``; with several, e.g. a stream-stream join, it bounds the effective
  delay of the global watermark, ``spark.sql.streaming.multipleWatermarkPolicy`` min).
  A delay given by the caller (``delay_ms``) is used instead.

Verdicts: (a) rows dropped by the watermark (the sum of ``numRowsDroppedByWatermark`` over
the batches given > 0; a stateful operator drops a row behind the previous batch's watermark,
``eventTimeWatermarkForLateEvents``, and an aggregation counts its rows after partial
aggregation, so the count is of state rows, not input rows): the data is later than the delay — raise it to the observed max
lateness of the batches that dropped rows × :data:`MARGIN` (rounded up to
:data:`DELAY_LADDER_MS`); ``likely`` (the lateness is a lower bound). (b) no drops and the
observed max lateness × :data:`MARGIN` (at least :data:`MIN_DELAY_MS`, rounded up) at most
half the delay: the state keeps each window or key longer than the data needs — lower the
delay to that; ``likely``. Else ``keep`` (``measured``), or ``unknown`` when the progress
has no event-time stats with a watermark. ``target`` is a delay in ms.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from streamwatch.analysis.advice import Advice, Confidence, Evidence, Verdict
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.events import QueryProgress
from streamwatch.model.sparkjson import iso_to_epoch_ms

WATERMARK_CODE = "advise-watermark-delay"
#: The delay advised is the observed max lateness times this (lateness seen is a lower bound).
MARGIN = 1.5
#: The smallest delay advised (ms).
MIN_DELAY_MS = 1_000
#: A delay is judged too long when the delay advised is at most this share of it.
LONG_SHARE = 0.5
#: Delays advised (ms): round numbers a user would write in ``withWatermark``.
DELAY_LADDER_MS = (1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000,
                   1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000)


def delay_text(ms: int) -> str:
    """``ms`` as a ``withWatermark`` delay: ``10 seconds``, ``2 minutes``, ``1 hour``, ``500 milliseconds``."""
    for unit, size in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1_000)):
        if ms >= size and ms % size == 0:
            n = ms // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{ms} milliseconds"


def _ladder_up(ms: float) -> int:
    return next((x for x in DELAY_LADDER_MS if x >= ms), math.ceil(ms / 1_000) * 1_000)


@dataclass(frozen=True, slots=True)
class EventTimeBatch:
    """One batch's event-time account from its progress (epoch ms): ``min_ms``/``max_ms`` of
    the event times it read (Spark's ``eventTime.min``/``max``), the ``watermark_ms`` it ran
    with (None before Spark has one), ``dropped`` (Σ ``numRowsDroppedByWatermark`` over its
    state operators), ``state_rows`` (Σ ``numRowsTotal``)."""

    batch_id: int
    min_ms: int
    max_ms: int
    watermark_ms: int | None
    dropped: int
    state_rows: int


@dataclass(frozen=True, slots=True)
class Lateness:
    """What the batches show (ms; see the module docstring): ``max_lateness_ms`` the observed
    max lateness (None with fewer than two batches), ``dropped_lateness_ms`` its max over the
    batches that dropped rows, ``delay_floor_ms`` the inferred delay (None before a
    watermark), ``headroom_ms`` the smallest ``eventTime.min`` − watermark of a batch run with
    a watermark, ``dropped`` the rows dropped by the watermark."""

    batches: int
    max_lateness_ms: int | None
    dropped_lateness_ms: int | None
    delay_floor_ms: int | None
    headroom_ms: int | None
    dropped: int


def event_time_batches(progress: Sequence[QueryProgress]) -> tuple[EventTimeBatch, ...]:
    """The batches of ``progress`` that read rows with an event time (``eventTime`` has
    ``min`` and ``max``), the last event of each batch id, in batch-id order. A query
    without ``withWatermark`` reports no ``eventTime.min``/``max``: the result is empty."""
    last: dict[int, QueryProgress] = {}
    for p in progress:
        last[p.batch_id] = p
    out = []
    for b in sorted(last):
        p = last[b]
        lo, hi = iso_to_epoch_ms(p.event_time.get("min")), iso_to_epoch_ms(p.event_time.get("max"))
        if lo is None or hi is None:
            continue
        out.append(EventTimeBatch(b, lo, hi, p.watermark_ms,
                                  sum(o.num_rows_dropped_by_watermark for o in p.state_operators),
                                  sum(o.num_rows_total for o in p.state_operators)))
    return tuple(out)


def lateness(batches: Sequence[EventTimeBatch]) -> Lateness:
    """The observed lateness, inferred delay and drops of ``batches`` (in batch-id order)."""
    late: list[int] = []
    dropped_late: list[int] = []
    floors: list[int] = []
    heads: list[int] = []
    running: int | None = None
    for b in batches:
        if running is not None:
            x = max(0, running - b.min_ms)
            late.append(x)
            if b.dropped:
                dropped_late.append(x)
            if b.watermark_ms is not None:
                floors.append(running - b.watermark_ms)
        if b.watermark_ms is not None:
            heads.append(b.min_ms - b.watermark_ms)
        running = b.max_ms if running is None else max(running, b.max_ms)
    return Lateness(len(batches), max(late, default=None), max(dropped_late, default=None),
                    max(floors, default=None), min(heads, default=None), sum(b.dropped for b in batches))


def watermark_delay(progress: Sequence[QueryProgress], cp: Checkpoint | None = None,
                    delay_ms: int | None = None) -> Advice:
    """``advise-watermark-delay`` (see the module docstring). ``progress`` the query's progress
    events (a recording or event log; none: ``unknown``), ``cp`` its checkpoint (the last
    ``offsets/N`` ``batchWatermarkMs`` is shown), ``delay_ms`` the delay when the caller knows
    it (else inferred). ``target`` is the advised delay in ms."""
    code, setting = WATERMARK_CODE, "watermark delay (withWatermark(col, delay))"
    ev: tuple[Evidence, ...] = ()
    if cp is not None and cp.offsets and cp.offsets[-1].watermark_ms:
        ev += (Evidence("watermark", cp.offsets[-1].watermark_ms, "epoch ms",
                        f"offsets/{cp.offsets[-1].batch_id} batchWatermarkMs"),)
    batches = event_time_batches(progress)
    seen = lateness(batches)
    if len(batches) < 2 or seen.max_lateness_ms is None or (seen.delay_floor_ms is None and delay_ms is None):
        why = ("no progress given" if not progress else
               f"{len(batches)} batches with event-time stats and a watermark in the progress")
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"observed lateness unknown: {why}", ev,
                      needs="the progress of a query with withWatermark over at least two batches after the "
                            "watermark is set: pass --recording (a streamwatch.record recording or event log)")
    ev += _evidence(seen, delay_ms)
    delay = delay_ms if delay_ms is not None else seen.delay_floor_ms
    assert delay is not None
    if seen.dropped:
        return _raise(code, setting, ev, seen, delay)
    target = _ladder_up(max(MIN_DELAY_MS, MARGIN * seen.max_lateness_ms))
    if target <= LONG_SHARE * delay:
        return _lower(code, setting, ev, seen, delay, target)
    return Advice(code, setting, Verdict.KEEP, Confidence.MEASURED,
                  f"no rows dropped by the watermark over {seen.batches} batches, and the delay ({delay:,} ms) is "
                  f"less than {1 / LONG_SHARE:.0f}× the {target:,} ms the observed max lateness "
                  f"({seen.max_lateness_ms:,} ms) needs with a {MARGIN}× margin", ev)


def _evidence(seen: Lateness, delay_ms: int | None) -> tuple[Evidence, ...]:
    assert seen.max_lateness_ms is not None
    ev: tuple[Evidence, ...] = (
        Evidence("rows dropped by the watermark", seen.dropped, "rows",
                 f"Σ stateOperators[].numRowsDroppedByWatermark over {seen.batches} batches of the progress"),
        Evidence("observed max lateness", seen.max_lateness_ms, "ms",
                 "max over batches of (max eventTime.max of the earlier batches − the batch's eventTime.min); "
                 "a lower bound"))
    if delay_ms is not None:
        ev += (Evidence("watermark delay", delay_ms, "ms", "given"),)
    elif seen.delay_floor_ms is not None:
        ev += (Evidence("watermark delay (inferred)", seen.delay_floor_ms, "ms",
                        "max over batches of (max eventTime.max of the earlier batches − the batch's "
                        "eventTime.watermark); a lower bound, the delay once the watermark advanced"),)
    if seen.headroom_ms is not None:
        ev += (Evidence("smallest event time above the watermark", seen.headroom_ms, "ms",
                        "min over batches of eventTime.min − eventTime.watermark"),)
    return ev


def _raise(code: str, setting: str, ev: tuple[Evidence, ...], seen: Lateness, delay: int) -> Advice:
    """Verdict (a): rows dropped by the watermark: they came later than the delay allows."""
    late = seen.dropped_lateness_ms if seen.dropped_lateness_ms is not None else seen.max_lateness_ms
    assert late is not None
    ev += (Evidence("observed lateness of the batches that dropped rows", late, "ms",
                    "max over those batches of (max eventTime.max before − eventTime.min); a lower bound"),)
    target = _ladder_up(max(MIN_DELAY_MS, MARGIN * late, delay + 1))
    return Advice(code, setting, Verdict.CHANGE, Confidence.LIKELY,
                  f"{seen.dropped:,} rows dropped by the watermark over {seen.batches} batches: the oldest row of a "
                  f"batch that dropped rows was at least {late:,} ms behind the newest event before it, against a "
                  f"delay of {delay:,} ms", ev,
                  f"withWatermark(col, \"{delay_text(target)}\") ({MARGIN}× the observed lateness, rounded up); "
                  "it applies on restart, the checkpoint kept",
                  "rows up to that late are aggregated instead of dropped; the state holds each window or key "
                  "longer (more state rows) and, in append mode, results are emitted later", target=target)


def _lower(code: str, setting: str, ev: tuple[Evidence, ...], seen: Lateness, delay: int, target: int) -> Advice:
    """Verdict (b): no drops and the data far less late than the delay: state held too long."""
    return Advice(code, setting, Verdict.CHANGE, Confidence.LIKELY,
                  f"no rows dropped over {seen.batches} batches and the data was at most {seen.max_lateness_ms:,} ms "
                  f"late (observed) against a delay of {delay:,} ms: the state keeps windows and keys longer than "
                  "the data needs", ev,
                  f"withWatermark(col, \"{delay_text(target)}\") ({MARGIN}× the observed max lateness, rounded up); "
                  "it applies on restart, the checkpoint kept",
                  "fewer state rows and bytes, and in append mode each window is emitted sooner; rows later than "
                  "the new delay would be dropped (measured both ways in docs/advise.md)", target=target)
