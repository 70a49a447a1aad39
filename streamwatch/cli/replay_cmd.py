"""``streamwatch replay``: the dashboard on a recording or a Spark event log (no Spark)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

EPILOG = """\b
Examples:
  streamwatch replay events.jsonl                 replay a recording in real time
  streamwatch replay events.jsonl --speed 0       jump to the end at once
  streamwatch replay events.jsonl --follow        watch a job that `streamwatch.record`s
  streamwatch replay /tmp/spark-events/eventlog_v2_local-1795212358589 --speed 10
"""


@click.command("replay", epilog=EPILOG)
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--speed", type=float, default=1.0, show_default=True,
              help="Replay speed factor (2 = twice as fast; 0 = as fast as possible).")
@click.option("--follow", is_flag=True,
              help="Keep reading SOURCE as another process writes it (like tail -F).")
def replay(source: Path, speed: float, follow: bool) -> None:
    """Open the dashboard on SOURCE: a streamwatch recording (JSONL, written by
    `streamwatch log` or `streamwatch.record`) or a Spark event log (plain,
    .gz, .zstd, .lz4 or a rolling eventlog_v2_* folder). No Spark is started.
    Pauses longer than 5 s in the recording are shortened. Press q to quit.
    """
    from streamwatch.events.reader import EventSourceError

    if speed < 0:
        click.echo("streamwatch replay: --speed must be >= 0", err=True)
        sys.exit(2)
    try:
        from streamwatch.tui.replay import ReplayBackend

        backend = ReplayBackend(source, speed=speed, follow=follow)
    except EventSourceError as e:
        click.echo(f"streamwatch replay: {e}", err=True)
        sys.exit(1)
    from streamwatch.tui.app import StreamwatchApp

    app = StreamwatchApp(backend)
    try:
        app.run()
    finally:
        backend.stop()
    if app.return_code:
        sys.exit(app.return_code)
