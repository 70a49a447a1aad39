"""SparkSession factory: local master, Spark UI on, JVM output kept out of the terminal.

The JVM that pyspark launches inherits the terminal's stdout/stderr, so Spark's log lines
would be drawn over the dashboard. :func:`create_session` launches the gateway itself with
both streams sent to ``<workspace>/logs/spark.log`` (``quiet=True``).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from streamwatch.model.runtime import SessionInfo
from streamwatch.spark.tableformat import TableFormatDecision, decide_table_format


@dataclass(frozen=True)
class SessionConfig:
    """How to build the session. ``workspace`` holds ``logs/spark.log`` and the warehouse;
    ``shuffle_partitions`` defaults to 4 (the machine has few cores; Spark's 200 would make
    every stateful micro-batch slow); ``ui`` turns the Spark UI on (port 4040 or the next
    free one); ``conf`` adds or overrides Spark settings."""

    workspace: Path
    master: str = "local[*]"
    app_name: str = "streamwatch"
    ui: bool = True
    quiet: bool = True
    shuffle_partitions: int = 4
    table_format: TableFormatDecision | None = None
    conf: Mapping[str, str] = field(default_factory=dict)


def _spark_conf(cfg: SessionConfig, decision: TableFormatDecision) -> SparkConf:
    warehouse = (cfg.workspace / "warehouse").resolve()
    conf = (
        SparkConf()
        .setMaster(cfg.master)
        .setAppName(cfg.app_name)
        .set("spark.ui.enabled", "true" if cfg.ui else "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.sql.shuffle.partitions", str(cfg.shuffle_partitions))
        .set("spark.sql.warehouse.dir", str(warehouse))
        .set("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
        .set("spark.sql.streaming.metricsEnabled", "true")
    )
    for k, v in {**decision.conf, **cfg.conf}.items():
        conf.set(k, v)
    return conf


def create_session(cfg: SessionConfig) -> tuple[SparkSession, SessionInfo]:
    """Start (or reuse) the process's SparkSession and describe it.

    Takes ~6 s on a 2-core machine for a cold JVM. Raises
    :class:`~streamwatch.spark.tableformat.TableFormatError` for an impossible forced table
    format, and pyspark's ``PySparkRuntimeError`` when Java cannot be started.
    """
    decision = cfg.table_format or decide_table_format()
    log_dir = cfg.workspace / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_dir / "spark.log"
    conf = _spark_conf(cfg, decision)
    if SparkContext._active_spark_context is None:  # noqa: SLF001 - pyspark's own registry
        if cfg.quiet:
            from pyspark.java_gateway import launch_gateway

            with open(log_file, "ab") as out:
                gateway = launch_gateway(
                    conf, popen_kwargs={"stdout": out, "stderr": subprocess.STDOUT}
                )
            SparkContext(conf=conf, gateway=gateway)
        else:
            SparkContext(conf=conf)
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    info = SessionInfo(
        spark_version=spark.version,
        master=spark.sparkContext.master,
        ui_url=spark.sparkContext.uiWebUrl,
        table_format=decision.format,
        table_format_reason=decision.reason,
        log_file=str(log_file),
    )
    return spark, info
