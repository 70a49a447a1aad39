"""Stall diagnosis per query (pure Python): failed, stuck, slow, waiting for data, or ok.

* **failed** — the query terminated with an exception;
* **stuck** — the offsets log holds batch N (planned) but the commit log has no N, for longer
  than ``stuck_factor`` × the trigger interval (at least ``min_stuck_ms``), measured from the
  batch's ``batchTimestampMs`` in ``offsets/N``;
* **slow** — over the recent batches, processed rows/s is below input rows/s (the backlog
  grows);
* **waiting** — the trigger fires but no source has new data (idle).

Real-time mode (``real_time=True``, see :mod:`streamwatch.analysis.realtime`): a batch is a
long-running checkpoint interval, ``trigger_ms`` is that interval, and progress comes once per
interval. The rules become:

* **stuck** — offsets/N without commits/N for longer than ``2 × interval + min_stuck_ms``
  (Spark writes ``offsets/N`` of a real-time batch when the interval ends, so a missing
  commit is late only past the next interval);
* **slow** — the source falls behind: its ``maxOffsetsBehindLatest`` rose across each of the
  recent intervals, or the latest interval overran the trigger's by more than half (rows/s in
  vs. processed is no measure here: both are rows per interval);
* otherwise **ok** / **waiting** with the interval's figures (rows in the last interval,
  records behind latest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from streamwatch.analysis import realtime
from streamwatch.analysis.board import QueryRow, Sample


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """``code`` is one of ok, starting, waiting, slow, stuck, failed, stopped; ``text`` a short
    explanation for the screen."""

    code: str
    text: str


@dataclass(frozen=True, slots=True)
class CheckpointHead:
    """The latest planned batch (``offsets/N``, with its batchTimestampMs in epoch ms) and
    the latest committed batch (``commits/N``) of one checkpoint."""

    offsets_batch: int | None
    commit_batch: int | None
    offsets_timestamp_ms: int | None = None


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def diagnose(
    row: QueryRow,
    head: CheckpointHead | None,
    trigger_ms: int,
    now_ms: int,
    stuck_factor: int = 5,
    min_stuck_ms: int = 10_000,
    recent: int = 5,
    real_time: bool = False,
) -> Diagnosis:
    """Diagnose one query from its row, its checkpoint head and the clock (``now_ms`` epoch
    ms, injectable); ``real_time`` switches to the real-time rules (module docstring).
    Never raises."""
    if row.status == "failed":
        first = (row.exception or "").strip().splitlines()[:1]
        batch = f" in batch {row.failed_batch_id}" if row.failed_batch_id is not None else ""
        return Diagnosis("failed", f"failed{batch}: {first[0] if first else 'unknown error'}")
    if row.status == "stopped":
        return Diagnosis("stopped", "stopped")
    if row.status in ("queued", "not run"):
        return Diagnosis("waiting" if row.status == "queued" else "stopped", row.note or row.status)
    if head is not None and head.offsets_batch is not None and (
        head.commit_batch is None or head.offsets_batch > head.commit_batch
    ) and head.offsets_timestamp_ms is not None and row.status in ("active", "idle", "starting"):
        waited = now_ms - head.offsets_timestamp_ms
        limit = 2 * trigger_ms + min_stuck_ms if real_time else max(stuck_factor * trigger_ms, min_stuck_ms)
        if waited > limit:
            return Diagnosis(
                "stuck", f"stuck: batch {head.offsets_batch} planned {waited / 1000:.0f} s ago, no commit"
            )
    if row.status == "starting":
        return Diagnosis("starting", "starting")
    if real_time:
        return _diagnose_real_time(row, trigger_ms)
    samples: list[Sample] = row.history[-recent:]
    busy = [s for s in samples if s.num_input_rows > 0]
    if busy:
        inp = _mean(s.input_rps for s in busy)
        proc = _mean(s.processed_rps for s in busy)
        if inp is not None and proc is not None and inp > 0 and proc < 0.95 * inp:
            return Diagnosis("slow", f"slow: {proc:,.0f} < {inp:,.0f} rows/s in")
    if row.status == "idle" or (samples and samples[-1].num_input_rows == 0):
        return Diagnosis("waiting", "waiting for data")
    return Diagnosis("ok", "ok")


def _diagnose_real_time(row: QueryRow, trigger_ms: int) -> Diagnosis:
    figs = realtime.figures(list(row.recent), trigger_ms)
    if figs is None:
        return Diagnosis("waiting", "real-time: first interval running")
    behind = f", {figs.behind_latest:,.0f} records behind latest" if figs.behind_latest is not None else ""
    if figs.behind_growing:
        return Diagnosis("slow", f"real-time: falling behind{behind} (growing)")
    if figs.overrun_ms is not None and figs.overrun_ms > trigger_ms // 2:
        return Diagnosis("slow", f"real-time: interval overran by {figs.overrun_ms / 1000:,.1f} s{behind}")
    interval = f"{figs.interval_ms / 1000:,.0f} s interval"
    if figs.last_rows == 0:
        return Diagnosis("waiting", f"real-time: waiting for data ({interval})")
    return Diagnosis("ok", f"real-time: {figs.last_rows:,} rows in last {interval}{behind}")
