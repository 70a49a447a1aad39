"""Spark Declarative Pipelines' spec file (``spark-pipeline.yml``/``.yaml``, or JSON, which YAML
reads too), checked before anything runs: what ``spark-pipelines run`` would refuse or what
would break every flow, one :class:`SpecProblem` a line. No JVM, no pyspark import.

The rules mirror pyspark 4.2's ``pyspark/pipelines/cli.py`` (``unpack_pipeline_spec``,
``validate_patch_glob_pattern``, ``register_definitions``) and the server's
``PipelineUpdateContextImpl.validateStorageRoot``; :data:`STATIC_CONFS` are Spark's
``StaticSQLConf`` keys, which ``spark.conf.set`` refuses with ``CANNOT_MODIFY_STATIC_CONFIG``
(the spec's ``configuration`` is set on each flow's session, so one such key fails every flow).
"""

from __future__ import annotations

import enum
import glob
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamwatch.errors import ExitCode, StreamwatchError

#: Spark 4.2's ``StaticSQLConf`` keys (org.apache.spark.sql.internal.StaticSQLConf): set at
#: session start only. tests/unit/test_sdp_spec.py has Spark refuse each with
#: ``CANNOT_MODIFY_STATIC_CONFIG``.
STATIC_CONFS: frozenset[str] = frozenset({
    "spark.python.sql.dataFrameDebugging.enabled",
    "spark.sql.broadcastExchange.maxThreadThreshold",
    "spark.sql.cache.serializer",
    "spark.sql.catalog.spark_catalog.defaultDatabase",
    "spark.sql.catalogImplementation",
    "spark.sql.codegen.cache.maxEntries",
    "spark.sql.codegen.comments",
    "spark.sql.debug",
    "spark.sql.defaultUrlStreamHandlerFactory.enabled",
    "spark.sql.event.truncate.length",
    "spark.sql.extensions",
    "spark.sql.filesourceTableRelationCacheSize",
    "spark.sql.globalTempDatabase",
    "spark.sql.hive.thriftServer.singleSession",
    "spark.sql.legacy.sessionInitWithConfigDefaults",
    "spark.sql.metadataCacheTTLSeconds",
    "spark.sql.queryExecutionListeners",
    "spark.sql.resultQueryStage.maxThreadThreshold",
    "spark.sql.shuffleExchange.maxThreadThreshold",
    "spark.sql.sources.disabledJdbcConnProviderList",
    "spark.sql.sources.schemaStringLengthThreshold",
    "spark.sql.streaming.streamingQueryListeners",
    "spark.sql.streaming.ui.enabled",
    "spark.sql.streaming.ui.enabledCustomMetricList",
    "spark.sql.streaming.ui.retainedProgressUpdates",
    "spark.sql.streaming.ui.retainedQueries",
    "spark.sql.subquery.maxThreadThreshold",
    "spark.sql.ui.retainedExecutions",
    "spark.sql.warehouse.dir",
})

#: The catalog setting SDP reruns need: the in-memory catalog forgets the tables between runs
#: and the second run fails with ``LOCATION_ALREADY_EXISTS`` on their warehouse folders.
CATALOG_CONF = "spark.sql.catalogImplementation"
CATALOG_FOR_RERUNS = "hive"

#: Top-level fields ``unpack_pipeline_spec`` accepts (``schema`` is ``database``'s alias).
FIELDS = frozenset({"name", "storage", "catalog", "database", "schema", "configuration", "libraries"})
#: Definition files ``register_definitions`` accepts.
SUFFIXES = (".py", ".sql")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class SpecUnreadable(StreamwatchError):
    """The spec file cannot be read or parsed (missing, not YAML/JSON, not a mapping, YAML
    without PyYAML). Exit 4, as any unreadable input: refused before anything runs."""

    exit_code = ExitCode.UNREADABLE


class Severity(enum.Enum):
    ERROR = "error"  # spark-pipelines refuses the spec, or every flow fails
    WARNING = "warning"  # it runs, but not as written (a glob adds nothing; a rerun fails)


class ProblemKind(enum.Enum):
    """What is wrong; the value is the code shown (documented in docs/sdp.md)."""

    FIELD = "SDP_SPEC_FIELD"
    STATIC_CONF = "SDP_STATIC_CONF"
    GLOB_REFUSED = "SDP_GLOB_REFUSED"
    GLOB_NO_MATCH = "SDP_GLOB_NO_MATCH"
    FILE_REFUSED = "SDP_FILE_REFUSED"
    STORAGE_MISSING = "SDP_STORAGE_MISSING"
    STORAGE_NOT_URI = "SDP_STORAGE_NOT_URI"
    CATALOG_RERUN = "SDP_CATALOG_RERUN"


