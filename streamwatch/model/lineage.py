"""One landed file's journey through a medallion pipeline, as the checkpoints and sink logs
tell it (built by :func:`streamwatch.analysis.lineage.file_journey`).

A *hop* is one micro-batch of one query that carried the file's data: the landing file itself
(bronze), or part files an upstream batch wrote (silver reads the bronze part files of the
bronze batch that read the file, …). Times are epoch milliseconds; ``*_ms`` durations are ms.
Paths are URI text as Spark wrote them in its logs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Hop:
    """One micro-batch that read the file's data: ``batch_id`` of query ``query_name`` (None
    when not known: the offsets that map the file source's own log batch to the query's
    batch are gone — then ``planned_ms``/``written_ms`` are None and ``wrote`` empty);
    ``planned_ms`` (``offsets/N`` batchTimestampMs), ``committed`` (``commits/N`` exists),
    ``written_ms`` (latest modification time of the sink files the batch wrote; None for
    Spark's memory sink or a batch that wrote nothing), ``read`` (the files carrying the data
    that this batch read), ``wrote`` (the sink files it wrote; Delta: ``delta vN``), and
    ``rows`` (rows in ``wrote`` whose source-file column names the file; None when the data
    does not tell: no such column, memory sink, unreadable)."""

    query_name: str
    batch_id: int | None
    planned_ms: int | None
    committed: bool
    written_ms: int | None
    read: tuple[str, ...] = ()
    wrote: tuple[str, ...] = ()
    rows: int | None = None

    @property
    def done_ms(self) -> int | None:
        """When the hop's output was there: ``written_ms``, else ``planned_ms``."""
        return self.written_ms if self.written_ms is not None else self.planned_ms


@dataclass(frozen=True, slots=True)
class Step:
    """What one query of the pipeline did with the file's data: its ``hops`` (several when
    the data spread over batches), the ``upstream`` query names it came from, its ``table``
    folder ("" for the memory sink), and ``note`` when it did not (yet) read it (``"not read
    yet"``, ``"no checkpoint"`` …) or a fact worth saying (``"malformed rows → quarantine"``)."""

    query_name: str
    layer: str
    table: str
    upstream: tuple[str, ...]
    hops: tuple[Hop, ...] = ()
    note: str | None = None

    @property
    def reached(self) -> bool:
        return bool(self.hops)


@dataclass(frozen=True, slots=True)
class Journey:
    """``file`` (its path as the file source logged it) landed at ``landed_ms`` (the file's
    modification time from the source log) into landing ``source``; ``steps`` in the DAG's
    topological order. ``end_ms``/``latency_ms``: when the last reached step's output was there
    and how long after landing (None when only the landing is known)."""

    pipeline: str
    file: str
    source: str
    landed_ms: int | None
    steps: tuple[Step, ...]

    @property
    def last_step(self) -> Step | None:
        reached = [s for s in self.steps if s.reached]
        return max(reached, key=lambda s: max((h.done_ms or 0) for h in s.hops)) if reached else None

    @property
    def end_ms(self) -> int | None:
        times = [h.done_ms for s in self.steps for h in s.hops if h.done_ms is not None]
        return max(times) if times else None

    @property
    def latency_ms(self) -> int | None:
        end = self.end_ms
        return None if end is None or self.landed_ms is None else end - self.landed_ms
