"""The ``streamwatch`` command (click). Each subcommand lives in its own module and imports
what it needs lazily, so ``streamwatch inspect`` never starts a JVM and ``streamwatch log``
never imports textual."""

from __future__ import annotations

import click

from streamwatch import __version__
from streamwatch.cli.compat_cmd import compat
from streamwatch.cli.diff_cmd import diff
from streamwatch.cli.doctor_cmd import doctor
from streamwatch.cli.events_cmd import events
from streamwatch.cli.inspect_cmd import inspect
from streamwatch.cli.land_cmd import land
from streamwatch.cli.lineage_cmd import lineage
from streamwatch.cli.log_cmd import log
from streamwatch.cli.pipelines_cmd import pipelines
from streamwatch.cli.recover_cmd import recover
from streamwatch.cli.replay_cmd import replay
from streamwatch.cli.retention_cmd import retention
from streamwatch.cli.run_cmd import run
from streamwatch.cli.state_cmd import state
from streamwatch.cli.watch_cmd import watch
from streamwatch.errors import StreamwatchError, exit_code_for, one_line

EPILOG = """\b
Examples:
  streamwatch                          dashboard on the bundled flights pipeline
  streamwatch run --pipeline flights   the same, explicitly
  streamwatch inspect ./streamwatch-workspace/checkpoints/flights/bronze
  streamwatch diff OLD_CP NEW_CP       what changed between two snapshots of a checkpoint
  streamwatch recover CP --plan        the smallest fix that lets a query restart
  streamwatch lineage flights_2013-01-01T00-00.csv   one landed file through every layer
  streamwatch doctor                   versions, Java, Delta or Parquet tables
  streamwatch log --out events.jsonl   headless: run the pipeline, record events as JSONL
  streamwatch events /tmp/spark-events/eventlog_v2_local-1795212358589
  streamwatch replay events.jsonl      the dashboard on a recording or a Spark event log
  streamwatch state CP --batch 12      the rows in CP's state stores after batch 12 (no JVM)
"""


class Streamwatch(click.Group):
    """The command group; the one place an error escaping a subcommand becomes a one-line
    message on stderr and its exit code (:func:`streamwatch.errors.exit_code_for`)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except StreamwatchError as e:
            command = ctx.invoked_subcommand or "run"
            click.echo(f"streamwatch {command}: {one_line(e)}", err=True)
            ctx.exit(exit_code_for(e))


@click.group(cls=Streamwatch, invoke_without_command=True, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="streamwatch")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Watch Spark Structured Streaming: a live dashboard, a read-only checkpoint
    inspector and headless listener logging.

    Without a command, opens the dashboard on the bundled flights pipeline
    (same as `streamwatch run`).
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(run)


main.add_command(run)
main.add_command(inspect)
main.add_command(doctor)
main.add_command(log)
main.add_command(events)
main.add_command(replay)
main.add_command(land)
main.add_command(pipelines)
main.add_command(watch)
main.add_command(diff)
main.add_command(retention)
main.add_command(recover)
main.add_command(compat)
main.add_command(state)
main.add_command(lineage)
