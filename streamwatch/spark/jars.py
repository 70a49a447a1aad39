"""Resolve streamwatch's JVM jars for the installed pyspark with Maven (``streamwatch jars``).

The jar sets are the profiles of ``jvm/pom.xml`` (shipped in the wheel as
``streamwatch/jvm/pom.xml``): ``spark`` (Delta Lake + Spark's Kafka connector, put on
``spark.jars``), ``kafka-broker`` (a KRaft broker run in its own JVM) and ``s3`` (``hadoop-aws``).
The POM pins the versions matching the pyspark the project pins; for any other installed
pyspark the Spark-dependent properties are overridden on mvn's command line:

* ``spark.version`` — the installed pyspark's version (the Kafka connector
  ``spark-sql-kafka-0-10_<scala>:<pyspark version>``);
* ``scala.binary``, ``jackson.version``, ``hadoop.version`` — read from the jars pyspark ships
  (``scala-library-2.13.17.jar`` → ``2.13``, ``jackson-databind-…``, ``hadoop-client-api-…``):
  ``hadoop-aws`` must equal Hadoop's client version, Delta's ``jackson-datatype-jdk8`` pyspark's
  Jackson;
* ``delta.artifact``/``delta.version`` — the Delta release built for that Spark line
  (:data:`DELTA_FOR_SPARK`); a line without one resolves the Kafka connector alone;
* ``kafka.version`` — the ``kafka-clients`` that Spark line builds against (:data:`KAFKA_FOR_SPARK`).

``mvn dependency:copy-dependencies`` copies a set into a temporary folder beside the
destination, which is renamed to ``<dest>/<set>/`` with a ``.resolved`` marker only when every
jar arrived (:func:`streamwatch.spark.tableformat.resolved_jars` ignores a folder without it).
Nothing here imports pyspark.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata, util
from pathlib import Path

from streamwatch.errors import ExitCode, NotInstalled, StreamwatchError, Unreadable
from streamwatch.spark.tableformat import BROKER_SET, JAR_SETS, POM, S3_SET, SPARK_SET, PinnedArtifact

#: Delta release per Spark line (``major.minor``): artifact id (``{scala}`` = Scala binary
#: version) and version. Delta 3.3 is the last release for Spark 3.5; from Delta 4.1 on, Maven
#: Central carries one ``delta-spark_<spark line>_<scala>`` artifact per Spark line.
DELTA_FOR_SPARK: dict[str, tuple[str, str]] = {
    "3.5": ("delta-spark_{scala}", "3.3.2"),
    "4.0": ("delta-spark_4.0_{scala}", "4.4.0"),
    "4.1": ("delta-spark_4.1_{scala}", "4.4.0"),
    "4.2": ("delta-spark_4.2_{scala}", "4.4.0"),
}
#: ``kafka-clients`` per Spark line: the ``kafka.version`` of Spark's own parent POM.
KAFKA_FOR_SPARK: dict[str, str] = {"3.5": "3.4.1", "4.0": "3.9.1", "4.1": "3.9.1", "4.2": "3.9.2"}

#: What is off without each set (one clause of the error line).
OFF_WITHOUT: dict[str, str] = {
    SPARK_SET: "Delta tables and the Kafka pipeline are off (Parquet tables)",
    BROKER_SET: "no local Kafka broker (the clicks pipeline needs --kafka-bootstrap)",
    S3_SET: "Spark cannot write s3a:// (the S3 tests skip)",
}

_POM_NS = "http://maven.apache.org/POM/4.0.0"
# greedy artifact: the version is the last ``-<digits>.…`` before ``.jar``
_JAR_NAME = re.compile(r"^(?P<artifact>.+)-(?P<version>\d+\.[\w.\-]*)\.jar$")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class MavenMissing(StreamwatchError):
    """``mvn`` (or ``$MVN``) is not on PATH. Exit 3, like any missing dependency."""

    exit_code = ExitCode.ERRORS


class ResolveFailed(StreamwatchError):
    """mvn ran and could not resolve a set (Maven Central unreachable, an artifact missing);
    the message carries mvn's first ``[ERROR]`` line. Exit 3."""

    exit_code = ExitCode.ERRORS


