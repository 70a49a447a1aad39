"""The ``streamwatch`` command (click). Each subcommand lives in its own module, imported
only when that subcommand runs (or ``--help`` lists them all), and imports what it needs
lazily: ``streamwatch inspect`` loads the checkpoint and state readers alone (no JVM, no
textual, no pandas, no event readers), so a fresh process answers in a fraction of a second."""

from __future__ import annotations

import importlib
from typing import NoReturn

import click

from streamwatch import __version__
from streamwatch.errors import StreamwatchError, exit_code_for, not_installed, one_line

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


#: At most this many characters of an escaping error's first line are printed.
MESSAGE_CHARS = 1000

# subcommand name → its module under streamwatch.cli (the click command is the module's
# attribute of the same name)
COMMANDS: dict[str, str] = {
    "run": "run_cmd", "inspect": "inspect_cmd", "doctor": "doctor_cmd", "log": "log_cmd",
    "events": "events_cmd", "replay": "replay_cmd", "land": "land_cmd",
    "pipelines": "pipelines_cmd", "watch": "watch_cmd", "diff": "diff_cmd",
    "retention": "retention_cmd", "recover": "recover_cmd", "compat": "compat_cmd",
    "state": "state_cmd", "lineage": "lineage_cmd", "jars": "jars_cmd",
    "advise": "advise_cmd",
}


class Streamwatch(click.Group):
    """The command group: subcommands are imported on first use (:data:`COMMANDS`), and
    this is the one place an error escaping a subcommand becomes a one-line message on
    stderr and its exit code (:func:`streamwatch.errors.exit_code_for`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            module = importlib.import_module(f"streamwatch.cli.{COMMANDS[cmd_name]}")
            command = getattr(module, cmd_name)
            assert isinstance(command, click.Command), (cmd_name, command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except StreamwatchError as e:
            self._fail(ctx, e)
        except ModuleNotFoundError as e:
            # an optional dependency this command needs (pyspark, delta-spark, s3fs …): say which
            # extra brings it instead of a traceback; any other missing module is a bug
            missing = not_installed(e)
            if missing is None:
                raise
            self._fail(ctx, missing)

    @staticmethod
    def _fail(ctx: click.Context, e: StreamwatchError) -> NoReturn:
        # the subcommands raise their refusals (UsageError, Unreadable …) with the whole line
        # they mean to print, paths included: bounded, but not at the 200 of a status cell
        command = ctx.invoked_subcommand or "run"
        click.echo(f"streamwatch {command}: {one_line(e, MESSAGE_CHARS)}", err=True)
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
        run = main.get_command(ctx, "run")
        assert run is not None
        ctx.invoke(run)

