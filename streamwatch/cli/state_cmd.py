"""``streamwatch state CHECKPOINT``: the rows in a checkpoint's state stores as of a batch,
decoded without a JVM (HDFS-backed and RocksDB stores, UnsafeRow and Avro, transformWithState
state variables), and ``--audit``: bounded vs growing state per operator, sharpened by a
recording's or event log's progress reports (``--recording``)."""

from __future__ import annotations

import csv
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from typing import IO, TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from streamwatch.errors import ExitCode, Unreadable, UsageError
from streamwatch.state.display import jsonable, text

if TYPE_CHECKING:  # the readers are imported when the command runs, not for --help
    from streamwatch.model.findings import Finding
    from streamwatch.state.audit import OperatorGrowth
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

def _leaf(col: str) -> str:
    return col.rsplit(".", 1)[-1]


def _json_default(v: object) -> str:
    """What orjson does not write itself, as :func:`~streamwatch.state.display.jsonable` writes it."""
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    raise TypeError(f"{type(v).__name__} is not JSON serializable")


#: between two rows in one orjson call: a raw NUL, which orjson never writes (it escapes every
#: control character in a string), so the rows' boundaries are found without parsing
_ROW_MARK = b"\x00"
_ROW_SEP = b",\n      "


def _rows_json(leaves: list[str], has_map: bool) -> Callable[[list[tuple[Any, ...]]], bytes]:
    """Rows as their JSON arrays, one a line (``,\\n`` and the indent between): orjson writes
    UTC datetimes (``…Z``), naive ones and dates as :func:`~streamwatch.state.display.jsonable`
    does, a batch of rows in one call; only a table with a map column (keys of any type,
    written as ``str(key)``) goes value by value through ``jsonable``."""
    import orjson

    if has_map:
        def each(rows: list[tuple[Any, ...]]) -> bytes:
            return _ROW_SEP.join(orjson.dumps([jsonable(v, n) for n, v in zip(leaves, r, strict=True)]) for r in rows)
        return each
    mark = orjson.Fragment(_ROW_MARK)
    cut = len(b"," + _ROW_MARK + b"]")

    def batch(rows: list[tuple[Any, ...]]) -> bytes:
        doc = orjson.dumps([x for r in rows for x in (r, mark)], default=_json_default, option=orjson.OPT_UTC_Z)
        return doc[1:-cut].replace(b"," + _ROW_MARK + b",", _ROW_SEP)
    return batch


def _write_json_stream(out: IO[bytes], checkpoint: str, streams: Sequence[StateStream]) -> None:
    """The ``--json`` document (schema ``streamwatch.state/1``: per table its operator, store,
    variable, provider, encoding, batch, version, columns, ``rows``, ``total_rows``,
    ``partitions``, ``findings``) of :class:`~streamwatch.state.scan.StateStream` tables,
    written to the binary stream ``out`` as rows are decoded (one row a line): the totals,
    partitions and findings after ``rows`` are known once every row is read."""
    import orjson

    out.write(b'{\n  "schema": "streamwatch.state/1",\n  "checkpoint": ' + orjson.dumps(checkpoint) + b',\n  "tables": [')
    for i, t in enumerate(streams):
        names = [c.name for c in t.columns]
        leaves = [_leaf(n) for n in names]
        head = {"operator": t.operator_id, "operator_name": t.operator_name, "store": t.store, "variable": t.variable,
                "provider": t.provider, "encoding": t.encoding, "batch_id": t.batch_id, "version": t.version,
                "columns": [{"name": c.name, "type": c.type} for c in t.columns]}
        out.write((b",\n    " if i else b"\n    ") + orjson.dumps(head)[:-1] + b',\n    "rows": [')
        sep = b"\n      "
        rows = iter(t.rows)
        dump = _rows_json(leaves, any("map<" in c.type for c in t.columns))
        while batch := list(islice(rows, 4096)):
            out.write(sep + dump(batch))
            sep = b",\n      "
        st = t.stats
        tail = {"total_rows": st.total,
                "partitions": [{"partition": p.partition, "store": p.store, "rows": p.rows, "file_bytes": p.file_bytes,
                                "snapshot": p.snapshot, "replayed": list(p.replayed), "error": p.error} for p in st.sizes],
                "findings": [{"severity": f.severity, "code": f.code, "message": f.message, "path": f.path}
                             for f in st.findings]}
        out.write(b"\n    ],\n    " + orjson.dumps(tail)[1:])
    out.write(b"\n  ]\n}\n")
    out.flush()