@dataclass(frozen=True, slots=True)
class SpecProblem:
    """One problem of a spec: its kind, severity and the one line said to the user."""

    kind: ProblemKind
    severity: Severity
    message: str

    def line(self) -> str:
        return f"{self.severity.value} {self.kind.value}: {self.message}"


@dataclass(frozen=True, slots=True)
class PipelineSpec:
    """A spec as SDP reads it: ``name``, ``storage`` (None when absent), default ``catalog``
    and ``database``, ``configuration`` (key → value as written: non-strings are problems)
    and the ``libraries`` include globs (relative to the spec's folder); ``fields`` are the
    top-level keys present."""

    path: Path
    name: str | None
    storage: str | None
    catalog: str | None
    database: str | None
    configuration: Mapping[str, object]
    libraries: tuple[str, ...]
    fields: tuple[str, ...]
    bad_libraries: int = 0


def read_spec(path: str | Path) -> PipelineSpec:
    """The :class:`PipelineSpec` in the file at ``path`` (YAML with PyYAML, else JSON only).
    Raises :class:`SpecUnreadable`."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SpecUnreadable(f"{p}: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise SpecUnreadable(f"{p}: not UTF-8 text") from None
    data = _parse(p, text)
    if not isinstance(data, dict):
        raise SpecUnreadable(f"{p}: not a mapping of fields (name, storage, libraries …)")
    libs: list[str] = []
    bad = 0
    for entry in data.get("libraries") or []:
        include = entry.get("glob", {}).get("include") if isinstance(entry, dict) and isinstance(
            entry.get("glob"), dict) else None
        if isinstance(include, str):
            libs.append(include)
        else:
            bad += 1
    conf = data.get("configuration")
    return PipelineSpec(p, _str(data.get("name")), _str(data.get("storage")), _str(data.get("catalog")),
                        _str(data.get("database", data.get("schema"))),
                        conf if isinstance(conf, dict) else {}, tuple(libs), tuple(str(k) for k in data),
                        bad + (0 if conf is None or isinstance(conf, dict) else 1))


def _str(v: object) -> str | None:
    return None if v is None else str(v)


def _parse(p: Path, text: str) -> Any:
    try:
        import yaml  # optional: pyspark's spark-pipelines needs it, so its venv has it
    except ModuleNotFoundError:
        if p.suffix.lower() != ".json":
            raise SpecUnreadable(f"{p}: reading YAML needs PyYAML (pip install pyyaml); "
                                 "a .json spec needs nothing") from None
        try:
            return json.loads(text)
        except ValueError as e:
            raise SpecUnreadable(f"{p}: not JSON ({e})") from None
    try:
        return yaml.safe_load(text)  # JSON is YAML: SDP itself reads every spec with safe_load
    except yaml.YAMLError as e:
        raise SpecUnreadable(f"{p}: not YAML ({' '.join(str(e).split())})") from None


def glob_refused(pattern: str) -> bool:
    """True when SDP refuses ``pattern`` (``PIPELINE_SPEC_INVALID_GLOB_PATTERN``): only a
    path without wildcards, or a folder path without wildcards ending in ``/**``, is allowed."""
    if not glob.has_magic(pattern):
        return False
    return not (pattern.endswith("/**") and not glob.has_magic(pattern[:-3]))


def library_files(root: Path, pattern: str) -> list[Path]:
    """The files SDP registers for an allowed ``pattern`` under the spec's folder ``root``
    (``folder/**`` is globbed as ``folder/**/*``, ``__pycache__`` skipped), sorted."""
    expr = pattern + "/*" if pattern.endswith("/**") else pattern
    return sorted(f for f in root.glob(expr) if f.is_file() and "__pycache__" not in f.parts)


def storage_problem(storage: str | None) -> SpecProblem | None:
    """The problem of the spec's ``storage``: absent, or not an absolute path with a URI
    scheme (``file:///…``, ``s3a://…``: ``PIPELINE_STORAGE_ROOT_INVALID``); None when fine."""
    if not storage:
        return SpecProblem(ProblemKind.STORAGE_MISSING, Severity.ERROR,
                           "no storage: SDP needs it for the flows' checkpoints (e.g. storage: file:///abs/path)")
    m = _SCHEME.match(storage)
    if m is None or not storage[m.end():].startswith("/"):
        return SpecProblem(ProblemKind.STORAGE_NOT_URI, Severity.ERROR,
                           f"storage {storage!r} is not an absolute path with a URI scheme (file:///abs/path, "
                           "s3a://bucket/prefix): SDP refuses it (PIPELINE_STORAGE_ROOT_INVALID)")
    return None


def check_spec(spec: PipelineSpec, spark_defaults: Mapping[str, str] | None = None) -> list[SpecProblem]:
    """Every problem of ``spec``, in the order SDP would meet them: fields, configuration,
    storage, libraries, then the catalog setting reruns need (not a problem when
    ``spark_defaults``, the ``spark-defaults.conf`` pairs, set it to ``hive``)."""
    problems = _field_problems(spec)
    for key, value in spec.configuration.items():
        if not isinstance(value, str):
            problems.append(SpecProblem(ProblemKind.FIELD, Severity.ERROR,
                                        f"configuration {key}: value {value!r} is not a string (quote it)"))
        if key in STATIC_CONFS:
            problems.append(SpecProblem(
                ProblemKind.STATIC_CONF, Severity.ERROR,
                f"configuration sets {key}, a static conf: every flow fails with CANNOT_MODIFY_STATIC_CONFIG "
                "(pass it as spark-pipelines run --conf, or in spark-defaults.conf)"))
    if (bad := storage_problem(spec.storage)) is not None:
        problems.append(bad)
    problems += _library_problems(spec)
    if (spark_defaults or {}).get(CATALOG_CONF) != CATALOG_FOR_RERUNS:
        problems.append(SpecProblem(
            ProblemKind.CATALOG_RERUN, Severity.WARNING,
            f"reruns need {CATALOG_CONF}={CATALOG_FOR_RERUNS} (the in-memory catalog fails the second run with "
            f"LOCATION_ALREADY_EXISTS): spark-pipelines run --conf {CATALOG_CONF}={CATALOG_FOR_RERUNS} "
            "(streamwatch log --spec supplies it)"))
    return problems


def _field_problems(spec: PipelineSpec) -> list[SpecProblem]:
    out = [SpecProblem(ProblemKind.FIELD, Severity.ERROR,
                       f"unexpected field {f!r}: SDP refuses the spec (PIPELINE_SPEC_UNEXPECTED_FIELD)")
           for f in spec.fields if f not in FIELDS]
    if spec.name is None:
        out.append(SpecProblem(ProblemKind.FIELD, Severity.ERROR,
                               "no name: SDP refuses the spec (PIPELINE_SPEC_MISSING_REQUIRED_FIELD)"))
    if spec.bad_libraries:
        out.append(SpecProblem(ProblemKind.FIELD, Severity.ERROR,
                               f"{spec.bad_libraries} libraries entries or configuration not of the shape SDP reads "
                               "(libraries: - glob: include: PATH; configuration: a mapping)"))
    return out


def _library_problems(spec: PipelineSpec) -> list[SpecProblem]:
    root = spec.path.parent.resolve()  # register_definitions globs from the resolved folder
    out: list[SpecProblem] = []
    for pattern in spec.libraries:
        if glob_refused(pattern):
            out.append(SpecProblem(ProblemKind.GLOB_REFUSED, Severity.ERROR,
                                   f"libraries glob {pattern!r}: SDP allows only a file path or FOLDER/** "
                                   "(PIPELINE_SPEC_INVALID_GLOB_PATTERN)"))
            continue
        files = library_files(root, pattern)
        if not files:
            out.append(SpecProblem(ProblemKind.GLOB_NO_MATCH, Severity.WARNING,
                                   f"libraries glob {pattern!r} matches no file under {root} (no definitions "
                                   "from it)"))
        for f in files:
            if f.suffix not in SUFFIXES:
                out.append(SpecProblem(ProblemKind.FILE_REFUSED, Severity.ERROR,
                                       f"{f.relative_to(root)}: SDP registers only .py and .sql files and fails on "
                                       "this one (PIPELINE_UNSUPPORTED_DEFINITIONS_FILE_EXTENSION)"))
    return out


def read_spark_defaults(path: Path) -> dict[str, str]:
    """The ``key value`` pairs of a ``spark-defaults.conf`` (whitespace or ``=`` separated,
    ``#`` comments), empty when the file is absent or unreadable."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, value = _pair(line)
        out[key] = value
    return out


def _pair(line: str) -> tuple[str, str]:
    m = re.match(r"([^\s=]+)(?:\s*=\s*|\s+)(.*)$", line)
    return (m.group(1), m.group(2).strip()) if m else (line, "")
