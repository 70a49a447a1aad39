"""What a bundled (or user-supplied) pipeline declares. No pyspark import here: layers build
their DataFrames inside ``build`` so discovery and ``--help`` stay fast.

A pipeline has landing sources (directories that a data factory fills with files) and layers
(bronze → silver → gold), each one streaming query writing one table with its own checkpoint
under a :class:`Workspace`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from streamwatch.spark.tables import Tables


@dataclass(frozen=True)
class Workspace:
    """Folders of one pipeline run under ``root`` (default ``./streamwatch-workspace``):
    ``landing/<pipeline>/<source>``, ``tables/<pipeline>/<table>``,
    ``checkpoints/<pipeline>/<layer>``, ``logs/``."""

    root: Path

    def landing(self, pipeline: str, source: str) -> Path:
        return self.root / "landing" / pipeline / source

    def table(self, pipeline: str, table: str) -> Path:
        return self.root / "tables" / pipeline / table

    def checkpoint(self, pipeline: str, layer: str) -> Path:
        return self.root / "checkpoints" / pipeline / layer


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
    """What a layer's ``build`` gets: the session, the table interface, and where the
    pipeline's landing directories are (by source name)."""

    spark: "SparkSession"
    tables: "Tables"
    landing: dict[str, Path]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Layer:
    """One streaming query: reads upstream (landing files or a table), writes ``table``.

    ``build(ctx)`` returns the streaming DataFrame; ``output_mode`` is Spark's output mode
    (``append``/``update``/``complete``)."""

    name: str
    table: str
    description: str
    build: Callable[[LayerContext], "DataFrame"]
    output_mode: str = "append"


@dataclass(frozen=True)
class Pipeline:
    """A medallion pipeline: landing sources, layers in dependency order, and an optional
    ``setup(ctx)`` that writes static tables (dimensions) before the layers start."""

    name: str
    description: str
    sources: tuple[LandingSource, ...]
    layers: tuple[Layer, ...]
    setup: Callable[[LayerContext], None] | None = None

    def query_name(self, layer: Layer) -> str:
        """Streaming query name, e.g. ``flights_bronze``."""
        return f"{self.name}_{layer.name}"

    def layer_names(self) -> Iterator[str]:
        return (layer.name for layer in self.layers)


def discover_pipelines() -> dict[str, Pipeline]:
    """Pipelines from the ``streamwatch.pipelines`` entry-point group (the bundled ones are
    registered there too), falling back to the bundled ``sample_pipelines`` when the
    distribution's metadata is not installed. Broken entry points are skipped."""
    from importlib import metadata

    found: dict[str, Pipeline] = {}
    for ep in metadata.entry_points(group="streamwatch.pipelines"):
        try:
            obj = ep.load()
        except Exception:  # a broken third-party plugin must not break the tool
            continue
        pipeline = obj() if callable(obj) and not isinstance(obj, Pipeline) else obj
        if isinstance(pipeline, Pipeline):
            found[pipeline.name] = pipeline
    if "flights" not in found:
        from sample_pipelines.flights import pipeline as flights

        found["flights"] = flights()
    return found


def get_pipeline(name: str) -> Pipeline:
    """The pipeline called ``name``; raises ``KeyError`` listing the known names."""
    pipelines = discover_pipelines()
    if name not in pipelines:
        raise KeyError(f"unknown pipeline {name!r}; known: {', '.join(sorted(pipelines))}")
    return pipelines[name]