@dataclass(frozen=True, slots=True)
class InstalledSpark:
    """The pyspark the jars must match: ``version`` (``4.2.0``), ``scala`` binary version
    (``2.13``), the ``hadoop``/``jackson`` versions of the jars it ships (None when absent) and
    the artifact names of all of them (``shipped``: ``antlr4-runtime``, ``scala-library`` …)."""

    version: str
    scala: str
    hadoop: str | None
    jackson: str | None
    shipped: frozenset[str] = frozenset()

    @property
    def line(self) -> str:
        """``major.minor`` (``4.2``)."""
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True, slots=True)
class ResolvePlan:
    """How one set is resolved: mvn ``properties`` (``-Dk=v``), ``without_delta`` (the Spark
    line has no Delta release: the POM's ``io.delta`` dependencies are dropped) and ``notes``,
    one progress line each."""

    jar_set: str
    properties: Mapping[str, str] = field(default_factory=dict)
    without_delta: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ResolvedSet:
    """A set in place: its ``folder`` (``<dest>/<set>``) and the ``jars`` (file names) in it."""

    jar_set: str
    folder: Path
    jars: tuple[str, ...]


def artifact_of(jar_name: str) -> str:
    """``antlr4-runtime-4.9.3.jar`` → ``antlr4-runtime``, ``spark-sql-kafka-0-10_2.13-4.2.0.jar`` →
    ``spark-sql-kafka-0-10_2.13`` (Maven's ``<artifact>-<version>.jar``; the name itself when
    no version follows)."""
    m = _JAR_NAME.match(jar_name)
    return m["artifact"] if m else jar_name.removesuffix(".jar")


def _version_of(folder: Path, prefix: str) -> str | None:
    for p in sorted(folder.glob(f"{prefix}-*.jar")):
        m = re.fullmatch(re.escape(prefix) + r"-(\d[\w.\-]*)\.jar", p.name)
        if m:
            return m[1]
    return None


def installed_spark() -> InstalledSpark:
    """The installed pyspark (found without importing it). Raises :class:`NotInstalled` when
    there is none, or it ships no ``jars/`` folder with Scala's library (a pyspark this
    function cannot read)."""
    spec = util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise NotInstalled("the JVM jars match the installed pyspark, and pyspark is not installed: "
                           "pip install 'streamwatch[spark]'")
    home = Path(spec.origin).parent
    try:
        version = metadata.version("pyspark")
    except metadata.PackageNotFoundError:  # pyspark from $SPARK_HOME/python on PYTHONPATH
        m = re.search(r"__version__[^=]*=\s*['\"]([^'\"]+)['\"]", (home / "version.py").read_text())
        if m is None:
            raise NotInstalled(f"cannot tell the version of the pyspark in {home}") from None
        version = m[1]
    jars = home / "jars"
    scala_library = _version_of(jars, "scala-library")
    if scala_library is None:
        raise NotInstalled(f"the pyspark in {home} ships no jars/scala-library-*.jar: cannot tell its Scala version")
    return InstalledSpark(version, ".".join(scala_library.split(".")[:2]),
                          _version_of(jars, "hadoop-client-api"), _version_of(jars, "jackson-databind"),
                          frozenset(artifact_of(p.name) for p in jars.glob("*.jar")))


def pom_properties(pom: Path = POM) -> dict[str, str]:
    """``<properties>`` of the POM, by name. Raises ``OSError`` / ``ET.ParseError``."""
    root = ET.parse(pom).getroot()
    props = root.find(f"{{{_POM_NS}}}properties")
    return {el.tag.split("}")[1]: (el.text or "").strip() for el in (props if props is not None else [])}


