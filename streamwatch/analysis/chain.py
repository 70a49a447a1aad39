"""The pipeline DAG of watched queries and its backlog per edge (UI-free).

Two watched queries are chained when one's source reads what the other's sink writes: a file
source reads files inside the folder a file sink writes (same path), or a Delta source's
``reservoirId`` is the id of the Delta table a Delta sink writes. Edges are learnt from the
batches themselves (the checkpoint does not name a file source's folder), so an edge appears
with the first batch that reads an upstream file; fan-in and fan-out follow.

Per edge: **backlog** (files and bytes the upstream committed that the downstream has not read;
for Delta, the versions and files after the downstream's latest Delta source offset — see
:func:`~streamwatch.model.deltalog.delta_backlog`), the downstream's **layer latency** (median over recent batches of commit
time minus the oldest input file's modification time) and the **end-to-end latency** of its
latest batch (commit time minus the landing time of the oldest file it carries, followed
through every watched upstream: a file sink's part files, a Delta sink's table versions). The layer with the largest layer latency is marked slowest.

Spark Declarative Pipelines flows (:mod:`streamwatch.checkpoint.sdp`) name no sink in their
checkpoint: a flow's sink is its table. A file read under a folder that is the session
catalog's folder of exactly one watched flow's table
(:func:`~streamwatch.checkpoint.sdp.is_table_folder`), when that folder holds a file-sink log
(``_spark_metadata``), makes that flow the upstream; the log gives what each of its batches wrote.
"""

from __future__ import annotations

import posixpath
import statistics
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TypeVar

from streamwatch.analysis.batchio import FileSinkReader
from streamwatch.analysis.probe import Probe, ProbeError, same_place
from streamwatch.analysis.records import CheckpointBatch, PipelineEdge
from streamwatch.analysis.watch import CheckpointWatcher
from streamwatch.checkpoint.sdp import SdpFlow, is_table_folder, sdp_flow
from streamwatch.model.deltalog import delta_backlog

#: Files remembered per query (written by a sink / read by a source) for backlog and lineage.
REMEMBERED_FILES = 200_000
LATENCY_BATCHES = 20
#: Delta versions remembered per query writing a Delta table (their origins, for end-to-end latency)
DELTA_VERSIONS = 10_000

_K = TypeVar("_K")
_V = TypeVar("_V")


@dataclass
class _Layer:
    watcher: CheckpointWatcher
    written: OrderedDict[str, tuple[int, int, int]] = field(default_factory=OrderedDict)  # file → (size, batch, origin)
    read: OrderedDict[str, str] = field(default_factory=OrderedDict)  # file → upstream query id (or "")
    latencies: deque[int] = field(default_factory=lambda: deque(maxlen=LATENCY_BATCHES))
    last_e2e: int | None = None
    #: Delta sources: upstream url → latest offset read from it (version, index, starting)
    delta_read: dict[str, tuple[int, int, bool]] = field(default_factory=dict)
    delta_table: str | None = None
    #: Delta sink: table version → origin (epoch ms: landing time of the oldest file it carries)
    version_origin: OrderedDict[int, int] = field(default_factory=OrderedDict)


def _delta_origins(version_origin: OrderedDict[int, int], versions: tuple[int, int],
                   position: tuple[int, int, bool] | None) -> list[int]:
    """Origins of the upstream Delta versions one batch read. Delta's source offset
    (``reservoirVersion``, ``index``, ``isStartingVersion``; see
    :func:`~streamwatch.model.deltalog.delta_backlog`) says the files of a version up to
    ``index`` are read, none of it when ``index`` is negative: a batch from the previous offset's
    version ``lo`` to this one's ``hi`` read versions ``lo`` … ``hi`` (``hi - 1`` when its index
    is negative); a starting version is read as a snapshot of every version up to it."""
    lo, hi = versions
    if position is not None:
        _, index, starting = position
        if index < 0 and not starting:
            hi -= 1
        if starting:
            lo = min(version_origin, default=lo)
    return [o for v, o in version_origin.items() if lo <= v <= hi]


def _bounded(d: OrderedDict[_K, _V], limit: int = REMEMBERED_FILES) -> None:
    while len(d) > limit:
        d.popitem(last=False)


