"""``streamwatch land``: land more input files into a pipeline's landing directories."""

from __future__ import annotations

import inspect as pyinspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from streamwatch.errors import Unreadable, UsageError, one_line

EPILOG = """\b
Examples:
  streamwatch land flights                       one more file per landing source
  streamwatch land flights --files 20 --late-ratio 0.05
  streamwatch land orders --files 5 --bad-ratio 0.1
  streamwatch land events --workspace /tmp/ws
  streamwatch land events --files 12 --sdp-project sdp-events
                          the events pipeline as a Spark Declarative Pipelines project in
                          sdp-events/ reading the landed files (then: cd sdp-events &&
                          spark-pipelines run --conf spark.sql.catalogImplementation=hive)
  streamwatch land clicks --files 5 --late-ratio 0.1
                          100 click events per file to the Kafka topic of the running
                          `streamwatch run/log --pipeline clicks` on this workspace
  streamwatch land clicks --kafka-bootstrap 127.0.0.1:9092 --bad-ratio 0.05
\b
Exit codes:
  0  landed (or every source exhausted)
  2  bad option, unknown pipeline, no Kafka broker known, or --sdp-project for a pipeline that ships no SDP project
  4  a file could not be written or the broker did not take the events (one line `cannot reach Kafka at HOST:PORT: …` when it does not answer within 5 s)
"""


def _accepts(factory: Callable[..., Any], option: str) -> bool:
    try:
        params = pyinspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return option in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


@click.command(epilog=EPILOG)
@click.argument("pipeline_name", metavar="PIPELINE")
@click.option("--files", "n_files", type=click.IntRange(min=1), default=1, show_default=True,
              help="Files to land per landing source: exactly FILES (fewer only once the data set is "
                   "exhausted); the files of malformed records (--bad-ratio) count among them.")
@click.option("--bad-ratio", type=click.FloatRange(0.0, 1.0), default=None,
              help="Fraction of malformed records (they end up in the quarantine table).")
@click.option("--late-ratio", type=click.FloatRange(0.0, 1.0), default=None,
              help="Fraction of records landed late and out of order (dropped by the watermark).")
@click.option("--workspace", default="streamwatch-workspace", show_default=True, metavar="DIR|s3a://BUCKET/PREFIX",
              help="Workspace whose landing/<pipeline>/<source>/ folders receive the files (an s3a:// "
                   "workspace lands in ./streamwatch-workspace, where `run/log` on it read).")
@click.option("--kafka-bootstrap", default=None, metavar="HOST:PORT",
              help="Kafka pipelines (clicks): the broker to produce to. Default: the broker of the "
                   "`streamwatch run/log` running on --workspace.")
@click.option("--sdp-project", type=click.Path(file_okay=False, path_type=Path), default=None, metavar="DIR",
              help="Also write PIPELINE as a Spark Declarative Pipelines project in DIR (spark-pipeline.yml "
                   "and transformations/) reading these landing folders; an existing spec is kept. The "
                   "bundled events pipeline ships one.")
def land(pipeline_name: str, n_files: int, bad_ratio: float | None, late_ratio: float | None,
         workspace: str, kafka_bootstrap: str | None, sdp_project: Path | None) -> None:
    """Land the next FILES input files of PIPELINE into its landing directories.

    Each file is written under a hidden temporary name and then renamed, so a
    running file source never reads a partial file. Factories resume after the
    files already landed, so repeated calls continue the data set; files they did
    not name (flights_backup.csv) are ignored there. Prints the
    path of every landed file on stdout, a summary on stderr. A Kafka pipeline
    (clicks) produces its events to the topic instead and lands one JSON
    manifest per batch (events, bad, late, offsets per partition).
    """
    from streamwatch.pipeline import Workspace, discover_pipelines, get_pipeline

    try:
        pipeline = get_pipeline(pipeline_name)
    except KeyError as e:
        raise UsageError(e.args[0]) from None
    try:
        ws = Workspace.at(workspace)  # an s3a:// workspace lands in its local folder
    except ValueError as e:
        raise UsageError(f"--workspace {e.args[0]}") from None
    if sdp_project is not None and pipeline.sdp_project is None:
        shipped = sorted(name for name, p in discover_pipelines().items() if p.sdp_project is not None)
        raise UsageError(f"pipeline {pipeline.name!r} ships no Spark Declarative Pipelines project "
                         f"({', '.join(shipped)} does)")
    wanted = {k: v for k, v in (("bad_ratio", bad_ratio), ("late_ratio", late_ratio),
                                ("bootstrap", kafka_bootstrap)) if v is not None}
    for option in wanted:
        if not any(_accepts(s.factory, option) for s in pipeline.sources):
            flag = "kafka-bootstrap" if option == "bootstrap" else option.replace("_", "-")
            raise UsageError(f"pipeline {pipeline.name!r} does not support --{flag}")
    total = 0
    for source in pipeline.sources:
        kwargs = {k: v for k, v in wanted.items() if _accepts(source.factory, k)}
        directory = ws.landing(pipeline.name, source.name)
        try:
            factory = source.factory(directory, **kwargs)
        except ValueError as e:
            raise UsageError(f"{pipeline.name}/{source.name}: {e}") from None
        except OSError as e:  # the landing folder cannot be created: documented 4, not usage
            raise Unreadable(f"{pipeline.name}/{source.name}: {one_line(e, 300)}") from None
        try:
            files = factory.land(n_files)
        except ValueError as e:
            raise UsageError(f"{pipeline.name}/{source.name}: {e}") from None
        except Exception as e:  # noqa: BLE001 - disk full, broker down (confluent_kafka.KafkaException …)
            raise Unreadable(f"{pipeline.name}/{source.name}: {one_line(e, 300)}") from None
        for path in files:
            click.echo(str(path))
        total += len(files)
        note = " (data set exhausted)" if factory.exhausted else ""
        click.echo(f"{pipeline.name}/{source.name}: landed {len(files)} file(s) in {directory}{note}", err=True)
    if total == 0:
        click.echo("nothing landed: every source is exhausted", err=True)
    if sdp_project is not None and pipeline.sdp_project is not None:
        _write_sdp_project(pipeline.sdp_project, sdp_project,
                           {s.name: ws.landing(pipeline.name, s.name) for s in pipeline.sources})


def _write_sdp_project(write: Callable[[Path, Mapping[str, Path]], Path], dest: Path,
                       landing: Mapping[str, Path]) -> None:
    try:
        spec = write(dest, landing)
    except FileExistsError:
        click.echo(f"{dest / 'spark-pipeline.yml'}: exists, kept", err=True)
        return
    except OSError as e:
        raise Unreadable(f"{dest}: {one_line(e, 300)}") from None
    click.echo(f"wrote {spec}: run it with `cd {dest} && spark-pipelines run --conf "
               "spark.sql.catalogImplementation=hive`, or `streamwatch log --spec` it", err=True)
