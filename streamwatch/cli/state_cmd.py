"""``streamwatch state CHECKPOINT``: the rows in a checkpoint's state stores as of a batch,
decoded without a JVM (HDFS-backed and RocksDB stores, UnsafeRow and Avro, transformWithState
state variables), and ``--audit``: bounded vs growing state per operator, sharpened by a
recording's or event log's progress reports (``--recording``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from streamwatch.cli.state_audit_cmd import run_audit
from streamwatch.cli.state_output import print_tables, rows_json, write_csv_stream, write_json_stream
from streamwatch.errors import ExitCode, Unreadable, UsageError

if TYPE_CHECKING:  # the readers are imported when the command runs, not for --help
    from streamwatch.model.findings import Finding
    from streamwatch.state.model import StateTable
    from streamwatch.state.scan import StateStream

EPILOG = """\b
Examples:
  streamwatch state ./streamwatch-workspace/checkpoints/flights/gold
  streamwatch state CP --operator 0 --batch 12      state after batch 12 (version 13)
  streamwatch state CP --store left                 a stream-stream join's left side
  streamwatch state CP --store left-keyToNumValues  one of the join's four raw stores
  streamwatch state CP --partition 3 --limit 50     one partition, first 50 rows
  streamwatch state CP --operator 0 --csv > state.csv
  streamwatch state CP --json | jq '.tables[0].partitions'
  streamwatch state CP --var seen                   a transformWithState list state
  streamwatch state CP --var timers                 its registered timers
  streamwatch state CP --key '{"key": "user42"}'   one key's value (reads one partition)
  streamwatch state CP --key '{"key": "k1", "window": {"start": "2026-01-01T00:00:00Z",
      "end": "2026-01-01T00:00:10Z"}}' --from-batch 0 --to-batch 9   its changes per batch
  streamwatch state CP --audit                      bounded or growing, per operator
  streamwatch state CP --audit --recording events.jsonl   …with numRowsRemoved per batch

Timestamps print as UTC text, windows as start – end. Nothing is ever
written under CHECKPOINT (RocksDB stores are rebuilt in a temporary folder).

\b
Exit codes:
  0  rows shown
  1  nothing to show (a stateless query, or no batch committed yet: --json prints "tables": [] and a "note"); with --audit: some state grows, is skewed or lags its snapshots
  2  bad option (a --key that does not fit the key schema, options that do not go together)
  4  unreadable: no such checkpoint/operator/store/variable/batch, a schema or encoding that cannot be read, a state file missing or corrupt, entries that do not decode (never shown as rows)