def _write_csv_stream(t: StateStream) -> None:
    """One :class:`~streamwatch.state.scan.StateStream` as CSV on stdout, rows written as they
    are decoded (header: column names; values as display text)."""
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow([c.name for c in t.columns])
    names = [_leaf(c.name) for c in t.columns]
    for r in t.rows:
        w.writerow([text(v, n) for n, v in zip(names, r, strict=True)])
    sys.stdout.flush()


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


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _print_tables(tables: Sequence[StateTable]) -> None:
    from rich.console import Console
    from rich.table import Table

    # a pipe or file gets whole rows (no terminal width to respect)
    out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 250)
    for t in tables:
        shown = len(t.rows)
        where = f"variable {t.variable}" if t.variable else f"store {t.store}"
        title = (f"operator {t.operator_id} ({t.operator_name or 'unknown'}) · {where} · {t.provider} · {t.encoding} · "
                 f"batch {t.batch_id} (version {t.version}) · {t.total_rows} rows"
                 + (f" (first {shown})" if shown < t.total_rows else ""))
        table = Table(title=title, title_justify="left")
        for c in t.columns:
            table.add_column(f"{c.name}\n{c.type}", no_wrap=True,
                             justify="right" if c.type in ("bigint", "int", "double", "float", "smallint", "tinyint") else "left")
        names = [_leaf(c.name) for c in t.columns]
        for r in t.rows:
            table.add_row(*(text(v, n) for n, v in zip(names, r, strict=True)))
        out.print(table)
        sizes = "  ".join(f"p{p.partition}: {p.rows} rows, {_human_bytes(p.file_bytes)}"
                          + (f" (snapshot {p.snapshot} + {len(p.replayed)} replayed)" if p.snapshot else f" ({len(p.replayed)} replayed)")
                          for p in t.partitions if not p.error)
        out.print(f"partitions: {sizes or 'none readable'}", highlight=False)


def _audit_doc(a: OperatorGrowth) -> dict[str, Any]:
    ev = a.evidence
    return {
        "operator": a.operator_id, "operator_name": a.name, "verdict": a.verdict,
        "rows_per_batch": round(a.rows_per_batch, 3), "bytes_per_batch": round(a.bytes_per_batch, 1),
        "batches_to_10gib": a.batches_to_projection, "skew_share": a.skew_share, "partitions": a.partitions,
        "watermark_moved": a.watermark_moved, "error": a.error,
        "points": [{"batch_id": p.batch_id, "rows": p.rows, "bytes": p.bytes} for p in a.points],
        "restart": [{"partition": r.partition, "store": r.store, "snapshot": r.snapshot, "replay_files": r.replay_files,
                     "replay_bytes": r.replay_bytes, "lagging": r.lagging} for r in a.restart],
        "progress": None if ev is None else {
            "verdict": ev.verdict, "reason": ev.reason, "rows_removed": ev.removed, "rows_dropped_by_watermark": ev.dropped,
            "watermark_moved": ev.watermark_moved,
            "batches": [{"batch_id": p.batch_id, "num_rows_total": p.rows_total, "num_rows_removed": p.rows_removed,
                         "num_rows_dropped_by_watermark": p.rows_dropped, "watermark_ms": p.watermark_ms} for p in ev.points]},
    }


def _run_audit(checkpoint: str, recording: str | None, operator: int | None, as_json: bool) -> int:
    """``--audit``: print the audit; the exit status (0 ok, 1 warnings, 4 unreadable)."""
    from streamwatch.state import StateReadError
    from streamwatch.state.audit import audit_state
    from streamwatch.state.audit_findings import audit_findings

    try:
        audits = audit_state(checkpoint, recording=recording)
    except StateReadError:
        raise  # exit 4, one line, from the command group's handler
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's checkpoint
        raise Unreadable(f"{checkpoint}: unreadable ({type(e).__name__}: {e})") from None
    audits = [a for a in audits if operator is None or a.operator_id == operator]
    findings = audit_findings(audits)
    if as_json:
        import orjson

        doc = {"schema": "streamwatch.state-audit/1", "checkpoint": checkpoint, "recording": recording,
               "operators": [_audit_doc(a) for a in audits],
               "findings": [{"severity": f.severity, "code": f.code, "message": f.message, "path": f.path} for f in findings]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        from rich.console import Console
        from rich.table import Table

        out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 250)
        table = Table(title=f"state audit · {checkpoint}", title_justify="left")
        for col in ("operator", "verdict", "rows", "rows/batch", "bytes/batch", "skew", "removed", "evidence"):
            table.add_column(col, no_wrap=col != "evidence")
        for a in audits:
            ev = a.evidence
            table.add_row(f"{a.operator_id} ({a.name or 'unknown'})", a.verdict,
                          str(a.points[-1].rows) if a.points else "–", f"{a.rows_per_batch:+.1f}",
                          f"{a.bytes_per_batch:+.0f}", f"{a.skew_share:.0%}" if a.skew_share is not None else "–",
                          str(ev.removed) if ev is not None else "–",
                          ev.reason if ev is not None else (a.error or "state files only"))
        out.print(table)
        for f in findings:
            out.print(f"{f.severity}: {f.code}: {f.message}", highlight=False)
    return ExitCode.WARNINGS if any(f.severity in ("warning", "error") for f in findings) else ExitCode.OK


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
        sys.exit(_run_audit(checkpoint, recording, operator, as_json))
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
        _print_tables(tables)
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
            _write_json_stream(sys.stdout.buffer, which.checkpoint, tables)
        else:
            _write_csv_stream(tables[0])
    except Exception as e:  # noqa: BLE001 - rows are decoded while written: never a traceback
        _unreadable(which.checkpoint, e)
    return [f for t in tables for f in t.stats.findings]
