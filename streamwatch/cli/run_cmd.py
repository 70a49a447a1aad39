"""``streamwatch run``: the dashboard on a bundled pipeline, run in-process."""

from __future__ import annotations

import click

from streamwatch.cli.kafka_opts import KAFKA_OPTION, kafka_for
from streamwatch.cli.options import (
    RunChoice,
    WorkspaceUnwritable,
    check_run_options,
    object_store_unavailable,
    run_options,
)
from streamwatch.errors import UsageError


@click.command()
@run_options
@click.option("--history", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Progress updates kept per query for the detail charts.")
@KAFKA_OPTION
def run(pipeline_name: str, workspace: str, trigger: str, output_mode_specs: tuple[str, ...], land_every: float,
        max_files: int | None, master: str | None, no_ui: bool, history: int, kafka_bootstrap: str | None) -> None:
    """Open the dashboard and run PIPELINE's bronze → silver → gold queries
    in-process on Spark (local[*] unless --master), landing real data as it goes.

    Spark's own logs go to WORKSPACE/logs/spark.log; the Spark UI link is
    shown at the top. Tables are Delta when Delta Lake's jars can be loaded,
    Parquet otherwise (STREAMWATCH_TABLE_FORMAT=delta|parquet|auto forces it).
    Press ? in the dashboard for keys, q to stop the queries and quit.

    With --trigger availableNow (or once) each layer runs after all of its
    upstream layers have finished (bronze, then silver, then gold; queued
    until then); other triggers start every layer at once. Every stop lets
    the running micro-batch commit first.

    The clicks pipeline reads Kafka: without --kafka-bootstrap it starts a
    single-node broker on 127.0.0.1 (temporary log folder, stopped on exit);
    without the Kafka jars (`streamwatch jars`) it exits 3 with a one-line reason.

    \b
    Keys: 1-6 tabs (queries, detail, checkpoint, landing, events, results),
    enter detail, : commands, / filter, x/s/r stop/start/restart the selected
    query (X/S/R the pipeline), l land a file, t trigger, p pause, ? help.

    \b
    Examples:
      streamwatch run
      streamwatch run --trigger processingTime=5s --land-every 0.5 --max-files 200
      streamwatch run --trigger availableNow --max-files 0     what landed, layer by layer
      streamwatch run --workspace /tmp/ws --no-ui --history 50000
      streamwatch run --workspace s3a://my-bucket/streamwatch   tables, checkpoints on S3
      streamwatch run --output-mode gold=complete
      streamwatch run --master spark://127.0.0.1:7077
      streamwatch run --pipeline clicks                         with its own Kafka broker
      streamwatch run --pipeline clicks --kafka-bootstrap 127.0.0.1:9092

    \b
    Exit codes:
      0  the dashboard was quit (q), or --no-ui ended
      2  bad option
      3  Spark could not start: pyspark not installed, the Kafka jars or broker missing, s3a:// without hadoop-aws
      4  the workspace cannot be written
    """
    try:
        choice = check_run_options(pipeline_name, trigger, output_mode_specs, land_every, max_files, master, workspace)
    except ValueError as e:
        raise UsageError(e.args[0]) from None
    _dashboard(choice, trigger, land_every, max_files, not no_ui, history, kafka_bootstrap)


def _say(msg: str) -> None:
    click.echo(f"streamwatch run: {msg}", err=True)


def _dashboard(choice: RunChoice, trigger: str, land_every: float, max_files: int | None, ui: bool, history: int,
               kafka_bootstrap: str | None) -> None:
    """The dashboard on a :class:`~streamwatch.spark.live.LiveBackend` of ``choice``, inside
    :func:`kafka_for` (the pipeline's broker); exits 3 when Spark cannot write an s3a://
    workspace or Kafka is unavailable."""
    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.launch import run_dashboard

    ws = choice.workspace
    unavailable = object_store_unavailable(ws)
    if unavailable:
        raise WorkspaceUnwritable(unavailable)
    try:
        with kafka_for(choice.pipeline, ws, kafka_bootstrap, _say) as options:
            backend = LiveBackend(
                choice.pipeline, ws, trigger=trigger, land_every_s=land_every, max_files=max_files,
                ui=ui, master=choice.master, output_modes=choice.output_modes, options=options,
            )
            run_dashboard(backend, history=history)
    except KeyboardInterrupt:
        _say("interrupted")