"""

#: ``state`` on a checkpoint that reads but holds no state to show (a stateless query, or no
#: batch committed yet): 1, as ``lineage`` exits 1 when no query has read a file yet — not 4,
#: which says the state could not be read.
EXIT_NOTHING = ExitCode.WARNINGS

_T = TypeVar("_T")
#: the names tests/state and bench/state_bench.py import from here
_rows_json = rows_json
_write_json_stream = write_json_stream


@click.command(epilog=EPILOG)
@click.argument("checkpoint", type=str)
@click.option("--operator", "operator", type=click.IntRange(min=0), default=None, metavar="N", help="Only state operator N (state/N).")
@click.option("--store", type=str, default=None, metavar="NAME", help="Store: default, a join side (left/right) or a raw store (left-keyToNumValues…).")
@click.option("--batch", "batch", type=click.IntRange(min=0), default=None, metavar="B", help="State after batch B (default: the last committed batch).")
@click.option("--partition", type=click.IntRange(min=0), default=None, metavar="P", help="Only partition P.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, metavar="N", help="Rows per table (0: all).")
@click.option("--var", "var", type=str, default=None, metavar="NAME",
              help="transformWithState: only state variable NAME (or 'timers').")
@click.option("--audit", is_flag=True, help="Bounded or growing state per operator (slopes, skew, restart cost).")
@click.option("--recording", type=str, default=None, metavar="FILE",
              help="With --audit: the query's recording (JSONL) or Spark event log, for numRowsRemoved per batch.")
@click.option("--key", "key", type=str, default=None, metavar="JSON",
              help="One state key, as JSON by key column: its value, read from the one partition Spark placed it in.")
@click.option("--from-batch", "from_batch", type=click.IntRange(min=0), default=None, metavar="A",
              help="With --key: the key's changes (update/delete, with the watermark) from batch A…")
@click.option("--to-batch", "to_batch", type=click.IntRange(min=0), default=None, metavar="B",
              help="…to batch B (default: the last committed batch).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.state/1).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV of one table (pick it with --operator/--store); all rows unless --limit.")
def state(checkpoint: str, operator: int | None, store: str | None, batch: int | None, partition: int | None,
          limit: int, var: str | None, audit: bool, recording: str | None, key: str | None, from_batch: int | None,
          to_batch: int | None, as_json: bool, as_csv: bool) -> None:
    """Show the rows in CHECKPOINT's state stores as of a batch, without a JVM.

    Decodes HDFS-backed stores (snapshot + deltas) and RocksDB stores (zip +
    SSTs + changelogs, checkpoint format v1 and v2) for streaming aggregations,
    dropDuplicates, session windows, stream-stream joins (rows per side with
    their matched flag), flatMapGroupsWithState/applyInPandasWithState
    (state + timeout) and transformWithState state variables (value, list and
    map state, TTL, timers; one table per variable, or --var). Rows in the
    unsaferow or avro state encoding. Key and value schemas come from the
    operator's state schema files.

    With --audit: is each operator's state bounded or growing, from its state
    versions (and, with --recording, the progress reports' numRowsTotal and
    numRowsRemoved per batch: rows that rise while nothing is removed grow).
    """
    _check_combination(as_json, as_csv, audit, recording)
    if audit:
        sys.exit(run_audit(checkpoint, recording, operator, as_json))
    if key is not None or from_batch is not None or to_batch is not None:
        sys.exit(_run_key(checkpoint, key, operator, store, batch, partition, var, from_batch, to_batch,
                          as_json, as_csv))
    ctx = click.get_current_context()
    if as_csv and ctx.get_parameter_source("limit") == click.core.ParameterSource.DEFAULT:
        limit = 0
    which = _Which(checkpoint, operator, store, batch, partition, limit or None, var)
    if as_json or as_csv:
        # --json and --csv write rows as they are decoded (constant memory with --limit 0)
        found = _write_streamed(which, as_json)
    else:
        tables = _read(which, as_json)
        print_tables(tables)
        found = [f for t in tables for f in t.findings]
    bad = [f for f in found if f.severity == "error"]
    for f in bad:
        click.echo(f"streamwatch state: {f.code}: {f.message}", err=True)
    sys.exit(ExitCode.UNREADABLE if bad else ExitCode.OK)


def _usage(message: str) -> NoReturn:
    raise UsageError(message)


def _check_combination(as_json: bool, as_csv: bool, audit: bool, recording: str | None) -> None:
    """Exits 2 for output options that do not go together."""
    if as_json and as_csv:
        _usage("use --json or --csv, not both")
    if recording is not None and not audit:
        _usage("--recording goes with --audit")


def _run_key(checkpoint: str, key: str | None, operator: int | None, store: str | None, batch: int | None,
             partition: int | None, var: str | None, from_batch: int | None, to_batch: int | None,
             as_json: bool, as_csv: bool) -> int:
    """``--key`` (with ``--from-batch``/``--to-batch``: its changes): exits 2 for options
    that do not go with it; the exit status of :func:`~streamwatch.cli.state_key_cmd.run_key`."""
    from streamwatch.cli.state_key_cmd import run_key

    if key is None or as_csv or (batch is not None and (from_batch is not None or to_batch is not None)) \
            or store not in (None, "default") or partition is not None or var is not None:
        _usage("--from-batch/--to-batch go with --key (not with --batch); --key reads the "
               "default store of one --operator, its partition from the key (no --store/--partition/--var/--csv)")
    return run_key(checkpoint, key, operator, batch, from_batch, to_batch, as_json)


@dataclass(frozen=True)
class _Which:
    """The tables asked for: ``checkpoint``, ``operator``, ``store``, ``batch``,
    ``partition``, at most ``limit`` rows per table (None: all), transformWithState ``var``."""

    checkpoint: str
    operator: int | None
    store: str | None
    batch: int | None
    partition: int | None
    limit: int | None
    var: str | None


def _read(which: _Which, as_json: bool) -> list[StateTable]:
    """Every row of the tables asked for, in memory (:func:`~streamwatch.state.read_state`);
    exits 1 (nothing to show) or 4 (unreadable) when they cannot be read."""
    from streamwatch.state import read_state

    return _tables(which, as_json, read_state)


def _stream(which: _Which, as_json: bool) -> list[StateStream]:
    """The tables asked for, their rows decoded as iterated
    (:func:`~streamwatch.state.reader.stream_state`); exits as :func:`_read` does."""
    from streamwatch.state.reader import stream_state

    return _tables(which, as_json, stream_state)


def _tables(which: _Which, as_json: bool, reader: Callable[..., list[_T]]) -> list[_T]:
    from streamwatch.state import StateReadError

    try:
        return reader(which.checkpoint, operator=which.operator, store=which.store, batch=which.batch,
                      partition=which.partition, limit=which.limit, var=which.var)
    except StateReadError as e:
        _refused(which, e, as_json)
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's checkpoint
        _unreadable(which.checkpoint, e)


def _unreadable(checkpoint: str, e: Exception) -> NoReturn:
    raise Unreadable(f"{checkpoint}: unreadable ({type(e).__name__}: {e})") from None


def _refused(which: _Which, e: Exception, as_json: bool) -> NoReturn:
    """The reader refused: exit 1 when the checkpoint holds no state to show (with --json a
    document of no tables and its ``note``), else 4 with the reader's line."""
    checkpoint = which.checkpoint
    nothing = _nothing_to_show(checkpoint, which.batch)
    if nothing is None:
        raise Unreadable(str(e)) from None
    if as_json:
        import orjson

        doc = {"schema": "streamwatch.state/1", "checkpoint": checkpoint, "tables": [], "note": nothing}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:  # stdout carries only data: a table or CSV of no rows is nothing at all
        click.echo(f"streamwatch state: {checkpoint}: {nothing}", err=True)
    sys.exit(EXIT_NOTHING)


