"""Choose the table format once: Delta Lake where its JVM jars can be loaded, else Parquet.

Delta Lake's jars are not part of pyspark; they come from a local directory, the Ivy cache
of an earlier download, or Maven Central (``configure_spark_with_delta_pip``). Resolving from
an unreachable Maven hangs for minutes, so the decision is made up front, bounded by a short
HTTP probe, and can be forced with ``STREAMWATCH_TABLE_FORMAT=delta|parquet|auto``.
This module imports no pyspark (``streamwatch doctor`` uses it before any JVM starts).
"""

from __future__ import annotations

import glob
import os
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib import metadata
from typing import Literal, Mapping

from streamwatch.errors import ExitCode, StreamwatchError

ENV_FORMAT = "STREAMWATCH_TABLE_FORMAT"
ENV_JARS = "STREAMWATCH_DELTA_JARS"
MAVEN = "https://repo1.maven.org/maven2"
SCALA = "2.13"


class TableFormatError(StreamwatchError, RuntimeError):
    """The forced table format cannot be honoured (e.g. ``delta`` without loadable jars),
    or ``STREAMWATCH_TABLE_FORMAT`` holds an unknown value."""

    exit_code = ExitCode.ERRORS


@dataclass(frozen=True, slots=True)
class TableFormatDecision:
    """``format`` is ``delta`` or ``parquet``; ``reason`` says why in one line; ``conf`` holds
    the Spark settings that make the choice work (``spark.jars`` or ``spark.jars.packages``
    and Delta's SQL extension and catalog)."""

    format: Literal["delta", "parquet"]
    reason: str
    conf: Mapping[str, str] = field(default_factory=dict)


def delta_artifact() -> tuple[str, str] | None:
    """(artifact id, version) of the Delta jar matching the installed delta-spark and pyspark,
    e.g. ``("delta-spark_4.2_2.13", "4.4.1")``, as ``configure_spark_with_delta_pip`` names it;
    None when either package is missing."""
    try:
        delta_version = metadata.version("delta-spark")
        spark_version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None
    major_minor = ".".join(spark_version.split(".")[:2])
    return f"delta-spark_{major_minor}_{SCALA}", delta_version


def _delta_conf(jar_conf: Mapping[str, str]) -> dict[str, str]:
    return {
        **jar_conf,
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }


def _local_jars(artifact: str, version: str, env: Mapping[str, str]) -> list[str] | None:
    """Jars for Delta from ``$STREAMWATCH_DELTA_JARS`` or the Ivy caches Spark fills."""
    dirs = [env[ENV_JARS]] if env.get(ENV_JARS) else []
    home = os.path.expanduser("~")
    dirs += [os.path.join(home, ".ivy2.5.2", "jars"), os.path.join(home, ".ivy2", "jars")]
    for d in dirs:
        spark_jar = glob.glob(os.path.join(d, f"*{artifact}-{version}.jar"))
        storage_jar = glob.glob(os.path.join(d, f"*delta-storage-{version}.jar"))
        if spark_jar and storage_jar:
            return [spark_jar[0], storage_jar[0]]
    return None


def probe_maven(artifact: str, version: str, timeout_s: float = 3.0) -> tuple[bool, str]:
    """HEAD the artifact's POM on Maven Central within ``timeout_s`` seconds.

    Returns (reachable-and-published, one-line detail). Never raises."""
    url = f"{MAVEN}/io/delta/{artifact}/{version}/{artifact}-{version}.pom"
    req = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status == 200, f"Maven Central answered {resp.status}"
    except urllib.error.HTTPError as e:
        return False, f"Maven Central answered {e.code} for io.delta:{artifact}:{version}"
    except Exception as e:  # DNS failure, refused, timeout …
        return False, f"Maven Central unreachable ({type(e).__name__})"


def decide_table_format(
    env: Mapping[str, str] | None = None, probe_timeout_s: float = 3.0
) -> TableFormatDecision:
    """Decide Delta or Parquet, bounded by ``probe_timeout_s`` seconds of network probing.

    Order: the ``STREAMWATCH_TABLE_FORMAT`` setting; local Delta jars; Maven Central.
    Raises :class:`TableFormatError` when ``delta`` is forced but cannot load, or the
    setting is not one of ``delta``, ``parquet``, ``auto``.
    """
    env = os.environ if env is None else env
    wanted = (env.get(ENV_FORMAT) or "auto").strip().lower()
    if wanted not in ("auto", "delta", "parquet"):
        raise TableFormatError(f"{ENV_FORMAT}={wanted!r}: expected delta, parquet or auto")
    if wanted == "parquet":
        return TableFormatDecision("parquet", f"forced by {ENV_FORMAT}=parquet")
    artifact = delta_artifact()
    if artifact is None:
        if wanted == "delta":
            raise TableFormatError("delta-spark is not installed; cannot use Delta tables")
        return TableFormatDecision("parquet", "delta-spark is not installed")
    name, version = artifact
    jars = _local_jars(name, version, env)
    if jars:
        return TableFormatDecision(
            "delta", f"Delta {version} jars found locally ({os.path.dirname(jars[0])})",
            _delta_conf({"spark.jars": ",".join(jars)}),
        )
    ok, detail = probe_maven(name, version, probe_timeout_s)
    if ok:
        return TableFormatDecision(
            "delta", f"Delta {version} jars will be downloaded ({detail})",
            _delta_conf({"spark.jars.packages": f"io.delta:{name}:{version}"}),
        )
    if wanted == "delta":
        raise TableFormatError(
            f"{ENV_FORMAT}=delta but Delta jars cannot be loaded: no local jars "
            f"(set {ENV_JARS}) and {detail}"
        )
    return TableFormatDecision(
        "parquet", f"Delta jars not available: none local and {detail}; using Parquet tables"
    )
