"""Choose the table format once: Delta Lake where its JVM jars are on disk, else Parquet.

streamwatch's JVM dependencies are pinned in ``jvm/pom.xml`` and resolved for the installed
pyspark by ``streamwatch jars`` (:mod:`streamwatch.spark.jars`; ``make jars`` runs it) with
``mvn dependency:copy-dependencies`` into a local folder (:func:`jars_root`:
``$STREAMWATCH_JARS``, the checkout's ``.jars/``, or ``~/.cache/streamwatch/jars/<pyspark
version>``) with one sub-folder per set:

* ``spark``: Delta Lake (``delta-spark``, ``delta-storage``, Delta kernel) and the Spark Kafka
  connector (``spark-sql-kafka-0-10``, ``kafka-clients``, ``commons-pool2``), loaded into the
  driver with ``spark.jars``;
* ``kafka-broker``: a Kafka broker (KRaft) run in its own JVM by tests and the clicks pipeline;
* ``s3``: ``hadoop-aws`` and the AWS SDK bundle (``make jars-s3``; ``s3a://`` paths), added
  to ``spark.jars`` whenever that set is resolved.

The session never fetches anything at start: without the folder (no ``mvn`` or no Maven
Central when ``make jars`` ran) the pipelines write Parquet tables through Spark's file sink
and the Kafka pipeline is off; the reason is reported on screen and in ``streamwatch
doctor``. ``STREAMWATCH_TABLE_FORMAT=delta|parquet|auto`` forces the choice.
This module imports no pyspark (``streamwatch doctor`` uses it before any JVM starts).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from streamwatch.errors import ExitCode, StreamwatchError

ENV_FORMAT = "STREAMWATCH_TABLE_FORMAT"
ENV_JARS = "STREAMWATCH_JARS"
#: The checkout's ``.jars`` folder (``make jars`` fills it; editable installs find it here).
DEFAULT_JARS = Path(__file__).resolve().parents[2] / ".jars"
# the checkout's jvm/pom.xml; a wheel carries the same file as package data, streamwatch/jvm/pom.xml
_PACKAGED_POM = Path(__file__).resolve().parents[1] / "jvm" / "pom.xml"
POM = _PACKAGED_POM if _PACKAGED_POM.is_file() else Path(__file__).resolve().parents[2] / "jvm" / "pom.xml"
SPARK_SET, BROKER_SET, S3_SET = "spark", "kafka-broker", "s3"
JAR_SETS = (SPARK_SET, BROKER_SET, S3_SET)
NO_JARS_HINT = "run `streamwatch jars` (`make jars` in a checkout), which needs mvn and Maven Central"

# greedy artifact: ``spark-sql-kafka-0-10_2.13-4.2.0`` → (spark-sql-kafka-0-10_2.13, 4.2.0)
_JAR_NAME = re.compile(r"^(?P<artifact>.+)-(?P<version>\d+\.[\w.\-]*)\.jar$")


class TableFormatError(StreamwatchError, RuntimeError):
    """The forced table format cannot be honoured (``delta`` without Delta's jars), or
    ``STREAMWATCH_TABLE_FORMAT`` holds an unknown value."""

    exit_code = ExitCode.ERRORS


@dataclass(frozen=True, slots=True)
class JvmJar:
    """One resolved jar: ``artifact`` (Maven artifact id, e.g. ``delta-spark_4.2_2.13``),
    ``version`` (``4.4.0``), ``jar_set`` (``spark``/``kafka-broker``/``s3``) and ``path``."""

    artifact: str
    version: str
    jar_set: str
    path: Path


@dataclass(frozen=True, slots=True)
class TableFormatDecision:
    """``format`` is ``delta`` or ``parquet``; ``reason`` says why in one line; ``conf`` holds
    the Spark settings that load the JVM dependencies (``spark.jars``) and Delta's SQL
    extension and catalog; ``jars`` the jar files put on the driver's classpath;
    ``kafka`` whether Spark's Kafka source and sink are among them; ``s3`` whether Hadoop's
    S3A filesystem (``s3a://``) is."""

    format: Literal["delta", "parquet"]
    reason: str
    conf: Mapping[str, str] = field(default_factory=dict)
    jars: tuple[str, ...] = ()
    kafka: bool = False
    s3: bool = False


def user_jars_root(spark_version: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The per-user folder ``streamwatch jars`` fills outside a checkout:
    ``$XDG_CACHE_HOME/streamwatch/jars/<pyspark version>`` (``~/.cache`` without it); the
    installed pyspark's version when ``spark_version`` is None, none when pyspark is absent."""
    env = os.environ if env is None else env
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    cache = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else home / ".cache"
    if spark_version is None:
        from importlib import metadata

        try:
            spark_version = metadata.version("pyspark")
        except metadata.PackageNotFoundError:
            spark_version = "no-pyspark"
    return cache / "streamwatch" / "jars" / spark_version


def jars_root(env: Mapping[str, str] | None = None) -> Path:
    """The resolved-jars folder: ``$STREAMWATCH_JARS``, else the checkout's ``.jars`` when it
    exists, else :func:`user_jars_root` (jars matching the installed pyspark)."""
    env = os.environ if env is None else env
    if env.get(ENV_JARS):
        return Path(env[ENV_JARS])
    return DEFAULT_JARS if DEFAULT_JARS.is_dir() else user_jars_root(env=env)


def resolved_jars(jar_set: str, env: Mapping[str, str] | None = None) -> list[JvmJar]:
    """Jars of one set (``spark``, ``kafka-broker``, ``s3``) that ``make jars`` resolved, sorted
    by artifact; empty when the set was never resolved (``make jars`` writes ``.resolved`` in
    the folder only after Maven copied every jar, so a half-copied folder counts as absent)."""
    folder = jars_root(env) / jar_set
    if not (folder / ".resolved").is_file():
        return []
    out = []
    for p in sorted(folder.glob("*.jar")):
        m = _JAR_NAME.match(p.name)
        artifact, version = (m["artifact"], m["version"]) if m else (p.stem, "?")
        out.append(JvmJar(artifact, version, jar_set, p))
    return out


def _find(jars: list[JvmJar], prefix: str) -> JvmJar | None:
    return next((j for j in jars if j.artifact.startswith(prefix)), None)


def _delta_conf(jar_paths: list[str]) -> dict[str, str]:
    return {
        "spark.jars": ",".join(jar_paths),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    }


def decide_table_format(
    env: Mapping[str, str] | None = None, forced: str | None = None
) -> TableFormatDecision:
    """Decide Delta or Parquet from what ``make jars`` resolved; never touches the network.

    ``forced`` (or ``$STREAMWATCH_TABLE_FORMAT``) is ``delta``, ``parquet`` or ``auto``
    (default). The Kafka connector and the S3 set (``hadoop-aws``) are loaded whenever
    resolved, whatever the table format.
    Raises :class:`TableFormatError` when ``delta`` is forced but Delta's jars are absent,
    or the setting is not one of ``delta``, ``parquet``, ``auto``.
    """
    env = os.environ if env is None else env
    wanted = (forced or env.get(ENV_FORMAT) or "auto").strip().lower()
    if wanted not in ("auto", "delta", "parquet"):
        raise TableFormatError(f"{ENV_FORMAT}={wanted!r}: expected delta, parquet or auto")
    jars = resolved_jars(SPARK_SET, env)
    s3_jars = resolved_jars(S3_SET, env)
    s3 = _find(s3_jars, "hadoop-aws") is not None
    paths = [str(j.path) for j in (*jars, *(s3_jars if s3 else ()))]
    kafka = _find(jars, "spark-sql-kafka") is not None
    delta = _find(jars, "delta-spark")
    folder = jars_root(env) / SPARK_SET
    if wanted == "parquet":
        conf = {"spark.jars": ",".join(paths)} if paths else {}
        how = "forced by setting" if forced else f"forced by {ENV_FORMAT}=parquet"
        return TableFormatDecision("parquet", how, conf, tuple(paths), kafka, s3)
    if delta is not None and _find(jars, "delta-storage") is not None:
        return TableFormatDecision(
            "delta", f"Delta {delta.version} jars from {folder}", _delta_conf(paths), tuple(paths), kafka, s3,
        )
    if wanted == "delta":
        raise TableFormatError(f"{ENV_FORMAT}=delta but Delta's jars are not in {folder}: {NO_JARS_HINT}")
    return TableFormatDecision(
        "parquet", f"no Delta jars in {folder} ({NO_JARS_HINT}); Parquet tables, no Kafka",
        {"spark.jars": ",".join(paths)} if s3 else {}, tuple(paths) if s3 else (), False, s3,
    )


@dataclass(frozen=True, slots=True)
class PinnedArtifact:
    """One dependency pinned in ``jvm/pom.xml``: ``group:artifact:version`` and its profile
    (the jar set it is resolved into)."""

    group: str
    artifact: str
    version: str
    jar_set: str


def pinned_artifacts(pom: Path = POM) -> list[PinnedArtifact]:
    """The direct dependencies ``jvm/pom.xml`` pins, per profile, with ``${…}`` properties
    expanded; empty when the POM is absent (a non-editable install). Raises nothing for a
    missing file; ``xml.etree.ElementTree.ParseError`` for a malformed one."""
    import xml.etree.ElementTree as ET

    if not pom.is_file():
        return []
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.parse(pom).getroot()
    props = {el.tag.split("}")[1]: (el.text or "") for el in root.find("m:properties", ns) or []}

    def expand(text: str | None) -> str:
        return re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m[1], m[0]), text or "")

    out = []
    for profile in root.iterfind("m:profiles/m:profile", ns):
        pid = profile.findtext("m:id", "", ns)
        for dep in profile.iterfind("m:dependencies/m:dependency", ns):
            out.append(PinnedArtifact(
                expand(dep.findtext("m:groupId", "", ns)), expand(dep.findtext("m:artifactId", "", ns)),
                expand(dep.findtext("m:version", "", ns)), pid,
            ))
    return out
