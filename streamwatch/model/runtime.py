"""Facts about the running session and runner that front-ends display."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The SparkSession the pipelines run in: Spark version, master URL (``local[*]``,
    ``spark://host:7077`` …), Spark UI URL (None when the UI is off), the table format chosen
    (``delta``/``parquet``) and why, Spark's log file, and ``executors``: executors registered
    when the session was described, the driver not counted (0 in local mode; None unknown)."""

    spark_version: str
    master: str
    ui_url: str | None
    table_format: Literal["delta", "parquet"]
    table_format_reason: str
    log_file: str | None = None
    executors: int | None = None

    @property
    def is_local(self) -> bool:
        """True when the master runs everything in this process (``local``/``local[…]``)."""
        return self.master == "local" or self.master.startswith("local[")


@dataclass(frozen=True, slots=True)
class RecordedSession:
    """The application a replayed file came from: ``source`` is ``listener`` (a streamwatch
    recording's header) or ``eventlog`` (Spark's ``SparkListenerLogStart``/``ApplicationStart``/
    ``EnvironmentUpdate`` events); ``started_ms`` the recording's or application's start
    (epoch ms, None unknown). Fields the file does not carry are None."""

    source: str
    spark_version: str | None = None
    master: str | None = None
    app_id: str | None = None
    app_name: str | None = None
    pipeline: str | None = None
    started_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RuntimeNotice:
    """A one-line status message from the runner (``info``/``warning``/``error``)."""

    level: Literal["info", "warning", "error"]
    message: str


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """One query a run will start: its streaming query name, layer, checkpoint folder and
    output table folder."""

    query_name: str
    layer: str
    checkpoint: str
    table: str


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a run will show before Spark is up: the pipeline, its queries, its landing
    directories (source name → folder), and the trigger spec."""

    pipeline: str
    description: str
    queries: tuple[QueryPlan, ...]
    landing: tuple[tuple[str, str], ...]
    trigger: str