def plan(jar_set: str, spark: InstalledSpark, pom: Path = POM) -> ResolvePlan:
    """The mvn properties that make ``jar_set`` match ``spark`` (none when the POM already pins
    that pyspark). Raises ``KeyError`` for an unknown set."""
    if jar_set not in JAR_SETS:
        raise KeyError(jar_set)
    pinned = pom_properties(pom)
    if jar_set == BROKER_SET:  # its own JVM: independent of the driver's Spark and Scala
        return ResolvePlan(jar_set)
    props = {"spark.version": spark.version, "scala.binary": spark.scala}
    if spark.hadoop:
        props["hadoop.version"] = spark.hadoop
    if jar_set == S3_SET:
        return ResolvePlan(jar_set, _changed(props, pinned))
    if spark.jackson:
        props["jackson.version"] = spark.jackson
    if spark.line in KAFKA_FOR_SPARK:
        props["kafka.version"] = KAFKA_FOR_SPARK[spark.line]
    notes: list[str] = []
    delta = DELTA_FOR_SPARK.get(spark.line)
    if delta is None:
        notes.append(f"no Delta Lake release for Spark {spark.line} known to streamwatch: "
                     "resolving the Kafka connector only (Parquet tables)")
    else:
        props["delta.artifact"], props["delta.version"] = delta[0].format(scala=spark.scala), delta[1]
    return ResolvePlan(jar_set, _changed(props, pinned), delta is None, tuple(notes))


def planned_artifacts(spark: InstalledSpark, pom: Path = POM) -> list[PinnedArtifact]:
    """The direct dependencies ``streamwatch jars`` resolves for ``spark``, per jar set: the
    POM's ``<dependency>`` pins with ``${…}`` expanded from its properties overridden by
    :func:`plan` (``spark-sql-kafka-0-10_2.12:3.5.7`` for pyspark 3.5.7), the ``io.delta``
    ones left out where the Spark line has no Delta release. Empty when the POM is absent.
    Raises ``xml.etree.ElementTree.ParseError`` for a malformed POM."""
    if not pom.is_file():
        return []
    ns = {"m": _POM_NS}
    root = ET.parse(pom).getroot()
    pinned = pom_properties(pom)
    out: list[PinnedArtifact] = []
    for profile in root.iterfind("m:profiles/m:profile", ns):
        jar_set = profile.findtext("m:id", "", ns)
        how = plan(jar_set, spark, pom) if jar_set in JAR_SETS else ResolvePlan(jar_set)
        props = {**pinned, **how.properties}

        def expand(text: str | None, props: Mapping[str, str] = props) -> str:
            return re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m[1], m[0]), text or "")

        for dep in profile.iterfind("m:dependencies/m:dependency", ns):
            group = expand(dep.findtext("m:groupId", "", ns))
            if how.without_delta and group == "io.delta":
                continue
            out.append(PinnedArtifact(group, expand(dep.findtext("m:artifactId", "", ns)),
                                      expand(dep.findtext("m:version", "", ns)), jar_set))
    return out


def _changed(props: dict[str, str], pinned: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in props.items() if pinned.get(k) != v}


def _pom_without_delta(pom: Path, out: Path) -> Path:
    """A copy of ``pom`` whose ``spark`` profile lacks the ``io.delta`` dependencies."""
    ET.register_namespace("", _POM_NS)
    tree = ET.parse(pom)
    ns = {"m": _POM_NS}
    for profile in tree.getroot().iterfind("m:profiles/m:profile", ns):
        if profile.findtext("m:id", "", ns) != SPARK_SET:
            continue
        deps = profile.find("m:dependencies", ns)
        for dep in list(deps if deps is not None else []):
            if dep.findtext("m:groupId", "", ns) == "io.delta" and deps is not None:
                deps.remove(dep)
    tree.write(out, encoding="utf-8", xml_declaration=True)
    return out


def _staging(dest: Path, jar_set: str) -> Path:
    """A new, empty hidden sibling of ``dest/<jar_set>`` (same filesystem: its rename is
    atomic), made with the user's umask like the folder it becomes. Raises
    :class:`Unreadable` when ``dest`` cannot be written."""
    tmp = dest / f".{jar_set}.{os.getpid()}"
    try:
        dest.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
    except OSError as e:
        raise Unreadable(f"cannot write {dest}: {e.strerror or e}") from None
    return tmp


