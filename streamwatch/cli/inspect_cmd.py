"""``streamwatch inspect PATH``: read-only checkpoint summary, no JVM."""

from __future__ import annotations

import sys

import click


@click.command()
@click.argument("path", type=click.Path(path_type=str))
def inspect(path: str) -> None:
    """Summarise the checkpoint at PATH without starting Spark (read-only).

    Shows the query id, the latest batch in the offsets log and in the commit
    log, and each source's latest offset.
    """
    from rich.console import Console
    from rich.table import Table

    from streamwatch.checkpoint import CheckpointError, read_checkpoint

    try:
        cp = read_checkpoint(path)
    except CheckpointError as e:
        click.echo(f"streamwatch inspect: {e}", err=True)
        sys.exit(3)
    except (OSError, ValueError) as e:
        click.echo(f"streamwatch inspect: {path}: unreadable ({e})", err=True)
        sys.exit(3)
    out = Console()
    out.print(f"[bold]checkpoint[/] {cp.path}")
    out.print(f"query id             {cp.query_id or '-'}")
    out.print(f"latest batch (offsets) {cp.latest_batch_id if cp.latest_batch_id is not None else '-'}")
    out.print(f"last committed batch   {cp.last_committed_batch_id if cp.last_committed_batch_id is not None else '-'}")
    if cp.offsets:
        table = Table("source", "latest offset", title="sources")
        for i, offset in enumerate(cp.offsets[-1].sources):
            table.add_row(str(i), offset or "-")
        out.print(table)