class PipelineChain:
    """Learns edges and lineage from batches in commit order; call :meth:`observe` with each
    new batch (upstream batches before the downstream batches that read them — the order in
    which their commits appear) and :meth:`edges` for the current picture."""

    def __init__(self, watchers: list[CheckpointWatcher]) -> None:
        self.layers: dict[str, _Layer] = {}
        self._sinks: dict[str, str] = {}  # sink folder key → watcher url
        self._delta_tables: dict[str, str] = {}  # Delta table id → watcher url
        self.edges_seen: dict[tuple[str, str], str] = {}  # (up url, down url) → path
        self._sdp: dict[str, SdpFlow] = {}  # watcher url → its SDP flow
        self._sdp_sinks: dict[str, tuple[str, FileSinkReader]] = {}  # SDP flow url → (table folder, its sink log)
        self._sdp_read: dict[str, set[int]] = {}  # SDP flow url → batches whose sink files are known
        for w in watchers:
            self.add(w)

    def add(self, w: CheckpointWatcher) -> None:
        """Take part in the chain (an opened watcher; a query found after the start)."""
        self.layers[w.url] = _Layer(w)
        if w.sink_url:
            self._sinks[same_place(w.sink_url)] = w.url
        if w.delta_sink is not None and w.delta_sink.table_id:
            self._delta_tables[w.delta_sink.table_id] = w.url
        flow = sdp_flow(w.url)
        if flow is not None and not w.sink_url:
            self._sdp[w.url] = flow

    def _upstream_of(self, file_uri: str) -> str | None:
        folder = posixpath.dirname(same_place(file_uri))
        while folder and folder != "/":
            up = self._sinks.get(folder)
            if up is not None:
                return up
            folder = posixpath.dirname(folder)
        return self._sdp_upstream(file_uri)

    def _sdp_upstream(self, file_uri: str) -> str | None:
        """The SDP flow whose table folder holds ``file_uri`` (the only watched flow writing that
        table), learnt as its sink from now on; None when none or several match."""
        raw = posixpath.dirname(file_uri.rstrip("/"))
        while raw and "/" in raw.strip("/"):
            folder = same_place(raw)
            ups = [url for url, flow in self._sdp.items() if url not in self._sdp_sinks and is_table_folder(folder, flow)]
            if len(ups) == 1:
                try:
                    probe = Probe(folder if raw.startswith("file:") or "://" not in raw else raw)
                except ProbeError:
                    return None
                if not probe.names(probe.join(probe.root, "_spark_metadata")):
                    return None  # no file-sink log to read there (moved, elsewhere): no edge, no backlog guessed
                self._sinks[folder] = ups[0]
                self._sdp_sinks[ups[0]] = (folder, FileSinkReader(probe, probe.root))
                self._sdp_written(ups[0])
                return ups[0]
            raw = posixpath.dirname(raw)
        return None

    def _sdp_written(self, url: str) -> None:
        """Fill what the SDP flow at ``url`` wrote, batch by committed batch, from its table's
        file-sink log (its checkpoint names no sink, so its batches carry no output)."""
        got = self._sdp_sinks.get(url)
        if got is None:
            return
        layer, done = self.layers[url], self._sdp_read.setdefault(url, set())
        origins = {b.batch_id: b.origin_ms for b in layer.watcher.batches}
        for batch, committed in list(layer.watcher.commit_at.items()):
            if batch in done:
                continue
            out = got[1].output(batch, None)
            done.add(batch)
            if out is None:
                continue
            for uri, size in zip(out.paths, out.sizes or (0,) * len(out.paths), strict=True):
                layer.written[same_place(uri)] = (size, batch, origins.get(batch) or committed)
        _bounded(layer.written)

    def observe(self, rec: CheckpointBatch) -> CheckpointBatch:
        """Record ``rec`` (its reads, writes and latencies) and return it with ``origin_ms`` and
        ``end_to_end_ms`` filled in."""
        layer = self.layers.get(rec.checkpoint)
        if layer is None:
            return rec
        origins: list[int] = []
        oldest_input: int | None = None
        for s in rec.inputs:
            for uri, mtime in zip(s.paths, s.file_mtimes_ms or (0,) * len(s.paths), strict=True):
                key = same_place(uri)
                up = self._upstream_of(uri)
                layer.read[key] = up or ""
                if up is not None and up != rec.checkpoint:
                    self._sdp_written(up)
                    self.edges_seen.setdefault((up, rec.checkpoint), self._sink_of(up))
                    got = self.layers[up].written.get(key)
                    origins.append(got[2] if got else mtime)
                else:
                    origins.append(mtime)
                if mtime:
                    oldest_input = mtime if oldest_input is None else min(oldest_input, mtime)
            if s.kind == "delta" and s.versions is not None:
                up = self._delta_tables.get(s.offset or "")
                if up is not None and up != rec.checkpoint:
                    self.edges_seen.setdefault((up, rec.checkpoint), self.layers[up].watcher.sink_url or "")
                    layer.delta_read[up] = s.position if s.position is not None else (s.versions[1], -1, False)
                    origins.extend(_delta_origins(self.layers[up].version_origin, s.versions, s.position))
        _bounded(layer.read)
        origin = min((o for o in origins if o), default=None)
        rec = layer.watcher.with_lineage(rec, origin)
        layer.last_e2e = rec.end_to_end_ms if rec.end_to_end_ms is not None else layer.last_e2e
        if oldest_input is not None:
            layer.latencies.append(rec.committed_at_ms - oldest_input)
        elif rec.duration_ms is not None:
            layer.latencies.append(rec.duration_ms)
        if rec.output is not None and rec.output.kind == "file":
            sizes = rec.output.sizes or (0,) * len(rec.output.paths)
            for uri, size in zip(rec.output.paths, sizes, strict=True):
                layer.written[same_place(uri)] = (size, rec.batch_id, origin or rec.committed_at_ms)
            _bounded(layer.written)
        if rec.output is not None and rec.output.kind == "delta":
            for v in rec.output.versions:
                layer.version_origin[v] = origin or rec.committed_at_ms
            _bounded(layer.version_origin, DELTA_VERSIONS)
        return rec

    def _sink_of(self, url: str) -> str:
        sdp = self._sdp_sinks.get(url)
        return self.layers[url].watcher.sink_url or (sdp[0] if sdp is not None else "")

    def layer_latency_ms(self, url: str) -> int | None:
        lat = self.layers[url].latencies
        return int(statistics.median(lat)) if lat else None

    def slowest(self) -> str | None:
        """Url of the watched query with the largest layer latency (None before any batch)."""
        best = [(self.layer_latency_ms(u), u) for u in self.layers]
        best = [(v, u) for v, u in best if v is not None]
        return max(best)[1] if best else None

    def edges(self, now_ms: int = 0) -> list[PipelineEdge]:
        """Every learnt edge with its backlog and latencies now."""
        slowest = self.slowest()
        out = []
        for (up, down), path in sorted(self.edges_seen.items()):
            u, d = self.layers[up], self.layers[down]
            versions = None
            lag_s: float | None = 0.0
            read = d.delta_read.get(up)
            if u.watcher.delta_sink is not None and read is not None:
                u.watcher.delta_sink.catch_up()  # commits written since its last batch was seen
                b = delta_backlog(u.watcher.delta_sink.commits.values(), *read)
                versions, files, size = b.versions, b.files, b.bytes
                if versions:
                    first = u.watcher.delta_sink.commits.get(b.next_version)
                    at = first.timestamp_ms if first is not None else None
                    lag_s = max(0.0, (now_ms - at) / 1000) if at is not None else None
            else:
                self._sdp_written(up)
                read_batches = [u.written[k][1] for k, src in d.read.items() if src == up and k in u.written]
                floor = min(read_batches) if read_batches else -1
                pending = [(k, v) for k, v in u.written.items() if k not in d.read and v[1] >= floor]
                files = len(pending)
                size = sum(v[0] for _, v in pending)
                if pending:
                    at = u.watcher.commit_at.get(min(v[1] for _, v in pending))
                    lag_s = max(0.0, (now_ms - at) / 1000) if at is not None else None
            out.append(PipelineEdge(
                upstream=u.watcher.name, downstream=d.watcher.name, upstream_id=u.watcher.query_id,
                downstream_id=d.watcher.query_id, path=path, backlog_files=files, backlog_bytes=size,
                backlog_versions=versions, layer_latency_ms=self.layer_latency_ms(down),
                end_to_end_ms=d.last_e2e, slowest=(down == slowest), at_ms=now_ms,
                slowest_layer=self.layers[slowest].watcher.name if slowest else None, lag_s=lag_s))
        return out
