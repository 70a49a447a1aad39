"""``streamwatch compat CHECKPOINT --query MODULE:FUNCTION``: will the changed query restart
from this checkpoint? A verdict per rule, optionally beside Spark's own answer (--verify)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from streamwatch.errors import ExitCode, UsageError

if TYPE_CHECKING:  # Spark starts when the command runs, not for --help
    from pyspark.sql import SparkSession

EPILOG = """\b
Examples:
  streamwatch compat CP --query jobs.orders:changed_query
  streamwatch compat CP --query ./my_job.py:build --json
  streamwatch compat CP --query jobs.orders:changed_query --verify
  streamwatch compat ./streamwatch-workspace/checkpoints/flights/gold \
      --pipeline flights --layer gold --verify      a bundled layer as `run` starts it

\b
--pipeline NAME --layer LAYER takes the query from a bundled (or plugged-in)
pipeline instead: the layer's writer as `streamwatch run` would start it over
--workspace (default: the workspace CP lies in, else ./streamwatch-workspace),
on Delta tables when the layer's table has a _delta_log, else Parquet.
FUNCTION(spark) returns the changed query as a configured, NOT started
DataStreamWriter, e.g.
    def changed_query(spark):
        df = spark.readStream.schema(S).json("/data/in")
        return (df.groupBy("k").count().writeStream.format("parquet")
                .option("path", "/data/out").outputMode("append"))
Rules: sources (number, order, kind, file path, options), sink (kind, path,
output mode), stateful operators (number, names, key/value state schemas as
StateSchemaCompatibilityChecker compares them), confs Spark restores from the
checkpoint (shuffle partitions, state store provider, state format versions),
watermark and output mode changes. --verify copies the checkpoint (and a file
sink folder) to a temporary folder, starts the query there with availableNow
and prints Spark's own answer beside the prediction. The checkpoint is never
written.

\b
Exit codes:
  0  compatible
  1  allowed with consequences
  2  bad option (bad MODULE:FUNCTION, unknown pipeline or layer, a layer Spark cannot build, --verify on a foreachBatch/foreach sink)
  3  incompatible
  4  the checkpoint is unreadable
"""


def _session() -> SparkSession:
    """The active SparkSession, else a local one without UI on a temporary workspace."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    import tempfile
    from pathlib import Path

    from streamwatch.spark.session import SessionConfig, create_session

    session, _ = create_session(SessionConfig(workspace=Path(tempfile.mkdtemp(prefix="streamwatch-compat-ws-")), ui=False))
    return session


@click.command(epilog=EPILOG)
@click.argument("path", type=str)
@click.option("--query", "query", type=str, default=None, metavar="MODULE:FUNCTION", help="Builds the changed query (a DataStreamWriter, not started).")
@click.option("--pipeline", "pipeline_name", type=str, default=None, metavar="NAME", help="Instead of --query: a bundled pipeline's layer (with --layer).")
@click.option("--layer", type=str, default=None, metavar="LAYER", help="The layer of --pipeline whose query to compare (e.g. gold).")
@click.option("--workspace", type=click.Path(file_okay=False), default=None, metavar="DIR", help="The --pipeline run's workspace (default: the one CHECKPOINT lies in, else ./streamwatch-workspace).")
@click.option("--sink", type=str, default=None, metavar="DIR", help="The checkpoint's sink folder (discovered in a streamwatch workspace).")
@click.option("--verify", is_flag=True, help="Also start the query on a temporary copy and report Spark's answer.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.compat/1, see docs/ops.md).")
def compat(path: str, query: str | None, pipeline_name: str | None, layer: str | None, workspace: str | None,
           sink: str | None, verify: bool, as_json: bool) -> None:
    """Predict whether the changed query restarts from the checkpoint at PATH."""
    if (query is None) == (pipeline_name is None) or (pipeline_name is None) != (layer is None):
        raise UsageError("give either --query MODULE:FUNCTION or --pipeline NAME --layer LAYER")
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.checkpoint.ops.compat_rules import RANK, check

    cp = read_checkpoint(path, sink=sink, full=True)  # CheckpointError: exit 4
    storage, _ = open_storage(path)
    click.echo("starting Spark to analyse the query (no batch runs)…", err=True)
    from streamwatch.spark import compat as sc

    spark = _session()
    # QueryLoadError (bad MODULE:FUNCTION, unknown pipeline or layer): exit 2
    if query is not None:
        writer = sc.load_writer(query, spark, search_path=".")
    else:
        assert pipeline_name is not None and layer is not None
        writer = sc.bundled_writer(spark, pipeline_name, layer, workspace or _workspace_of(path))
    new = sc.shape(writer)
    doc = check(cp, storage, new)
    if verify and new.sink_format in ("foreachBatch", "foreach"):
        raise UsageError(f"--verify: a {new.sink_format} sink writes where its function says, not to a folder "
                         "that can be copied (it would write the real table); compare without --verify")
    if verify:
        click.echo("--verify: starting the query on a temporary copy of the checkpoint…", err=True)
        ans = sc.verify(writer, cp.path, new.sink_path)
        predicted_ok = doc["verdict"] != "incompatible"
        doc["spark"] = {"restarted": ans.restarted, "error": ans.error, "batches_run": ans.batches_run,
                        "resumed_own_offsets": ans.resumed_own_offsets, "mismatch": ans.mismatch(),
                        "sources": [{"index": s.index, "source_id": s.source_id, "description": s.description, "start_offset": s.start_offset,
                                     "checkpoint_offset": s.checkpoint_offset, "logged_folders": list(s.logged_folders), "own": s.own}
                                    for s in ans.sources],
                        "agrees": predicted_ok == ans.resumed}
    if as_json:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        click.echo(render(doc))
    sys.exit(ExitCode(RANK[doc["verdict"]]))


def _workspace_of(checkpoint: str) -> str:
    """The workspace root a ``<root>/checkpoints/<pipeline>/<layer>`` checkpoint lies in (a
    local path made absolute, or an ``s3://`` URL), else ``./streamwatch-workspace``."""
    from streamwatch.model.location import Location, LocationError

    try:  # a Location, not a Path: an s3:// checkpoint keeps its scheme and bucket
        loc = Location.parse(checkpoint)
    except LocationError:
        return "streamwatch-workspace"
    if loc.name and loc.parent.name and loc.parent.parent.name == "checkpoints":
        return str(loc.parent.parent.parent)
    return "streamwatch-workspace"


def render(doc: dict[str, Any]) -> str:
    """The text report of a ``streamwatch.compat/1`` document."""
    label = {"compatible": "compatible", "allowed": "allowed with consequences", "incompatible": "INCOMPATIBLE"}
    out = [f"{doc['path']}: {label[doc['verdict']]}"]
    for r in doc["rules"]:
        out.append(f"  {label[r['verdict']]:<26} {r['rule']}: {r['reason']}" + (f"  [{r['checkpoint_file']}]" if r["checkpoint_file"] else ""))
    s = doc.get("spark")
    if s is not None:
        said = f"refused: {s['error']}" if not s["restarted"] else ("restarted" if s.get("mismatch") is None else f"restarted, but {s['mismatch']}")
        out.append(f"prediction: {label[doc['verdict']]} | Spark: {said} | {'agree' if s['agrees'] else 'DISAGREE'}")
    return "\n".join(out)
