"""The dashboard's blocking reads, each answered as the typed message the app shows: every
query's checkpoint (read-only), one landed file's journey through every layer, the current
rows of a query's table. They run in the app's thread workers; none raises — what cannot be
read comes back as the message's error text."""

from __future__ import annotations

from typing import Any

from streamwatch.backends.base import Backend, Control
from streamwatch.errors import one_line
from streamwatch.model.runtime import RunPlan
from streamwatch.tui.messages import CheckpointsRead, JourneyRead, ResultsRead
from streamwatch.tui.views.checkpoint import timeline_of

#: the longest error text a journey shows (it wraps under the landing table; a long landing
#: path must not cut off why the file cannot be followed)
JOURNEY_ERROR_CHARS = 1_000


def read_checkpoints(plan: RunPlan) -> CheckpointsRead:
    """Every query's checkpoint and batch timeline (the sink folder from the pipeline
    definition, never guessed from names); one that is not written yet, mid-write or
    unreadable is an error text, and the scan goes on."""
    from streamwatch.checkpoint import read_checkpoint

    cps: dict[str, Any] = {}
    errors: dict[str, str] = {}
    timelines: dict[str, tuple] = {}
    for q in plan.queries:
        try:
            cp = read_checkpoint(q.checkpoint, sink=q.table or None)
            cps[q.query_name] = cp
            timelines[q.query_name] = timeline_of(cp)
        except Exception as e:  # not written yet, mid-write, unreadable: say so, keep going
            errors[q.query_name] = one_line(str(e).split(": ")[-1]) or type(e).__name__
    return CheckpointsRead(cps, errors, timelines)


def read_journey(plan: RunPlan, path: str) -> JourneyRead:
    """One landed file followed through every layer of ``plan`` (read-only), as
    ``streamwatch lineage`` prints it, or why it cannot be followed."""
    from streamwatch.analysis.lineage import LineageError, file_journey
    from streamwatch.analysis.lineage_text import journey_lines

    try:
        return JourneyRead(path, journey_lines(file_journey(plan, path, rows=True)))
    except LineageError as e:
        return JourneyRead(path, [], one_line(e, JOURNEY_ERROR_CHARS))
    except Exception as e:  # unreadable table or checkpoint: say so, never crash
        return JourneyRead(path, [], f"cannot follow: {one_line(e, JOURNEY_ERROR_CHARS)}")


def read_results(backend: Backend, query: str, limit: int = 100, table: str = "") -> ResultsRead:
    """Up to ``limit`` current rows of ``query``'s table (cells as text), or why not (a
    backend that cannot read tables, an unreadable table); with ``table`` (its path) the
    table's newest Delta commits too."""
    if not backend.supports(Control.READ_RESULTS):
        return ResultsRead(query, [], [], "this backend cannot read tables (replay?)")
    try:
        columns, rows = backend.read_results(query, limit)
        return ResultsRead(query, list(columns), [tuple(map(str, r)) for r in rows], history=_table_history(table))
    except Exception as e:
        return ResultsRead(query, [], [], one_line(e))


def _table_history(table: str, newest: int = 15) -> tuple:
    """The newest commits of a Delta table (read from ``_delta_log``; () for a Parquet or
    memory table, or when it cannot be read right now: the rows are still shown)."""
    from streamwatch.checkpoint.delta import table_history

    try:
        return tuple(table_history(table, newest)) if table else ()
    except Exception:
        return ()
