"""``streamwatch doctor``: what this machine offers streamwatch."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

import click

from streamwatch.errors import ExitCode


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


@click.command()
@click.option("--probe-timeout", default=3.0, show_default=True, help="Seconds to wait for Maven Central.")
def doctor(probe_timeout: float) -> None:
    """Print Python, Java, pyspark and delta-spark versions, whether Delta
    Lake's jars can be loaded, and the table format the pipelines will use
    (Delta, or Parquet through Spark's file sink).

    Set STREAMWATCH_TABLE_FORMAT=delta|parquet|auto to force the choice and
    STREAMWATCH_DELTA_JARS=DIR to point at local Delta jars.
    """
    from streamwatch.spark.javainfo import java_version
    from streamwatch.spark.tableformat import TableFormatError, decide_table_format

    rows = [
        ("python", platform.python_version()),
        ("java", java_version() or "not found (install Java 17 and put it on PATH)"),
        ("pyspark", _version("pyspark")),
        ("delta-spark", _version("delta-spark")),
        ("textual", _version("textual")),
    ]
    try:
        d = decide_table_format(probe_timeout_s=probe_timeout)
        rows += [("delta jars", "loadable" if d.format == "delta" else "not loadable"),
                 ("table format", f"{d.format} — {d.reason}")]
        failed = False
    except TableFormatError as e:
        rows += [("table format", f"error — {e}")]
        failed = True
    for k, v in rows:
        click.echo(f"{k:<13} {v}")
    if failed:
        sys.exit(ExitCode.WARNINGS)
