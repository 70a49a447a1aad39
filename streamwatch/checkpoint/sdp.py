"""Spark Declarative Pipelines' checkpoint layout (``pyspark.pipelines``, Spark 4.1+): a
pipeline's storage keeps one checkpoint per streaming flow and refresh generation,

    <storage>/_checkpoints/<catalog>/<database>/<table>/<flow>/<N>/

``N`` grows with each full refresh of the table (the flow starts over from a new checkpoint;
the older ones are never read again: *superseded*). A flow named as its table is the table's
default flow (``@dp.table``, ``CREATE STREAMING TABLE … AS``); an ``append_flow`` has its
own name. Pure path logic: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The folder under a pipeline's storage that holds its flows' checkpoints.
CHECKPOINTS = "_checkpoints"


@dataclass(frozen=True, slots=True)
class SdpFlow:
    """Where one checkpoint sits in a pipeline's storage: the flow ``flow`` writing table
    ``catalog.database.table``, refresh generation ``version`` (the ``N`` folder)."""

    catalog: str
    database: str
    table: str
    flow: str
    version: int

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.catalog, self.database, self.table, self.flow)

    @property
    def name(self) -> str:
        """``database.table`` for a table's default flow, ``database.table ← flow`` for an
        append flow into it."""
        table = f"{self.database}.{self.table}"
        return table if self.flow == self.table else f"{table} ← {self.flow}"


def sdp_flow(path: str) -> SdpFlow | None:
    """The :class:`SdpFlow` of a checkpoint at ``path`` (local path or URL, ``/``-separated),
    None when it is not laid out as a pipeline's flow checkpoint."""
    parts: Sequence[str] = [p for p in path.replace("\\", "/").rstrip("/").split("/") if p]
    if len(parts) < 6 or parts[-6] != CHECKPOINTS or not parts[-1].isdecimal():
        return None
    catalog, database, table, flow = parts[-5:-1]
    return SdpFlow(catalog, database, table, flow, int(parts[-1]))


def superseded(paths: Iterable[str]) -> set[str]:
    """Those of ``paths`` that an SDP flow's newer generation (a later full refresh)
    replaced: every one but the highest ``N`` of each flow."""
    newest: dict[tuple[str, str, str, str], int] = {}
    flows = {p: f for p in paths if (f := sdp_flow(p)) is not None}
    for f in flows.values():
        newest[f.key] = max(newest.get(f.key, f.version), f.version)
    return {p for p, f in flows.items() if f.version < newest[f.key]}


#: The session catalog SDP's tables live in by default (their folders in the warehouse).
SESSION_CATALOG = "spark_catalog"
#: The folder name of Spark's default warehouse (``spark.sql.warehouse.dir``'s default).
WAREHOUSE = "spark-warehouse"


def is_table_folder(folder: str, flow: SdpFlow) -> bool:
    """True when ``folder`` (a ``/``-separated path) is where the session catalog keeps
    ``flow``'s table: ``<warehouse>/<table>`` for the ``default`` database, with the warehouse
    named ``spark-warehouse`` (Spark's default), or ``<warehouse>/<database>.db/<table>``
    (``SessionCatalog.defaultTablePath``). A table folder elsewhere (a custom warehouse for
    ``default``, an external location, another catalog) is not recognised: no guess."""
    parts = [p for p in folder.replace("\\", "/").rstrip("/").split("/") if p]
    if flow.catalog != SESSION_CATALOG or len(parts) < 2 or parts[-1] != flow.table:
        return False
    return parts[-2] == f"{flow.database}.db" or (flow.database == "default" and parts[-2] == WAREHOUSE)
