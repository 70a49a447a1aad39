"""SparkSession factory: local or cluster master, Spark UI on, JVM output kept out of the
terminal.

The master is ``local[*]`` unless ``--master URL`` or the ``STREAMWATCH_MASTER`` setting says
otherwise (``spark://host:7077`` for a standalone cluster, ``yarn``, ``k8s://…``); on a cluster
the session waits briefly for the first executor so the dashboard can show how many there are.

The JVM that pyspark launches inherits the terminal's stdout/stderr, so Spark's log lines
would be drawn over the dashboard. :func:`create_session` launches the gateway itself with
both streams sent to ``<workspace>/logs/spark.log`` (``quiet=True``).

JVM dependencies (Delta Lake, the Kafka connector) are loaded from the jars ``make jars``
resolved (:mod:`streamwatch.spark.tableformat`) with ``spark.jars``; the session never fetches
from Maven or Ivy at start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from streamwatch.model.runtime import SessionInfo
from streamwatch.spark.tableformat import TableFormatDecision, decide_table_format

MASTER_ENV = "STREAMWATCH_MASTER"
DEFAULT_MASTER = "local[*]"


def default_master() -> str:
    """The master URL to use when none is given: ``$STREAMWATCH_MASTER`` or ``local[*]``."""
    return os.environ.get(MASTER_ENV, "").strip() or DEFAULT_MASTER


def is_local_master(master: str) -> bool:
    """True for ``local``, ``local[N]``, ``local[*]`` and ``local[N,F]``: the driver runs the
    tasks itself (``local-cluster[…]`` starts executor processes, so it is not)."""
    return master == "local" or master.startswith("local[")


@dataclass(frozen=True)
class SessionConfig:
    """How to build the session. ``workspace`` holds ``logs/spark.log`` and the warehouse;
    ``shuffle_partitions`` defaults to 4 (the machine has few cores; Spark's 200 would make
    every stateful micro-batch slow); ``ui`` turns the Spark UI on (port 4040 or the next
    free one); ``conf`` adds or overrides Spark settings. ``master`` is Spark's master URL
    (default: :func:`default_master`); ``executor_wait_s`` is how long (s) to wait for the
    first executor of a cluster master before describing the session (0: do not wait)."""

    workspace: Path
    master: str = field(default_factory=default_master)
    app_name: str = "streamwatch"
    ui: bool = True
    quiet: bool = True
    shuffle_partitions: int = 4
    table_format: TableFormatDecision | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    executor_wait_s: float = 30.0


def s3a_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Spark settings pointing Hadoop's S3A connector (``s3a://``) at the S3 endpoint that
    boto3 and s3fs (``s3://``, streamwatch's readers) use, so Spark and the readers see one
    store: ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` → ``fs.s3a.endpoint`` with
    path-style access (S3-compatible servers such as MinIO expect it) and SSL as the URL's
    scheme says; ``AWS_REGION``/``AWS_DEFAULT_REGION`` → ``fs.s3a.endpoint.region``. Empty
    without an endpoint variable (AWS's own S3: S3A's defaults). Credentials need no setting:
    S3A's default chain reads ``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, profiles and
    instance roles. ``SessionConfig.conf`` overrides any of these."""
    env = os.environ if env is None else env
    endpoint = (env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or "").strip()
    if not endpoint:
        return {}
    out = {"spark.hadoop.fs.s3a.endpoint": endpoint, "spark.hadoop.fs.s3a.path.style.access": "true",
           "spark.hadoop.fs.s3a.connection.ssl.enabled": "false" if endpoint.startswith("http://") else "true"}
    region = (env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "").strip()
    if region:
        out["spark.hadoop.fs.s3a.endpoint.region"] = region
    return out


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
    if decision.format == "delta":
        # Delta rebuilds a table's snapshot with 50 partitions by default: on small tables and
        # few cores that dominates every micro-batch; follow the session's shuffle partitions
        conf.set("spark.databricks.delta.snapshotPartitions", str(cfg.shuffle_partitions))
    for k, v in {**(s3a_settings() if decision.s3 else {}), **decision.conf, **cfg.conf}.items():
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
        # Python workers (pandas UDFs, applyInPandasWithState) run this interpreter, not the
        # first `python3` on PATH (which lacks the venv's pyarrow/pandas).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        if cfg.quiet:
            from pyspark.java_gateway import launch_gateway

            with open(log_file, "ab") as out:
                # pyspark leaves launch_gateway unannotated
                gateway = launch_gateway(  # type: ignore[no-untyped-call]
                    conf, popen_kwargs={"stdout": out, "stderr": subprocess.STDOUT}
                )
            SparkContext(conf=conf, gateway=gateway)
        else:
            SparkContext(conf=conf)
    spark = SparkSession.builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    master = context_master(spark.sparkContext)
    if not is_local_master(master) and cfg.executor_wait_s > 0:
        wait_for_executors(spark, 1, cfg.executor_wait_s)
    info = SessionInfo(
        spark_version=spark.version,
        master=master,
        ui_url=spark.sparkContext.uiWebUrl,
        table_format=decision.format,
        table_format_reason=decision.reason,
        log_file=str(log_file),
        executors=executor_count(spark),
        local_cores=local_cores(spark),
    )
    return spark, info


def context_master(sc: SparkContext) -> str:
    """The master URL a running SparkContext was started with (``spark.master``; pyspark
    types it optional, a started context always has one: ``unknown`` otherwise)."""
    return sc.master or "unknown"


def local_cores(spark: SparkSession) -> int | None:
    """Cores the driver runs tasks on in local mode (``local[*]`` resolved: Spark's
    ``defaultParallelism``, i.e. the ``local[N]`` thread count); None on a cluster or a
    stopped context."""
    try:
        sc = spark.sparkContext
        return int(sc.defaultParallelism) if is_local_master(context_master(sc)) else None
    except Exception:  # noqa: BLE001 - a stopped context
        return None


def executor_count(spark: SparkSession) -> int | None:
    """Executors registered with the driver right now, the driver itself not counted (so 0 in
    local mode, where the driver runs the tasks); mirrors the Spark UI's Executors tab.
    None when the session is stopped."""
    try:
        sc = spark.sparkContext
        return max(0, len(sc._jsc.sc().statusTracker().getExecutorInfos()) - 1)  # noqa: SLF001
    except Exception:  # noqa: BLE001 - a stopped context
        return None


def wait_for_executors(spark: SparkSession, n: int = 1, timeout_s: float = 30.0) -> int:
    """Wait up to ``timeout_s`` seconds until at least ``n`` executors are registered; returns
    how many there are (possibly fewer: a busy cluster may grant them later). Never raises."""
    deadline = time.monotonic() + timeout_s
    count = executor_count(spark) or 0
    while count < n and time.monotonic() < deadline:
        time.sleep(0.2)
        count = executor_count(spark) or 0
    return count
