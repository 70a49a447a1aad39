"""``streamwatch state CHECKPOINT``: the rows in a checkpoint's state stores as of a batch,
decoded without a JVM (HDFS-backed and RocksDB stores, UnsafeRow)."""

from __future__ import annotations

import csv
import sys

import click

from streamwatch.errors import ExitCode
from streamwatch.state.display import jsonable, text

EPILOG = """\b
Examples:
  streamwatch state ./streamwatch-workspace/checkpoints/flights/gold
  streamwatch state CP --operator 0 --batch 12      state after batch 12 (version 13)
  streamwatch state CP --store left                 a stream-stream join's left side
  streamwatch state CP --store left-keyToNumValues  one of the join's four raw stores
  streamwatch state CP --partition 3 --limit 50     one partition, first 50 rows
  streamwatch state CP --operator 0 --csv > state.csv
  streamwatch state CP --json | jq '.tables[0].partitions'

\b
Timestamps print as UTC text, windows as start – end. Exit status: 0 ok, 2 usage,
4 unreadable (no such checkpoint/operator/store/batch, a schema or encoding that
cannot be read, a state file that is missing or corrupt). Nothing is ever written
under CHECKPOINT (RocksDB stores are rebuilt in a temporary folder).
"""

def _leaf(col: str) -> str:
    return col.rsplit(".", 1)[-1]


def _table_doc(t) -> dict:
    names = [c.name for c in t.columns]
    return {
        "operator": t.operator_id, "operator_name": t.operator_name, "store": t.store,
        "provider": t.provider, "encoding": t.encoding, "batch_id": t.batch_id, "version": t.version,
        "columns": [{"name": c.name, "type": c.type} for c in t.columns],
        "rows": [[jsonable(v, _leaf(n)) for n, v in zip(names, r)] for r in t.rows],
        "total_rows": t.total_rows,
        "partitions": [{"partition": p.partition, "store": p.store, "rows": p.rows, "file_bytes": p.file_bytes,
                        "snapshot": p.snapshot, "replayed": list(p.replayed), "error": p.error} for p in t.partitions],
        "findings": [{"severity": f.severity, "code": f.code, "message": f.message, "path": f.path} for f in t.findings],
    }


def _human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _print_tables(tables) -> None:
    from rich.console import Console
    from rich.table import Table

    # a pipe or file gets whole rows (no terminal width to respect)
    out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 250)
    for t in tables:
        shown = len(t.rows)
        title = (f"operator {t.operator_id} ({t.operator_name or 'unknown'}) · store {t.store} · {t.provider} · "
                 f"batch {t.batch_id} (version {t.version}) · {t.total_rows} rows"
                 + (f" (first {shown})" if shown < t.total_rows else ""))
        table = Table(title=title, title_justify="left")
        for c in t.columns:
            table.add_column(f"{c.name}\n{c.type}", no_wrap=True,
                             justify="right" if c.type in ("bigint", "int", "double", "float", "smallint", "tinyint") else "left")
        names = [_leaf(c.name) for c in t.columns]
        for r in t.rows:
            table.add_row(*(text(v, n) for n, v in zip(names, r)))
        out.print(table)
        sizes = "  ".join(f"p{p.partition}: {p.rows} rows, {_human_bytes(p.file_bytes)}"
                          + (f" (snapshot {p.snapshot} + {len(p.replayed)} replayed)" if p.snapshot else f" ({len(p.replayed)} replayed)")
                          for p in t.partitions if not p.error)
        out.print(f"partitions: {sizes or 'none readable'}", highlight=False)


@click.command(epilog=EPILOG)
@click.argument("checkpoint", type=str)
@click.option("--operator", "operator", type=click.IntRange(min=0), default=None, metavar="N", help="Only state operator N (state/N).")
@click.option("--store", type=str, default=None, metavar="NAME", help="Store: default, a join side (left/right) or a raw store (left-keyToNumValues…).")
@click.option("--batch", "batch", type=click.IntRange(min=0), default=None, metavar="B", help="State after batch B (default: the last committed batch).")
@click.option("--partition", type=click.IntRange(min=0), default=None, metavar="P", help="Only partition P.")
@click.option("--limit", type=click.IntRange(min=0), default=20, show_default=True, metavar="N", help="Rows per table (0: all).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.state/1).")
@click.option("--csv", "as_csv", is_flag=True, help="CSV of one table (pick it with --operator/--store); all rows unless --limit.")
def state(checkpoint: str, operator: int | None, store: str | None, batch: int | None, partition: int | None,
          limit: int, as_json: bool, as_csv: bool) -> None:
    """Show the rows in CHECKPOINT's state stores as of a batch, without a JVM.

    Decodes HDFS-backed stores (snapshot + deltas) and RocksDB stores (zip +
    SSTs + changelogs, checkpoint format v1 and v2) for streaming aggregations,
    dropDuplicates, session windows, stream-stream joins (rows per side with
    their matched flag) and flatMapGroupsWithState/applyInPandasWithState
    (state + timeout). Key and value schemas come from the operator's state
    schema files.
    """
    from streamwatch.state import StateReadError, read_state

    if as_json and as_csv:
        click.echo("streamwatch state: use --json or --csv, not both", err=True)
        sys.exit(ExitCode.USAGE)
    ctx = click.get_current_context()
    if as_csv and ctx.get_parameter_source("limit") == click.core.ParameterSource.DEFAULT:
        limit = 0
    try:
        tables = read_state(checkpoint, operator=operator, store=store, batch=batch, partition=partition,
                            limit=limit or None)
    except StateReadError as e:
        click.echo(f"streamwatch state: {e}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's checkpoint
        click.echo(f"streamwatch state: {checkpoint}: unreadable ({type(e).__name__}: {e})", err=True)
        sys.exit(ExitCode.UNREADABLE)
    if as_csv and len(tables) != 1:
        which = ", ".join(f"--operator {t.operator_id} --store {t.store}" for t in tables)
        click.echo(f"streamwatch state: --csv writes one table; pick one of: {which}", err=True)
        sys.exit(ExitCode.USAGE)
    if as_json:
        import orjson

        doc = {"schema": "streamwatch.state/1", "checkpoint": checkpoint, "tables": [_table_doc(t) for t in tables]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    elif as_csv:
        t = tables[0]
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow([c.name for c in t.columns])
        names = [_leaf(c.name) for c in t.columns]
        for r in t.rows:
            w.writerow([text(v, n) for n, v in zip(names, r)])
    else:
        _print_tables(tables)
    bad = [f for t in tables for f in t.findings if f.severity == "error"]
    for f in bad:
        click.echo(f"streamwatch state: {f.code}: {f.message}", err=True)
    sys.exit(ExitCode.UNREADABLE if bad else ExitCode.OK)