def _copy_dependencies(mvn: str, pom: Path, jar_set: str, out: Path, how: ResolvePlan, log: Path,
                       env: Mapping[str, str]) -> None:
    """``mvn dependency:copy-dependencies`` of ``jar_set``'s profile of ``pom`` into ``out``
    (mvn's output to ``log``). Raises :class:`ResolveFailed` with mvn's first error line."""
    argv = [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(pom), "-P", jar_set,
            "dependency:copy-dependencies", f"-DoutputDirectory={out}",
            *(f"-D{k}={v}" for k, v in how.properties.items())]
    with log.open("wb") as fh:
        rc = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=dict(env)).returncode
    if rc != 0:
        text = _ANSI.sub("", log.read_text(errors="replace"))
        errors = [line.strip() for line in text.splitlines() if "ERROR" in line]
        # mvn's own preamble ("Failed to execute goal … for project dev.streamwatch:…: ") says nothing
        first = re.sub(r"^.*? for project \S+?: ", "", errors[0]) if errors else f"mvn exited {rc}"
        raise ResolveFailed(f"mvn could not resolve the {jar_set} set (Maven Central unreachable, or no "
                            f"such release?) — {OFF_WITHOUT[jar_set]}: {first}")


def _drop_shipped(folder: Path, spark: InstalledSpark, progress: Callable[[str], None]) -> None:
    """Delete the jars in ``folder`` of artifacts pyspark ships itself: two versions of one
    class on the driver's classpath clash, whatever path brought it in (a Spark line the
    POM's exclusions were not written for), so pyspark's copy wins."""
    clashes = sorted(p for p in folder.glob("*.jar") if artifact_of(p.name) in spark.shipped)
    for p in clashes:
        p.unlink()
    if clashes:
        progress(f"left out {len(clashes)} jars pyspark ships itself: {', '.join(p.name for p in clashes)}")


def resolve(
    jar_set: str,
    dest: Path,
    spark: InstalledSpark,
    progress: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    pom: Path = POM,
) -> ResolvedSet:
    """Resolve ``jar_set`` for ``spark`` into ``dest/<jar_set>/`` (replacing what was there),
    saying what it does through ``progress`` (one line per call). ``$MVN`` names the Maven
    executable (default ``mvn``); artifacts are cached in ``~/.m2``.

    Raises :class:`MavenMissing` (mvn not on PATH), :class:`ResolveFailed` (mvn failed; the
    destination is left as it was), :class:`Unreadable` (``dest`` cannot be written).
    """
    env = os.environ if env is None else env
    mvn = shutil.which(env.get("MVN") or "mvn", path=env.get("PATH"))
    if mvn is None:
        raise MavenMissing(f"mvn not found on PATH — {OFF_WITHOUT[jar_set]}; install Maven "
                           "(https://maven.apache.org) and run `streamwatch jars` again")
    how = plan(jar_set, spark, pom)
    # mvn resolves a relative outputDirectory against the POM's folder, not the caller's
    dest = dest.absolute()
    for note in how.notes:
        progress(note)
    tmp = _staging(dest, jar_set)
    log = tmp.with_name(tmp.name + ".log")
    try:
        used_pom = _pom_without_delta(pom, tmp.with_name(tmp.name + ".pom.xml")) if how.without_delta else pom
        overrides = " ".join(f"{k}={v}" for k, v in how.properties.items())
        progress(f"resolving the {jar_set} set of {pom.name} for pyspark {spark.version}"
                 f"{' (' + overrides + ')' if overrides else ''} with mvn (cached in ~/.m2) …")
        _copy_dependencies(mvn, used_pom, jar_set, tmp, how, log, env)
        if jar_set != BROKER_SET:
            _drop_shipped(tmp, spark, progress)
        if not any(tmp.glob("*.jar")):  # never mark a set resolved that holds nothing
            raise ResolveFailed(f"mvn resolved no jar of the {jar_set} set — {OFF_WITHOUT[jar_set]}")
        (tmp / ".resolved").write_text(f"pyspark {spark.version}\n")
        final = dest / jar_set
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        log.unlink(missing_ok=True)
        tmp.with_name(tmp.name + ".pom.xml").unlink(missing_ok=True)
    jars = tuple(sorted(p.name for p in final.glob("*.jar")))
    progress(f"{jar_set} → {final} ({len(jars)} jars)")
    return ResolvedSet(jar_set, final, jars)
