"""What a bundled (or user-supplied) pipeline declares. No pyspark import here: layers build
their DataFrames inside ``build`` so discovery and ``--help`` stay fast.

A pipeline has landing sources (directories that a data factory fills with files) and layers
(bronze → silver → gold), each one streaming query writing one table with its own checkpoint
under a :class:`Workspace`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from streamwatch.model.location import Location
from streamwatch.model.runtime import QueryPlan, RunPlan

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from streamwatch.spark.tables import Tables


#: Hidden file in a Kafka pipeline's landing directories holding the broker's ``HOST:PORT``
#: while ``streamwatch run``/``log`` runs it (``streamwatch land`` produces to that broker).
KAFKA_BOOTSTRAP_FILE = ".kafka-bootstrap"


#: The local folder ``streamwatch run``/``log``/``land`` use by default, and where an
#: object-store workspace keeps its local part (landing files, archive, logs).
DEFAULT_WORKSPACE = Path("streamwatch-workspace")


@dataclass(frozen=True, init=False)
class Workspace:
    """Folders of one pipeline run.

    What Spark writes — ``tables/<pipeline>/<table>`` and ``checkpoints/<pipeline>/<layer>`` —
    is under ``root``, a :class:`~streamwatch.model.location.Location`: a local folder or an
    S3 prefix (``s3a://bucket/prefix``). What arrives and what is kept on this machine —
    ``landing/<pipeline>/<source>`` (written atomically by rename and watched with watchdog,
    neither of which an object store offers), ``archive/<pipeline>/<source>`` (files a file
    source moved away, ``cleanSource=archive``; Spark moves them on the landing folder's file
    system) and ``logs/`` — is under ``local``, a local folder: ``root`` itself for a local
    workspace, :data:`DEFAULT_WORKSPACE` (or the ``local`` given) for an object-store one.

    ``Workspace(path)`` is the local workspace at ``path``; :meth:`at` parses what a user typed."""

    root: Location
    local: Path

    def __init__(self, root: Location | str | Path, local: Path | None = None) -> None:
        loc = root if isinstance(root, Location) else Location.parse(root)
        here = Path(loc) if loc.is_local else (local or DEFAULT_WORKSPACE).expanduser().absolute()
        object.__setattr__(self, "root", loc)
        object.__setattr__(self, "local", here)

    @classmethod
    def at(cls, text: str | Path, local: Path | None = None) -> Workspace:
        """The workspace a ``--workspace`` value names: a folder, ``file://…``,
        ``s3a://BUCKET/PREFIX`` or ``s3://BUCKET/PREFIX``. Raises
        :class:`~streamwatch.model.location.LocationError` (a ``ValueError``, one line)."""
        return cls(Location.parse(text), local)

    @property
    def logs(self) -> Path:
        """``logs/`` (Spark's own output, ``spark.log``): always local."""
        return self.local / "logs"

    def landing(self, pipeline: str, source: str) -> Path:
        return self.local / "landing" / pipeline / source

    def table(self, pipeline: str, table: str) -> Location:
        return self.root / f"tables/{pipeline}/{table}"

    def checkpoint(self, pipeline: str, layer: str) -> Location:
        return self.root / f"checkpoints/{pipeline}/{layer}"

    def archive(self, pipeline: str, source: str) -> Path:
        return self.local / "archive" / pipeline / source


class DataFactory(Protocol):
    """Lands input files atomically (temporary name, then rename) into one directory."""

    def land(self, n_files: int = 1) -> list[Path]:
        """Land the next ``n_files`` files; returns their final paths ([] when exhausted)."""
        ...

    @property
    def exhausted(self) -> bool: ...


@dataclass(frozen=True)
class LandingSource:
    """A landing directory and how to make its data: ``factory(directory, **options)``."""

    name: str
    description: str
    factory: Callable[..., DataFactory]


@dataclass
class LayerContext:
    """What a layer's ``build`` gets: the session, the table interface, where the pipeline's
    landing directories and archive directories are (by source name), and run options
    (e.g. ``max_files_per_trigger``)."""

    spark: SparkSession
    tables: Tables
    landing: dict[str, Path]
    options: dict[str, Any] = field(default_factory=dict)
    archive: dict[str, Path] = field(default_factory=dict)


#: Spark's output modes (``DataStreamWriter.outputMode``).
OUTPUT_MODES = ("append", "update", "complete")


@dataclass(frozen=True)
class Layer:
    """One streaming query: reads upstream (landing files or a table), writes ``table``.

    ``build(ctx)`` returns the streaming DataFrame; ``output_mode`` is Spark's output mode
    (``append``/``update``/``complete``); ``sink`` is ``table`` (Delta or Parquet table
    ``table``) or ``memory`` (Spark's memory sink: an in-session table named after the query,
    not restartable); ``source`` names the format the query reads (``csv``, ``json``, or
    ``table`` for an upstream table), used to explain which triggers it supports;
    ``merge_keys`` (Delta tables) maintains the table by an idempotent ``MERGE`` on those
    columns per micro-batch instead of Delta's sink (Parquet tables ignore it).

    The medallion DAG: ``upstream`` names the layers whose tables this layer reads (flights'
    enriched: ``("silver", "weather")``), ``landing`` the landing sources it reads (bronze:
    ``("flights",)``). A layer runs after all of its upstream layers under ``availableNow`` /
    ``once`` (see :meth:`Pipeline.topological_layers`).

    ``conf`` holds (key, value) Spark SQL settings the query needs when it starts (the sessions pipeline's
    transformWithState layer: the RocksDB state store provider); they are set on the session
    only while the query starts (Spark copies the session's settings into the query then)
    and the previous values are restored after."""

    name: str
    table: str
    description: str
    build: Callable[[LayerContext], DataFrame]
    output_mode: str = "append"
    sink: str = "table"
    source: str = "table"
    merge_keys: tuple[str, ...] = ()
    upstream: tuple[str, ...] = ()
    landing: tuple[str, ...] = ()
    conf: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Pipeline:
    """A medallion pipeline: landing sources, layers (their order is only the display order;
    the run order is the DAG each layer's ``upstream`` declares), and an optional
    ``setup(ctx)`` that writes static tables (dimensions) before the layers start, and an
    optional ``sdp_project(dest, landing)`` that writes the same medallion as a Spark
    Declarative Pipelines project into ``dest`` reading the landing folders ``landing`` (source
    name → folder), returning its spec's path (``FileExistsError`` when ``dest`` has a spec).

    Raises ``ValueError`` (one line) when a layer names an unknown upstream layer or landing
    source, two layers share a name, or the upstream links form a cycle."""

    name: str
    description: str
    sources: tuple[LandingSource, ...]
    layers: tuple[Layer, ...]
    setup: Callable[[LayerContext], None] | None = None
    sdp_project: Callable[[Path, Mapping[str, Path]], Path] | None = None

    def __post_init__(self) -> None:
        names = [layer.name for layer in self.layers]
        if len(set(names)) != len(names):
            raise ValueError(f"pipeline {self.name!r}: two layers share a name ({', '.join(names)})")
        sources = {s.name for s in self.sources}
        for layer in self.layers:
            for up in layer.upstream:
                if up not in names or up == layer.name:
                    raise ValueError(f"pipeline {self.name!r}: layer {layer.name!r} reads unknown upstream layer {up!r}")
            for src in layer.landing:
                if src not in sources:
                    raise ValueError(f"pipeline {self.name!r}: layer {layer.name!r} reads unknown landing source {src!r}")
        self.topological_layers()  # raises on a cycle

    @property
    def reads_kafka(self) -> bool:
        """True when a layer reads Spark's Kafka source (``source="kafka"``): running it needs
        the Kafka connector's jars and a broker (``kafka_bootstrap`` option)."""
        return any(layer.source == "kafka" for layer in self.layers)

    def upstream_of(self, name: str) -> tuple[str, ...]:
        """Names of the layers ``name`` reads (``KeyError`` for an unknown layer)."""
        return self.layer(name).upstream

    def downstream_of(self, name: str) -> tuple[str, ...]:
        """Names of the layers that read ``name``'s table, in declaration order."""
        return tuple(layer.name for layer in self.layers if name in layer.upstream)

    def topological_layers(self) -> tuple[Layer, ...]:
        """Every layer after all of its upstream layers (Kahn's algorithm; among layers ready
        at the same time, declaration order). Raises ``ValueError`` on a cycle."""
        done: list[Layer] = []
        seen: set[str] = set()
        pending = list(self.layers)
        while pending:
            ready = [layer for layer in pending if all(up in seen for up in layer.upstream)]
            if not ready:
                cycle = ", ".join(layer.name for layer in pending)
                raise ValueError(f"pipeline {self.name!r}: the upstream links of {cycle} form a cycle")
            for layer in ready:
                done.append(layer)
                seen.add(layer.name)
                pending.remove(layer)
        return tuple(done)

    def query_name(self, layer: Layer) -> str:
        """Streaming query name, e.g. ``flights_bronze``."""
        return f"{self.name}_{layer.name}"

    def layer_names(self) -> Iterator[str]:
        return (layer.name for layer in self.layers)

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; raises ``KeyError`` listing the layers."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(f"pipeline {self.name!r} has no layer {name!r}; layers: {', '.join(self.layer_names())}")

    def output_modes(self, specs: Iterable[str]) -> dict[str, str]:
        """Output-mode overrides from ``LAYER=MODE`` specs (``gold=update``; the query name
        ``flights_gold=update`` works too) as ``{layer: mode}``. Raises ``ValueError`` (one
        line) for a malformed spec, an unknown layer or mode, or a layer given twice."""
        modes: dict[str, str] = {}
        for spec in specs:
            name, sep, mode = (part.strip() for part in spec.partition("="))
            if not sep or not name or not mode:
                raise ValueError(f"output mode {spec!r}: expected LAYER=MODE, e.g. gold=update")
            layer = name[len(self.name) + 1:] if name.startswith(self.name + "_") else name
            try:
                self.layer(layer)
            except KeyError as e:
                raise ValueError(e.args[0]) from None
            if mode.lower() not in OUTPUT_MODES:
                raise ValueError(f"unknown output mode {mode!r} for layer {layer!r}: use {', '.join(OUTPUT_MODES)}")
            if layer in modes:
                raise ValueError(f"output mode for layer {layer!r} given twice")
            modes[layer] = mode.lower()
        return modes


def plan_run(pipeline: Pipeline, workspace: Workspace, trigger: str) -> RunPlan:
    """The queries, checkpoints, tables, medallion DAG and landing folders a run of
    ``pipeline`` will use (queries in the DAG's topological order)."""
    return RunPlan(
        pipeline=pipeline.name,
        description=pipeline.description,
        queries=tuple(
            QueryPlan(
                query_name=pipeline.query_name(layer),
                layer=layer.name,
                checkpoint=workspace.checkpoint(pipeline.name, layer.name).fsspec_uri,
                table="" if layer.sink == "memory" else workspace.table(pipeline.name, layer.table).fsspec_uri,
                sink=layer.sink,
                upstream=tuple(pipeline.query_name(pipeline.layer(u)) for u in layer.upstream),
                landing=tuple(str(workspace.landing(pipeline.name, src)) for src in layer.landing),
            )
            for layer in pipeline.topological_layers()
        ),
        landing=tuple((s.name, str(workspace.landing(pipeline.name, s.name))) for s in pipeline.sources),
        trigger=trigger,
    )


# The pipelines shipped in ``streamwatch.sample_pipelines`` (the checkout's ``sample_pipelines/``; also entry points).
BUNDLED = {
    "flights": "streamwatch.sample_pipelines.flights:pipeline",
    "orders": "streamwatch.sample_pipelines.orders:pipeline",
    "events": "streamwatch.sample_pipelines.events:pipeline",
    "clicks": "streamwatch.sample_pipelines.clicks:pipeline",
    "sessions": "streamwatch.sample_pipelines.sessions:pipeline",
}


def _as_pipeline(obj: Any) -> Pipeline | None:
    pipeline = obj() if callable(obj) and not isinstance(obj, Pipeline) else obj
    return pipeline if isinstance(pipeline, Pipeline) else None


def discover_pipelines() -> dict[str, Pipeline]:
    """Pipelines by name: the bundled ``sample_pipelines`` (flights, orders, events, clicks, sessions) and
    everything in the ``streamwatch.pipelines`` entry-point group, whose value is a
    :class:`Pipeline` or a function returning one (``mypkg.pipes:pipeline``). Broken entry
    points are skipped (a third-party plugin must not break the tool)."""
    from importlib import import_module, metadata

    found: dict[str, Pipeline] = {}
    for ep in metadata.entry_points(group="streamwatch.pipelines"):
        try:
            pipeline = _as_pipeline(ep.load())
        except Exception:
            continue
        if pipeline is not None:
            found[pipeline.name] = pipeline
    for name, target in BUNDLED.items():
        if name not in found:
            module, _, attr = target.partition(":")
            try:
                pipeline = _as_pipeline(getattr(import_module(module), attr))
            except ImportError:  # an installation without that bundled pipeline
                continue
            if pipeline is not None:
                found[name] = pipeline
    return found


def get_pipeline(name: str) -> Pipeline:
    """The pipeline called ``name``; raises ``KeyError`` listing the known names."""
    pipelines = discover_pipelines()
    if name not in pipelines:
        raise KeyError(f"unknown pipeline {name!r}; known: {', '.join(sorted(pipelines))}")
    return pipelines[name]


def table_of_checkpoint(checkpoint: str | Path | Location) -> Location | None:
    """The table folder a workspace checkpoint's query writes, taken from the pipeline
    definition: ``<root>/checkpoints/<pipeline>/<layer>`` → ``<root>/tables/<pipeline>/<table>``
    (flights' ``enriched`` → ``tables/flights/flights_weather``), local or in a bucket
    (``s3://b/ws/checkpoints/flights/gold`` → ``s3://b/ws/tables/flights/gold``). None when
    the path is not laid out like a workspace, the pipeline or layer is unknown, or the layer
    writes Spark's memory sink (no folder)."""
    try:
        loc = checkpoint if isinstance(checkpoint, Location) else Location.parse(checkpoint)
    except ValueError:
        return None
    folder = loc.parent
    if not loc.name or folder.parent.name != "checkpoints":
        return None
    try:
        pipeline = get_pipeline(folder.name)
        layer = pipeline.layer(loc.name)
    except KeyError:
        return None
    if layer.sink == "memory":
        return None
    return Workspace(folder.parent.parent).table(pipeline.name, layer.table)
