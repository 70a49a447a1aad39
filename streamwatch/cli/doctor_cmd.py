"""``streamwatch doctor``: what this machine offers streamwatch."""

from __future__ import annotations

import platform
import sys
from importlib import metadata

import click

from streamwatch.errors import ExitCode, NotInstalled


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


@click.command()
def doctor() -> None:
    """Print Python, Java, pyspark and delta-spark versions, every JVM dependency
    `streamwatch jars` resolves for the installed pyspark (jvm/pom.xml's pins when no pyspark
    is installed) with the version resolved and where it is loaded from, and the table format
    the pipelines will use (Delta, or Parquet through Spark's file sink).

    \b
    Examples:
      streamwatch doctor
      STREAMWATCH_TABLE_FORMAT=parquet streamwatch doctor
      STREAMWATCH_JARS=/opt/streamwatch-jars streamwatch doctor

    JVM jars come from `streamwatch jars` (mvn; into $STREAMWATCH_JARS, else the
    checkout's .jars/ when it exists, else ~/.cache/streamwatch/jars/<pyspark version>);
    nothing is downloaded at session start.

    \b
    Exit codes:
      0  report printed
      1  a forced table format (STREAMWATCH_TABLE_FORMAT) cannot be honoured
      2  bad option
    """
    rows = [
        ("python", platform.python_version()),
        ("java", _java()),
        ("pyspark", _version("pyspark")),
        ("delta-spark", _version("delta-spark")),
        ("textual", _version("textual")),
    ]
    for k, v in rows:
        click.echo(f"{k:<13} {v}")
    _print_jars()
    if not _print_table_format():
        sys.exit(ExitCode.WARNINGS)


def _java() -> str:
    from streamwatch.spark.javainfo import java_version

    return java_version() or "not found (install Java 17 and put it on PATH)"


def _print_jars() -> None:
    """Each JVM dependency for the installed pyspark (the POM's pins without one): the version
    resolved and its jar, or why it is not resolved; then the jars found per jar set."""
    from streamwatch.spark.jars import DELTA_FOR_SPARK, installed_spark, planned_artifacts
    from streamwatch.spark.tableformat import JAR_SETS, NO_JARS_HINT, jars_root, pinned_artifacts, resolved_jars

    root = jars_root()
    try:
        spark = installed_spark()
    except NotInstalled:  # no pyspark: the POM's own pins are what `streamwatch jars` would start from
        spark = None
    if spark is None:
        artifacts = pinned_artifacts()
        click.echo(f"\nJVM dependencies (jvm/pom.xml → {root}):")
    else:
        artifacts = planned_artifacts(spark)
        click.echo(f"\nJVM dependencies for pyspark {spark.version} (jvm/pom.xml → {root}):")
        if spark.line not in DELTA_FOR_SPARK:
            click.echo(f"  no Delta Lake release for Spark {spark.line} known to streamwatch (Parquet tables)")
    resolved = {s: {j.artifact: j for j in resolved_jars(s)} for s in JAR_SETS}
    for a in artifacts:
        jar = resolved[a.jar_set].get(a.artifact)
        where = f"{jar.version} from {jar.path}" if jar else f"not resolved ({NO_JARS_HINT})"
        if jar is not None and jar.version != a.version:
            where += f" (resolved for another pyspark: {NO_JARS_HINT})"
        if jar is None and a.jar_set == "s3":
            where = "not resolved (`streamwatch jars --set s3`: only for s3a:// workspaces)"
        click.echo(f"  {a.jar_set:<13} {a.group + ':' + a.artifact + ':' + a.version:<52} {where}")
    for s in JAR_SETS:
        if resolved[s]:
            click.echo(f"  {s:<13} {len(resolved[s])} jars in {root / s}")


def _print_table_format() -> bool:
    """The table format the pipelines will use and whether Kafka and s3a:// load; False when
    a forced format (STREAMWATCH_TABLE_FORMAT) cannot be honoured."""
    from streamwatch.spark.tableformat import NO_JARS_HINT, TableFormatError, decide_table_format

    try:
        d = decide_table_format()
        click.echo(f"\n{'table format':<13} {d.format} — {d.reason}")
        click.echo(f"{'kafka':<13} {'Spark Kafka source/sink loadable' if d.kafka else 'off (' + NO_JARS_HINT + ')'}")
        click.echo(f"{'s3a':<13} {'Spark reads and writes s3a:// (hadoop-aws loaded)' if d.s3 else 'off (streamwatch jars --set s3)'}")
    except TableFormatError as e:
        click.echo(f"\n{'table format':<13} error — {e}")
        return False
    return True
