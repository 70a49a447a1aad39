"""A :class:`~streamwatch.model.lineage.Journey` as text lines, shared by ``streamwatch
lineage`` and the dashboard's landing tab: a head line, one line per hop (batch, when it was
planned, committed or in flight, files read and written, the file's rows, time since landing)
and the end-to-end latency."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from streamwatch.model.lineage import Journey


def utc_ms(ms: int | None) -> str:
    """Epoch ms as ``YYYY-MM-DD HH:MM:SS.mmmZ`` (``?`` when unknown)."""
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def duration(ms: int | None) -> str:
    """A duration in ms as ``12.3 s`` (under 2 min) or ``4.5 min`` (``?`` when unknown)."""
    if ms is None:
        return "?"
    return f"{ms / 1000:.1f} s" if ms < 120_000 else f"{ms / 60_000:.1f} min"


def journey_lines(journey: Journey) -> list[str]:
    """The lines ``streamwatch lineage`` prints for ``journey``."""
    out = [f"{Path(journey.file).name}  (pipeline {journey.pipeline}, landing {journey.source}, "
           f"landed {utc_ms(journey.landed_ms)})"]
    for s in journey.steps:
        src = ", ".join(s.upstream) if s.upstream else "landing"
        if not s.hops:
            if s.note:
                out.append(f"  {s.query_name:<24} ← {src}: {s.note}")
            continue
        for h in s.hops:
            after = None if h.done_ms is None or journey.landed_ms is None else h.done_ms - journey.landed_ms
            wrote = (f"wrote {len(h.wrote)} file{'s' * (len(h.wrote) != 1)}" if h.wrote
                     else "memory sink" if not s.table else "wrote nothing")
            rows = f", {h.rows} rows of this file" if h.rows is not None else ""
            state = "committed" if h.committed else "IN FLIGHT (not committed)"
            if h.batch_id is None:  # the offsets that map the source log's batch to the query's are gone
                out.append(f"  {s.query_name:<24} ← {src}: batch not known (its offsets are gone), {state}, "
                           f"read {len(h.read)}")
                continue
            out.append(f"  {s.query_name:<24} ← {src}: batch {h.batch_id} planned {utc_ms(h.planned_ms)}, {state}, "
                       f"read {len(h.read)}, {wrote}{rows} (+{duration(after)})")
        if s.note:
            out.append(f"  {'':<24}   {s.note}")
    last = journey.last_step
    if last is not None:
        known = [h.batch_id for h in last.hops if h.batch_id is not None]
        out.append(f"end to end: {duration(journey.latency_ms)} (landed → {last.query_name} "
                   f"batch {max(known) if known else '?'})")
    return out
