"""The pipeline view's model (UI-free): watched queries as layers of a DAG, laid out in
columns, with per edge the backlog and per layer its latency, end-to-end latency and status.

:func:`graph_of_watch` builds a :class:`PipelineGraph` from a
:class:`~streamwatch.analysis.session.CheckpointWatch` (edges learnt from the batches by
:class:`~streamwatch.analysis.chain.PipelineChain`: a file source reading another query's file
sink, a Delta source reading a Delta sink), optionally with edges a pipeline definition
declares (``RunPlan.edges``) that no batch has shown yet. :class:`PlanPipeline` keeps such a
watch over a bundled pipeline's checkpoints, for the live dashboard. The dashboard's pipeline
tab draws the graph (:mod:`streamwatch.tui.views.pipeline`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from streamwatch.analysis.records import PipelineEdge
from streamwatch.analysis.session import CheckpointWatch
from streamwatch.analysis.watch import WatchError
from streamwatch.model.runtime import RunPlan


@dataclass(frozen=True, slots=True)
class Layer:
    """One query of the pipeline: its ``column`` (longest path from a first layer, 0-based)
    and ``row`` within the column; ``batch_id`` the last committed batch (None before any);
    ``in_flight_batch_id`` planned and not committed, for ``in_flight_s`` seconds; ``status``
    ``active``, ``idle``, ``stuck``, ``starting`` (nothing committed) or ``not started`` (no
    checkpoint yet);
    ``layer_latency_ms`` the median time from an input file being written to its commit;
    ``end_to_end_ms`` the latest batch's latency from the oldest landed file it carries;
    ``slowest``: the pipeline's largest layer latency; ``landing_unread`` the files landed for
    it and not read yet (a query reading landing folders; None otherwise or unknown — the
    dashboard fills it from the landed files and the file-source logs)."""

    name: str
    column: int
    row: int
    batch_id: int | None = None
    in_flight_batch_id: int | None = None
    in_flight_s: float | None = None
    status: str = "not started"
    layer_latency_ms: int | None = None
    end_to_end_ms: int | None = None
    slowest: bool = False
    landing_unread: int | None = None


@dataclass(frozen=True, slots=True)
class Link:
    """One edge: ``downstream`` reads what ``upstream`` writes. ``backlog_files``/
    ``backlog_bytes`` written upstream and not yet read downstream (Delta: ``backlog_versions``);
    ``learnt`` False for an edge only the pipeline definition declares (no batch has crossed
    it yet: no backlog known)."""

    upstream: str
    downstream: str
    backlog_files: int | None = None
    backlog_bytes: int | None = None
    backlog_versions: int | None = None
    end_to_end_ms: int | None = None
    learnt: bool = True


@dataclass(frozen=True, slots=True)
class PipelineGraph:
    """The pipeline at ``at_ms`` (epoch ms): ``layers`` (column, row order), ``links``,
    the ``slowest`` layer's name and ``end_to_end_ms``: the largest end-to-end latency of the
    last layers (those nothing reads)."""

    layers: tuple[Layer, ...]
    links: tuple[Link, ...]
    slowest: str | None
    end_to_end_ms: int | None
    at_ms: int

    def layer(self, name: str) -> Layer:
        """The layer called ``name``; ``KeyError`` when there is none."""
        for lay in self.layers:
            if lay.name == name:
                return lay
        raise KeyError(name)

    def incoming(self, name: str) -> list[Link]:
        return [e for e in self.links if e.downstream == name]

    @property
    def columns(self) -> int:
        return 1 + max((lay.column for lay in self.layers), default=-1)


def layout(names: list[str], pairs: Iterable[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """name → (column, row): column = longest path from a layer without upstream (a cycle is
    cut where it closes); within a column, layers follow the mean row of their upstreams
    (fewer crossings), then ``names`` order."""
    downs: dict[str, list[str]] = {n: [] for n in names}
    for u, d in pairs:
        if u in downs and d in downs and u != d and d not in downs[u]:
            downs[u].append(d)
    ups: dict[str, list[str]] = {n: [] for n in names}
    state: dict[str, bool] = {}  # False: on the DFS path, True: done

    def visit(n: str) -> None:  # drops the edges closing a cycle (back edges)
        state[n] = False
        for d in downs[n]:
            if state.get(d) is False:
                continue
            ups[d].append(n)
            if d not in state:
                visit(d)
        state[n] = True

    has_up = {d for ds in downs.values() for d in ds}
    for n in [n for n in names if n not in has_up] + names:
        if n not in state:
            visit(n)
    column: dict[str, int] = {}

    def depth(n: str) -> int:
        if n not in column:
            column[n] = max((depth(u) + 1 for u in ups[n]), default=0)
        return column[n]

    for n in names:
        depth(n)
    pos: dict[str, tuple[int, int]] = {}
    for c in range(max(column.values(), default=-1) + 1):
        members = [n for n in names if column[n] == c]

        def key(n: str) -> tuple[float, int]:
            rows = [pos[u][1] for u in ups[n] if u in pos]
            return (sum(rows) / len(rows) if rows else -1.0, names.index(n))

        for row, n in enumerate(sorted(members, key=key)):
            pos[n] = (c, row)
    return pos


def graph_of_watch(watch: CheckpointWatch, names: list[str] | None = None,
                   declared: Iterable[tuple[str, str]] = (), now_ms: int | None = None) -> PipelineGraph:
    """The pipeline a watch follows now. ``names``: every layer to draw in this order (default:
    the watched queries; a name not watched shows ``not started``); ``declared``: (upstream,
    downstream) names from a pipeline definition, drawn until a batch teaches the edge."""
    chain = watch.chain
    watchers = {w.name: w for w in watch.watchers}
    order = list(names) if names is not None else list(watchers)
    order += [n for n in watchers if n not in order]
    now = int(watch.clock() * 1000) if now_ms is None else now_ms
    learnt: list[PipelineEdge] = chain.edges(now) if chain is not None else []
    links = {(e.upstream, e.downstream): Link(e.upstream, e.downstream, e.backlog_files, e.backlog_bytes,
                                              e.backlog_versions, e.end_to_end_ms) for e in learnt}
    for u, d in declared:
        if u in order and d in order:
            links.setdefault((u, d), Link(u, d, learnt=False))
    slowest_url = chain.slowest() if chain is not None else None
    pos = layout(order, links)
    layers = []
    for n in order:
        w = watchers.get(n)
        col, row = pos[n]
        if w is None:
            layers.append(Layer(n, col, row))
            continue
        s = w.judge(now)
        status = "stuck" if s.stuck else "idle" if s.idle else "active" if s.last_committed_batch_id is not None else "starting"
        layer_state = chain.layers.get(w.url) if chain is not None else None
        layers.append(Layer(
            n, col, row, s.last_committed_batch_id, s.in_flight_batch_id, s.in_flight_s, status,
            chain.layer_latency_ms(w.url) if layer_state is not None and chain is not None else None,
            layer_state.last_e2e if layer_state is not None else None, w.url == slowest_url))
    layers.sort(key=lambda lay: (lay.column, lay.row))
    has_down = {u for u, _ in links}
    ends = [lay.end_to_end_ms for lay in layers if lay.name not in has_down and lay.end_to_end_ms is not None]
    slowest = next((lay.name for lay in layers if lay.slowest), None)
    return PipelineGraph(tuple(layers), tuple(sorted(links.values(), key=lambda e: (e.upstream, e.downstream))),
                         slowest, max(ends) if ends else None, now)


class PlanPipeline:
    """A checkpoint watch over a pipeline definition's checkpoints (the live dashboard's
    pipeline tab): each query's checkpoint is watched from the poll it first exists on.
    :meth:`poll` reads what changed and returns the graph; never raises for a checkpoint that
    is not written yet or unreadable for a moment (it is tried again next poll)."""

    def __init__(self, plan: RunPlan, poll_s: float = 2.0, storage_options: dict[str, Any] | None = None) -> None:
        self.plan = plan
        self.watch = CheckpointWatch([], poll_s=poll_s, storage_options=storage_options, rediscover_s=None,
                                     allow_empty=True)
        self._opened = False

    def poll(self) -> PipelineGraph:
        if not self._opened:
            self.watch.open()
            self._opened = True
        else:
            self.watch.poll()
        watched = {w.name for w in self.watch.watchers}
        for q in self.plan.queries:
            cp = q.checkpoint
            if q.query_name in watched or not cp or "://" in cp:
                continue
            if os.path.isdir(os.path.join(cp, "offsets")) and os.path.isfile(os.path.join(cp, "metadata")):
                try:
                    self.watch.add(cp, q.query_name, q.table or None)
                except WatchError:
                    continue  # mid-creation: next poll
        return graph_of_watch(self.watch, [q.query_name for q in self.plan.queries], self.plan.edges)