def _write_streamed(which: _Which, as_json: bool) -> list[Finding]:
    """--json (every table) or --csv (exactly one table, else exit 2) written as rows are
    decoded; the tables' findings once written. Exits 4 when a row cannot be decoded."""
    tables = _stream(which, as_json)
    if not as_json and len(tables) != 1:
        choices = ", ".join(f"--operator {t.operator_id} " + (f"--var {t.variable}" if t.variable else f"--store {t.store}")
                            for t in tables)
        _usage(f"--csv writes one table; pick one of: {choices}")
    try:
        if as_json:
            sys.stdout.flush()
            write_json_stream(sys.stdout.buffer, which.checkpoint, tables)
        else:
            write_csv_stream(tables[0])
    except Exception as e:  # noqa: BLE001 - rows are decoded while written: never a traceback
        _unreadable(which.checkpoint, e)
    return [f for t in tables for f in t.stats.findings]


def _nothing_to_show(checkpoint: str, batch: int | None) -> str | None:
    """Why the checkpoint at ``checkpoint`` has no state to show (one line), or None when it
    does hold state, cannot be read, or a state folder in it could not be looked at. Asked
    only once :func:`~streamwatch.state.read_state` has refused, so a checkpoint with state is
    read once."""
    from streamwatch.checkpoint import read_checkpoint

    try:
        cp = read_checkpoint(checkpoint, full=False)
    except Exception:  # noqa: BLE001 - unreadable: read_state's own error stands
        return None
    if any(f.severity == "error" and "/state" in (f.path or "").replace("\\", "/") for f in cp.findings):
        return None  # a state/ that could not be listed is unreadable, not empty
    if not cp.state:
        return "no state operators (a stateless query: state/ is empty or missing)"
    if batch is None and not cp.commit_batch_ids:
        return "no committed batch yet (commits/ is empty)"
    return None
