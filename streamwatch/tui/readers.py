"""The dashboard's blocking reads, each answered as the typed message the app shows: every
query's checkpoint (read-only), one landed file's journey through every layer, the current
rows of a query's table. They run in the app's thread workers; none raises — what cannot be
read comes back as the message's error text."""

from __future__ import annotations

from streamwatch.backends.base import Backend, Control
from streamwatch.errors import one_line
from streamwatch.model.checkpoint import BatchRow, Checkpoint
from streamwatch.model.deltalog import DeltaCommit
from streamwatch.model.runtime import RunPlan
from streamwatch.tui.messages import CheckpointsRead, JourneyRead, ResultsRead
from streamwatch.tui.views.checkpoint import timeline_of

#: the longest error text a journey shows (it wraps under the landing table; a long landing
#: path must not cut off why the file cannot be followed)
JOURNEY_ERROR_CHARS = 1_000


#: what the checkpoint tab says in a replay for a query whose checkpoint the recording does
#: not name (a recording holds listener events, not checkpoint locations)
NO_CHECKPOINT_IN_REPLAY = "checkpoint not known: the recording does not name it (a replay shows its events only)"


def read_checkpoints(plan: RunPlan) -> CheckpointsRead:
    """Every query's checkpoint and batch timeline (the sink folder from the pipeline
    definition, never guessed from names); one that is not written yet, mid-write or
    unreadable is an error text, and the scan goes on.

    In a replay (``plan.trigger == "replay"``) the checkpoints are another machine's: a query
    without a checkpoint location is not read at all (``""`` would be this process's
    folder), and one that is missing here says so in one line — ``checkpoint not on this
    machine: PATH (the recording was made elsewhere)`` — not as a raw file error."""
    from streamwatch.checkpoint import read_checkpoint

    replay = plan.trigger == "replay"
    cps: dict[str, Checkpoint] = {}
    errors: dict[str, str] = {}
    timelines: dict[str, tuple[BatchRow, ...]] = {}
    for q in plan.queries:
        if not q.checkpoint:
            errors[q.query_name] = NO_CHECKPOINT_IN_REPLAY if replay else "no checkpoint location known"
            continue
        try:
            cp = read_checkpoint(q.checkpoint, sink=q.table or None)
            cps[q.query_name] = cp
            timelines[q.query_name] = timeline_of(cp)
        except Exception as e:  # not written yet, mid-write, unreadable: say so, keep going
            if replay and _missing(e):
                errors[q.query_name] = f"checkpoint not on this machine: {q.checkpoint} (the recording was made elsewhere)"
            else:
                errors[q.query_name] = one_line(str(e).split(": ")[-1]) or type(e).__name__
    return CheckpointsRead(cps, errors, timelines)


def _missing(e: BaseException) -> bool:
    """``e`` says the checkpoint folder (or a file it must hold) does not exist."""
    return isinstance(e, FileNotFoundError) or str(e).rstrip().lower().endswith("no such file or directory")


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


def _table_history(table: str, newest: int = 15) -> tuple[DeltaCommit, ...]:
    """The newest commits of a Delta table (read from ``_delta_log``; () for a Parquet or
    memory table, or when it cannot be read right now: the rows are still shown)."""
    from streamwatch.checkpoint.delta import table_history

    try:
        return tuple(table_history(table, newest)) if table else ()
    except Exception:
        return ()
