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

    #: cores the driver runs tasks on in local mode (``local[*]`` resolved by Spark's
    #: ``defaultParallelism``); None on a cluster or when unknown
    local_cores: int | None = None

    @property
    def master_description(self) -> str:
        """What runs the tasks, for a header: ``local[4 cores]`` in local mode (the driver runs
        them; no executors), ``spark://host:7077 (2 executors)`` on a cluster (the count is
        left out when unknown)."""
        if self.is_local:
            if self.local_cores is not None:
                return f"local[{self.local_cores} core{'s' if self.local_cores != 1 else ''}]"
            return self.master
        if self.executors is None:
            return self.master
        return f"{self.master} ({self.executors} executor{'s' if self.executors != 1 else ''})"


@dataclass(frozen=True, slots=True)
class RecordedSession:
    """The application a replayed file came from: ``source`` is ``listener`` (a streamwatch
    recording's header) or ``eventlog`` (Spark's ``SparkListenerLogStart``/``ApplicationStart``/
    ``EnvironmentUpdate`` events); ``started_ms`` the recording's or application's start
    (epoch ms, None unknown); ``trigger`` the trigger spec every query of a ``streamwatch log``
    recording ran with (its header says so; a Spark event log and ``record()`` carry none). Fields
    the file does not carry are None."""

    source: str
    spark_version: str | None = None
    master: str | None = None
    app_id: str | None = None
    app_name: str | None = None
    pipeline: str | None = None
    started_ms: int | None = None
    trigger: str | None = None


#: How loud a :class:`RuntimeNotice` is.
NoticeLevel = Literal["info", "warning", "error"]


@dataclass(frozen=True, slots=True)
class RuntimeNotice:
    """A one-line status message from the runner (``info``/``warning``/``error``)."""

    level: NoticeLevel
    message: str


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """One query a run will start: its streaming query name, layer, checkpoint folder and
    output table folder (taken from the pipeline definition: flights' ``enriched`` writes
    ``…/tables/flights/flights_weather``; ``""`` for Spark's memory sink, which has no
    folder), the ``sink`` kind (``table``/``memory``), the query names it reads
    (``upstream``, the medallion DAG) and the landing folders it reads (``landing``)."""

    query_name: str
    layer: str
    checkpoint: str
    table: str
    sink: str = "table"
    upstream: tuple[str, ...] = ()
    landing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunPlan:
    """What a run will show before Spark is up: the pipeline, its queries, its landing
    directories (source name → folder), and the trigger spec."""

    pipeline: str
    description: str
    queries: tuple[QueryPlan, ...]
    landing: tuple[tuple[str, str], ...]
    trigger: str

    def query(self, query_name: str) -> QueryPlan:
        """The planned query called ``query_name``; ``KeyError`` when there is none."""
        for q in self.queries:
            if q.query_name == query_name:
                return q
        raise KeyError(f"no query {query_name!r} in pipeline {self.pipeline!r}")

    def downstream(self, query_name: str) -> tuple[str, ...]:
        """Query names reading ``query_name``'s table (the DAG's edges out of it)."""
        return tuple(q.query_name for q in self.queries if query_name in q.upstream)

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """The medallion DAG as (upstream query, downstream query) pairs."""
        return tuple((up, q.query_name) for q in self.queries for up in q.upstream)

    @property
    def table_of_checkpoint(self) -> dict[str, str]:
        """Checkpoint folder → table folder of every query with a table sink (from the pipeline
        definition, never guessed from names)."""
        return {q.checkpoint: q.table for q in self.queries if q.table}


@dataclass(frozen=True, slots=True)
class QueryQueued:
    """Under ``availableNow``/``once`` a layer's query waits until every upstream query has
    finished: ``query_name`` is queued, ``waiting_for`` the upstream query names still running
    or queued, ``trigger`` the spec it will start with. Emitted by the backend when the run is
    planned; Spark's ``QueryStarted`` follows when the query starts."""

    kind = "queued"
    query_name: str
    waiting_for: tuple[str, ...]
    trigger: str


@dataclass(frozen=True, slots=True)
class QueryNotRun:
    """A queued query that will not start: an upstream query failed or was stopped, or the
    run was stopped first. ``reason`` is one line (``upstream flights_bronze failed``)."""

    kind = "not-run"
    query_name: str
    reason: str
