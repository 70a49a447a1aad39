"""``streamwatch pipelines``: the bundled and plugged-in pipelines, with their layers."""

from __future__ import annotations

import click
import orjson

EPILOG = """\b
Examples:
  streamwatch pipelines              names and descriptions
  streamwatch pipelines -v           plus landing sources and each layer's query
  streamwatch pipelines --json       the same as JSON (schema version 1)

\b
Add your own: expose a Pipeline (or a function returning one) in the
entry-point group "streamwatch.pipelines" of your package, e.g.
  [project.entry-points."streamwatch.pipelines"]
  mypipe = "mypkg.pipes:pipeline"

\b
Exit codes:
  0  pipelines listed
  2  bad option
"""


def _describe(p) -> dict:
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
def pipelines(verbose: bool, as_json: bool) -> None:
    """List the pipelines `streamwatch run --pipeline` and `streamwatch land`
    accept: the bundled flights, orders, events and clicks (Kafka), and any registered in the
    `streamwatch.pipelines` entry-point group. No JVM is started."""
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
