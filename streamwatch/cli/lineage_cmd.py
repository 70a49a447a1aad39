"""``streamwatch lineage FILE``: one landed file's journey through every layer, read from the
workspace's checkpoints and sink logs (no JVM, read-only)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from streamwatch.analysis.lineage_text import journey_lines
from streamwatch.errors import Unreadable, UsageError

if TYPE_CHECKING:
    from streamwatch.model.lineage import Journey

EPILOG = """\b
Examples:
  streamwatch lineage flights_2013-01-01T00-00.csv
  streamwatch lineage ./streamwatch-workspace/landing/flights/flights/flights_2013-01-01T00-00.csv
  streamwatch lineage orders_000003.json --workspace /tmp/ws --json
\b
FILE is a landing path, an archived path (cleanSource=archive) or a bare file name.

\b
Exit codes:
  0  journey shown
  1  no query has read FILE (not landed there, not processed yet)
  2  bad option (unknown pipeline)
  4  the workspace cannot be read
"""

SCHEMA = "streamwatch.lineage/1"


def _pipelines_for(file: str, root: Path, pipeline: str | None) -> list[str]:
    """Pipelines to look in: the one named, the one FILE's path is under, else every pipeline
    with checkpoints in the workspace."""
    if pipeline:
        return [pipeline]
    parts = Path(file).expanduser().absolute().parts
    for anchor in ("landing", "archive"):
        if anchor in parts:
            i = parts.index(anchor)
            if i + 1 < len(parts):
                return [parts[i + 1]]
    cps = root / "checkpoints"
    return sorted(p.name for p in cps.iterdir() if p.is_dir()) if cps.is_dir() else []


def _doc(journey: Journey) -> dict[str, Any]:
    """The ``streamwatch.lineage/1`` document of ``journey`` (times in epoch ms)."""
    return {
        "schema": SCHEMA,
        "pipeline": journey.pipeline,
        "file": journey.file,
        "source": journey.source,
        "landedMs": journey.landed_ms,
        "endMs": journey.end_ms,
        "latencyMs": journey.latency_ms,
        "steps": [
            {
                "query": s.query_name, "layer": s.layer, "table": s.table or None, "upstream": list(s.upstream),
                "note": s.note,
                "batches": [
                    {"batchId": h.batch_id, "plannedMs": h.planned_ms, "committed": h.committed,
                     "writtenMs": h.written_ms, "read": list(h.read), "wrote": list(h.wrote), "rows": h.rows}
                    for h in s.hops
                ],
            }
            for s in journey.steps
        ],
    }


def _print(journey: Journey, echo: Callable[[str], None]) -> None:
    for line in journey_lines(journey):
        echo(line)


@click.command("lineage", epilog=EPILOG)
@click.argument("file", type=str)
@click.option("--workspace", type=click.Path(path_type=Path), default=Path("streamwatch-workspace"), show_default=True,
              help="The workspace the pipeline ran in.")
@click.option("--pipeline", "pipeline_name", default=None, help="Pipeline to look in (default: from FILE's path, else every one).")
@click.option("--json", "as_json", is_flag=True, help=f"Machine-readable output (schema {SCHEMA}).")
def lineage(file: str, workspace: Path, pipeline_name: str | None, as_json: bool) -> None:
    """Follow FILE from landing through every layer: the bronze batch that
    read it (and when it committed), the part files that batch wrote, the
    silver batch that read those, … down to gold, with times and end-to-end
    latency. Read from the checkpoints' file source logs, the file sinks'
    _spark_metadata logs (or Delta logs) alone; nothing is written.

    Rows a layer filters out do not break the journey: where a table has a
    source-file column (bronze/silver _source_file, quarantine source_file)
    the rows of FILE in each batch's output are counted, so malformed lines
    show up in the quarantine table's step.
    """
    from streamwatch.analysis.lineage import LineageError, file_journey
    from streamwatch.pipeline import Workspace, get_pipeline, plan_run

    ws = Workspace(workspace)
    if not workspace.is_dir():
        raise Unreadable(f"workspace {workspace} does not exist (use --workspace)")
    names = _pipelines_for(file, workspace, pipeline_name)
    errors = []
    for name in names:
        try:
            pipeline = get_pipeline(name)
        except KeyError as e:
            if pipeline_name:
                raise UsageError(e.args[0]) from None
            continue
        try:
            journey = file_journey(plan_run(pipeline, ws, "default"), file)
        except LineageError as e:
            errors.append(str(e))
            continue
        except OSError as e:
            raise Unreadable(f"cannot read the workspace: {e.strerror or e}") from None
        if as_json:
            import orjson

            sys.stdout.buffer.write(orjson.dumps(_doc(journey), option=orjson.OPT_INDENT_2) + b"\n")
            sys.stdout.flush()
        else:
            _print(journey, click.echo)
        return
    raise LineageError(errors[0] if len(errors) == 1 else f"{file}: no pipeline in {workspace} has read it"
                       + (f" ({'; '.join(errors)})" if errors else ""))
