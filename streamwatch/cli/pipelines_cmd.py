"""``streamwatch pipelines``: the bundled and plugged-in pipelines, with their layers."""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from streamwatch.errors import ExitCode, UsageError

if TYPE_CHECKING:  # the pipelines are discovered when the command runs, not for --help
    from streamwatch.pipeline import Pipeline

EPILOG = """\b
Examples:
  streamwatch pipelines              names and descriptions
  streamwatch pipelines -v           plus landing sources and each layer's query
  streamwatch pipelines --json       the same as JSON (schema version 1)
  streamwatch pipelines --check-spec proj/spark-pipeline.yml
                                     a Spark Declarative Pipelines spec checked,
                                     one line a problem (docs/sdp.md)

\b
Add your own: expose a Pipeline (or a function returning one) in the
entry-point group "streamwatch.pipelines" of your package, e.g.
  [project.entry-points."streamwatch.pipelines"]
  mypipe = "mypkg.pipes:pipeline"

\b
Exit codes:
  0  pipelines listed; --check-spec: the spec has no problem
  1  --check-spec: the spec has problems (one line each on stdout)
  2  bad option
  4  --check-spec: the spec cannot be read or parsed
"""


def _describe(p: Pipeline) -> dict[str, Any]:
    return {
        "name": p.name,
        "description": p.description,
        "sources": [{"name": s.name, "description": s.description} for s in p.sources],
        "layers": [
            {"name": layer.name, "query_name": p.query_name(layer), "table": layer.table,
             "output_mode": layer.output_mode, "sink": layer.sink, "description": layer.description}
            for layer in p.layers
        ],
    }


@click.command(epilog=EPILOG)
@click.option("-v", "--verbose", is_flag=True, help="Show landing sources and layers.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (schema version 1) on stdout.")
@click.option("--check-spec", "spec", default=None, metavar="SPEC",
              help="Instead: check a Spark Declarative Pipelines spec (spark-pipeline.yml, .yaml or .json) "
                   "before it runs: static confs in configuration, library globs SDP refuses or that match "
                   "nothing, storage, the catalog setting reruns need.")
def pipelines(verbose: bool, as_json: bool, spec: str | None) -> None:
    """List the pipelines `streamwatch run --pipeline` and `streamwatch land`
    accept: the bundled flights, orders, events and clicks (Kafka), and any registered in the
    `streamwatch.pipelines` entry-point group. No JVM is started.

    With --check-spec SPEC: the problems `spark-pipelines run` would meet in SPEC, one line
    each (severity, code, message), read without a JVM."""
    if spec is not None:
        if verbose or as_json:
            raise UsageError("--check-spec takes neither -v nor --json")
        sys.exit(_check_spec(spec))
    from streamwatch.pipeline import discover_pipelines

    found = [_describe(p) for _, p in sorted(discover_pipelines().items())]
    if as_json:
        click.echo(orjson.dumps({"version": 1, "pipelines": found}, option=orjson.OPT_INDENT_2).decode())
        return
    width = max((len(p["name"]) for p in found), default=0)
    for p in found:
        click.echo(f"{p['name']:<{width}}  {p['description']}")
        if verbose:
            for s in p["sources"]:
                click.echo(f"{'':<{width}}    source {s['name']}: {s['description']}")
            for layer in p["layers"]:
                sink = "memory" if layer["sink"] == "memory" else f"table {layer['table']}"
                click.echo(f"{'':<{width}}    {layer['query_name']} [{layer['output_mode']} → {sink}]: "
                           f"{layer['description']}")


def spark_defaults_file() -> Path | None:
    """The ``spark-defaults.conf`` spark-submit (so ``spark-pipelines``) reads: in
    ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``, else the installed pyspark's ``conf``
    (found without importing pyspark); None without any of them."""
    if os.environ.get("SPARK_CONF_DIR"):
        return Path(os.environ["SPARK_CONF_DIR"]) / "spark-defaults.conf"
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"]) / "conf" / "spark-defaults.conf"
    found = find_spec("pyspark")
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0]) / "conf" / "spark-defaults.conf"


def _check_spec(spec: str) -> int:
    from streamwatch.checkpoint.sdp_spec import check_spec, read_spark_defaults, read_spec

    defaults_file = spark_defaults_file()
    problems = check_spec(read_spec(spec), read_spark_defaults(defaults_file) if defaults_file else {})
    for p in problems:
        click.echo(f"{spec}: {p.line()}")
    if not problems:
        click.echo(f"{spec}: no problems")
    return ExitCode.WARNINGS if problems else ExitCode.OK
