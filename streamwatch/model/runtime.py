"""Facts about the running session and runner that front-ends display."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """The SparkSession the pipelines run in: Spark version, master, Spark UI URL (None when
    the UI is off), the table format chosen (``delta``/``parquet``) and why."""

    spark_version: str
    master: str
    ui_url: str | None
    table_format: Literal["delta", "parquet"]
    table_format_reason: str
    log_file: str | None = None


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
