"""``streamwatch replay``: the dashboard on a recording or a Spark event log (no Spark)."""

from __future__ import annotations

import click

from streamwatch.errors import UsageError

EPILOG = """\b
Examples:
  streamwatch replay events.jsonl                 replay a recording in real time
  streamwatch replay events.jsonl --speed 0       jump to the end at once
  streamwatch replay events.jsonl --follow        watch a job that `streamwatch.record`s
  streamwatch replay /tmp/spark-events/eventlog_v2_local-1795212358589 --speed 10
  streamwatch replay --follow s3://bucket/job/events.jsonl
                                                  watch a job elsewhere (segments .1, .2 …)
  streamwatch replay s3://bucket/spark-events/app-20260101120000-0001
\b
Exit codes:
  0  the dashboard was quit
  2  bad option
  4  SOURCE is missing (without --follow), unreadable, neither a recording nor an event log, or compressed with an unsupported codec
"""


@click.command("replay", epilog=EPILOG)
@click.argument("source")
@click.option("--speed", type=float, default=1.0, show_default=True,
              help="Replay speed factor (2 = twice as fast; 0 = as fast as possible).")
@click.option("--follow", is_flag=True,
              help="Keep reading SOURCE as another process writes it (like tail -F); on an "
                   "object store, new segment objects are picked up as they appear.")
@click.option("--poll", type=click.FloatRange(min=0.05), default=None,
              help="With --follow: seconds between looks for new data [default: 0.2 local, 1 on a URL].")
def replay(source: str, speed: float, follow: bool, poll: float | None) -> None:
    """Open the dashboard on SOURCE: a streamwatch recording (JSONL, written by
    `streamwatch log` or `streamwatch.record`) or a Spark event log (plain,
    .gz, .zstd, .lz4 or a rolling eventlog_v2_* folder). SOURCE may be a local
    path or an fsspec URL (s3://bucket/key with s3fs installed). No Spark is
    started.
    Pauses longer than 5 s in the recording are shortened. Press q to quit.
    An unreadable SOURCE is one line on stderr and exit 4 (the command group's handler),
    before the dashboard opens.
    """
    from streamwatch.backends.replay import ReplayBackend

    if speed < 0:
        raise UsageError("--speed must be >= 0")
    backend = ReplayBackend(source, speed=speed, follow=follow, poll_s=poll)
    from streamwatch.tui.launch import run_dashboard

    run_dashboard(backend)
