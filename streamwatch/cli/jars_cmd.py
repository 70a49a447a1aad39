"""``streamwatch jars``: resolve the JVM jars matching the installed pyspark with Maven."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.option("--dest", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder to resolve into (each set in DEST/<set>/). Default: $STREAMWATCH_JARS, else the "
                   "checkout's .jars/ when it exists, else ~/.cache/streamwatch/jars/<pyspark version> — "
                   "where streamwatch looks for them.")
@click.option("--set", "sets", type=click.Choice(["spark", "kafka-broker", "s3"]), multiple=True,
              help="Jar set (repeatable). spark (default): Delta Lake + Spark's Kafka connector; "
                   "kafka-broker: a local Kafka broker for the clicks pipeline and tests; "
                   "s3: hadoop-aws + the AWS SDK bundle (~650 MB) for s3a:// workspaces.")
def jars(dest: Path | None, sets: tuple[str, ...]) -> None:
    """Resolve the JVM jars streamwatch loads into Spark (Delta Lake, the Kafka connector,
    hadoop-aws) for the installed pyspark, with Maven (mvn, cached in ~/.m2), into a folder
    streamwatch finds when it starts a session. The versions follow the installed pyspark:
    spark-sql-kafka-0-10 of the same version, the Delta release built for that Spark line,
    hadoop-aws of pyspark's Hadoop client. Nothing is downloaded at session start: without these
    jars the pipelines write Parquet tables and the Kafka pipeline is off.

    \b
    Examples:
      streamwatch jars                      Delta + Kafka connector for this pyspark
      streamwatch jars --set s3             hadoop-aws for s3a:// workspaces
      streamwatch jars --dest /opt/sw-jars  then: STREAMWATCH_JARS=/opt/sw-jars streamwatch doctor

    \b
    Exit codes:
      0  every set resolved
      2  bad option
      3  mvn is not on PATH, mvn could not resolve a set (Maven Central unreachable), or
         pyspark is not installed
      4  DEST cannot be written
    """
    from streamwatch.spark.jars import installed_spark, resolve
    from streamwatch.spark.tableformat import jars_root, user_jars_root

    spark = installed_spark()
    if dest is None:
        root = jars_root()
        # the per-user folder is per pyspark version: name the one just found, not a guess
        dest = user_jars_root(spark.version) if root == user_jars_root() else root
    for jar_set in sets or ("spark",):
        resolve(jar_set, dest, spark, progress=lambda line: click.echo(f"jars: {line}", err=True))
