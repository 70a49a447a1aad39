"""Stall diagnosis per query (pure Python): failed, stuck, slow, waiting for data, or ok.

* **failed** — the query terminated with an exception;
* **stuck** — the offsets log holds batch N (planned) but the commit log has no N, for longer
  than ``stuck_factor`` × the trigger interval (at least ``min_stuck_ms``), measured from the
  batch's ``batchTimestampMs`` in ``offsets/N``;
* **slow** — over the recent batches, processed rows/s is below input rows/s (the backlog
  grows);
* **waiting** — the trigger fires but no source has new data (idle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

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
) -> Diagnosis:
    """Diagnose one query from its row, its checkpoint head and the clock (``now_ms`` epoch
    ms, injectable). Never raises."""
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
        limit = max(stuck_factor * trigger_ms, min_stuck_ms)
        if waited > limit:
            return Diagnosis(
                "stuck", f"stuck: batch {head.offsets_batch} planned {waited / 1000:.0f} s ago, no commit"
            )
    if row.status == "starting":
        return Diagnosis("starting", "starting")
    samples: list[Sample] = list(row.history)[-recent:]
    busy = [s for s in samples if s.num_input_rows > 0]
    if busy:
        inp = _mean(s.input_rps for s in busy)
        proc = _mean(s.processed_rps for s in busy)
        if inp is not None and proc is not None and inp > 0 and proc < 0.95 * inp:
            return Diagnosis("slow", f"slow: {proc:,.0f} < {inp:,.0f} rows/s in")
    if row.status == "idle" or (samples and samples[-1].num_input_rows == 0):
        return Diagnosis("waiting", "waiting for data")
    return Diagnosis("ok", "ok")
