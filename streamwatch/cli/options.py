"""The options ``streamwatch run`` (dashboard) and ``streamwatch log`` (headless) share: what
to run and how — pipeline, workspace, trigger, output modes, landing pace, Spark master, UI —
and their checks before Spark starts (no pyspark import)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from streamwatch.analysis.triggers import parse_trigger
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.pipeline import DEFAULT_WORKSPACE, Pipeline, Workspace, get_pipeline

_OPTIONS = (
    click.option("--pipeline", "pipeline_name", default="flights", show_default=True,
                 help="Bundled (or plugged-in) pipeline to run; see `streamwatch pipelines`."),
    click.option("--workspace", default=str(DEFAULT_WORKSPACE), show_default=True, metavar="DIR|s3a://BUCKET/PREFIX",
                 help="Folder for landing files, tables, checkpoints and logs/spark.log; or an S3 prefix "
                      "(s3a://BUCKET/PREFIX, needs `streamwatch jars --set s3`) for the tables and checkpoints, the "
                      "landing files and logs then staying in ./streamwatch-workspace."),
    click.option("--trigger", default="processingTime=2 seconds", show_default=True,
                 help="default | availableNow | once | processingTime=<interval> (e.g. 2s, 500ms)."),
    click.option("--output-mode", "output_mode_specs", multiple=True, metavar="LAYER=MODE",
                 help="Override a layer's output mode (append | update | complete), e.g. "
                      "--output-mode gold=complete; repeatable. Parquet tables take append, or "
                      "complete (rewritten each batch); Spark's refusal of a query shape is "
                      "reported in one line."),
    click.option("--land-every", type=float, default=1.0, show_default=True,
                 help="Seconds between landed input files, per source; a source whose readers have 10 or "
                      "more of its files unread (their file-source logs say) waits, so the run keeps pace "
                      "with this machine (`land N` / `:land N` add a backlog on purpose)."),
    click.option("--max-files", type=int, default=None,
                 help="Stop landing after this many files (default: the whole data set)."),
    click.option("--master", default=None, envvar="STREAMWATCH_MASTER", show_envvar=True,
                 help="Spark master URL: local[*] (default), local[N], spark://HOST:7077, yarn, k8s://…"),
    click.option("--no-ui", is_flag=True, help="Do not start the Spark UI."),
)


def run_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator adding the shared options; the command receives ``pipeline_name``,
    ``workspace``, ``trigger``, ``output_mode_specs``, ``land_every``, ``max_files``,
    ``master`` and ``no_ui``."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


@dataclass(frozen=True)
class RunChoice:
    """The checked options: the pipeline, its output-mode overrides (``{layer: mode}``),
    the master URL (None: ``STREAMWATCH_MASTER`` or ``local[*]``) and the workspace."""

    pipeline: Pipeline
    output_modes: dict[str, str]
    master: str | None
    workspace: Workspace = field(default_factory=lambda: Workspace(DEFAULT_WORKSPACE))


def check_run_options(pipeline_name: str, trigger: str, output_mode_specs: tuple[str, ...], land_every: float,
                      max_files: int | None, master: str | None, workspace: str | Path = DEFAULT_WORKSPACE) -> RunChoice:
    """Checks the shared options before Spark starts. Raises ``ValueError`` with a one-line
    message for an unknown pipeline, trigger spec, layer or output mode, for bad numbers and
    for a workspace URL that is not a folder, ``s3a://BUCKET/PREFIX`` or ``s3://BUCKET/PREFIX``."""
    try:
        ws = Workspace.at(workspace)
    except ValueError as e:
        raise ValueError(f"--workspace {e.args[0]}") from None
    if ws.root.is_local and ws.local.exists() and not ws.local.is_dir():
        raise ValueError(f"--workspace {workspace}: is a file, not a folder")
    try:
        pipeline = get_pipeline(pipeline_name)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    parse_trigger(trigger)  # TriggerError is a ValueError
    modes = pipeline.output_modes(output_mode_specs)
    if land_every <= 0:
        raise ValueError("--land-every must be > 0")
    if max_files is not None and max_files < 0:
        raise ValueError("--max-files must be >= 0")
    if master is not None and not master.strip():
        raise ValueError("--master must not be empty")
    return RunChoice(pipeline, modes, master.strip() if master else None, ws)


class WorkspaceUnwritable(StreamwatchError):
    """Spark in this process cannot write the workspace (an ``s3a://`` one without
    ``hadoop-aws``): exit 3."""

    exit_code = ExitCode.ERRORS


def object_store_unavailable(ws: Workspace) -> str | None:
    """Why Spark in this process cannot write ``ws`` — an ``s3a://`` workspace while
    ``hadoop-aws`` (``streamwatch jars --set s3``) is not resolved — as one line; None when it can."""
    if ws.root.is_local:
        return None
    from streamwatch.spark.tableformat import decide_table_format  # no pyspark import

    if decide_table_format().s3:
        return None
    return (f"--workspace {ws.root.spark_uri}: Spark needs hadoop-aws for s3a:// and it is not resolved "
            "(run `streamwatch jars --set s3`, which needs mvn and Maven Central)")
