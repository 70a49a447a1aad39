"""``streamwatch run``: the dashboard on a bundled pipeline, run in-process."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.option("--pipeline", "pipeline_name", default="flights", show_default=True,
              help="Bundled (or plugged-in) pipeline to run; see `streamwatch pipelines`.")
@click.option("--workspace", type=click.Path(file_okay=False, path_type=Path),
              default=Path("streamwatch-workspace"), show_default=True,
              help="Folder for landing files, tables, checkpoints and logs/spark.log.")
@click.option("--trigger", default="processingTime=2 seconds", show_default=True,
              help="default | availableNow | once | processingTime=<interval> (e.g. 2s, 500ms).")
@click.option("--land-every", type=float, default=1.0, show_default=True,
              help="Seconds between landed input files.")
@click.option("--max-files", type=int, default=None,
              help="Stop landing after this many files (default: the whole data set).")
@click.option("--no-ui", is_flag=True, help="Do not start the Spark UI.")
@click.option("--master", default=None, envvar="STREAMWATCH_MASTER", show_envvar=True,
              help="Spark master URL: local[*] (default), local[N], spark://HOST:7077, yarn, k8s://…")
@click.option("--history", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="Progress updates kept per query for the detail charts.")
def run(pipeline_name: str, workspace: Path, trigger: str, land_every: float,
        max_files: int | None, no_ui: bool, master: str | None, history: int) -> None:
    """Open the dashboard and run PIPELINE's bronze → silver → gold queries
    in-process on Spark (local[*] unless --master), landing real data as it goes.

    Spark's own logs go to WORKSPACE/logs/spark.log; the Spark UI link is
    shown at the top. Tables are Delta when Delta Lake's jars can be loaded,
    Parquet otherwise (STREAMWATCH_TABLE_FORMAT=delta|parquet|auto forces it).
    Press ? in the dashboard for keys, q to stop the queries and quit.

    \b
    Keys: 1-6 tabs (queries, detail, checkpoint, landing, events, results),
    enter detail, : commands, / filter, x/s/r stop/start/restart the selected
    query (X/S/R the pipeline), l land a file, t trigger, p pause, ? help.

    \b
    Examples:
      streamwatch run
      streamwatch run --trigger processingTime=5s --land-every 0.5 --max-files 200
      streamwatch run --workspace /tmp/ws --no-ui --history 50000
      streamwatch run --master spark://127.0.0.1:7077
    """
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.tables import trigger_kwargs

    try:
        pipeline = get_pipeline(pipeline_name)
        trigger_kwargs(trigger)
    except (KeyError, ValueError) as e:
        click.echo(f"streamwatch run: {e.args[0]}", err=True)
        sys.exit(2)
    if land_every <= 0:
        click.echo("streamwatch run: --land-every must be > 0", err=True)
        sys.exit(2)
    if master is not None and not master.strip():
        click.echo("streamwatch run: --master must not be empty", err=True)
        sys.exit(2)

    from streamwatch.spark.live import LiveBackend
    from streamwatch.tui.launch import run_dashboard

    backend = LiveBackend(
        pipeline, Workspace(workspace), trigger=trigger, land_every_s=land_every,
        max_files=max_files, ui=not no_ui, master=master.strip() if master else None,
    )
    run_dashboard(backend, history=history)
