"""Watch several checkpoints at once and the pipeline they form: :class:`CheckpointWatch`
(UI-free; used by ``streamwatch watch --log`` and the dashboard's checkpoint backend).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from streamwatch.analysis.chain import PipelineChain
from streamwatch.analysis.discover import DiscoveryError, Found, discover
from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, PipelineEdge, SourceLag, WatchRecord
from streamwatch.analysis.watch import CheckpointWatcher, WatchError
from streamwatch.analysis.watch_kafka import KafkaOffsets

#: Object-store PATHs are searched for new checkpoints this many times less often.
URL_REDISCOVER_FACTOR = 10


class CheckpointWatch:
    """Every checkpoint found under ``paths`` (see :func:`~streamwatch.analysis.discover.discover`),
    each followed by a :class:`~streamwatch.analysis.watch.CheckpointWatcher`, plus the
    :class:`~streamwatch.analysis.chain.PipelineChain` between them.

    ``open()`` and ``poll()`` return the new records: batches (with lineage), status changes,
    findings, and the pipeline edges whenever a batch committed. Raises :class:`WatchError`
    when a PATH is missing, holds no checkpoint (unless ``allow_empty``), or a checkpoint
    cannot be read. Every ``rediscover_s`` seconds (0: every poll; None: never) local PATHs
    are searched again (a folder walk) and checkpoints that appeared since are watched too;
    URL PATHs every :data:`URL_REDISCOVER_FACTOR` × ``rediscover_s`` (a flat listing of
    everything under the PATH, so rarely). A PATH that is a checkpoint is never searched again."""

    def __init__(self, paths: list[str], *, poll_s: float = 1.0, history: int = 100,
                 storage_options: dict[str, Any] | None = None, clock: Callable[[], float] = time.time,
                 file_sizes: bool = True, rediscover_s: float | None = 30.0, allow_empty: bool = False,
                 kafka: KafkaOffsets | None = None) -> None:
        self.kafka = kafka  # every watcher's Kafka sources measured against this broker
        self.paths = list(paths)
        self.poll_s = poll_s
        self.history = history
        self.clock = clock
        self.options = storage_options
        self.file_sizes = file_sizes
        self.watchers: list[CheckpointWatcher] = []
        #: SDP flow checkpoints a later full refresh replaced (found, not watched)
        self.superseded: tuple[str, ...] = ()
        self.chain: PipelineChain | None = None
        self.edges: list[PipelineEdge] = []
        self.rediscover_s = rediscover_s
        self.allow_empty = allow_empty
        self._discovered_at: dict[str, float] = {}

    def found(self) -> list[Found]:
        """The checkpoints under PATHs now (raises :class:`WatchError`, see the class)."""
        out: list[Found] = []
        seen: set[str] = set()
        for p in self.paths:
            try:
                for f in discover(p, self.options):
                    if f.url not in seen:
                        seen.add(f.url)
                        out.append(f)
            except DiscoveryError as e:
                if not (self.allow_empty and "no checkpoint found" in str(e)):
                    raise WatchError(str(e)) from None
        names = [f.name for f in out]
        return [f if names.count(f.name) == 1 else Found(f.url, f.url) for f in out]

    def _watcher(self, f: Found, sink: str | None = None) -> CheckpointWatcher:
        return CheckpointWatcher(f.url, f.name, history=self.history, poll_s=self.poll_s, sink=sink,
                                 storage_options=self.options, clock=self.clock, file_sizes=self.file_sizes,
                                 kafka=self.kafka)

    def open(self) -> list[WatchRecord]:
        """Discover and open every checkpoint; the records of their recent history."""
        found = self.found()
        self._discovered_at = dict.fromkeys(self.paths, time.monotonic())
        self.watchers = [self._watcher(f) for f in found]
        self.superseded = tuple(old for f in found for old in f.superseded)
        raw: list[WatchRecord] = []
        for w in self.watchers:
            raw.extend(w.open())
        self.chain = PipelineChain(self.watchers)
        return self._finish(raw)

    def poll(self) -> list[WatchRecord]:
        """One look at every checkpoint (and for new ones when due); the new records."""
        raw: list[WatchRecord] = []
        if self.kafka is not None:
            self.kafka.next_poll()
        if self.rediscover_s is not None:
            now = time.monotonic()
            for p in self._searchable():
                factor = URL_REDISCOVER_FACTOR if "://" in p else 1
                if now - self._discovered_at.get(p, 0.0) >= self.rediscover_s * factor:
                    self._discovered_at[p] = now
                    raw.extend(self._rediscover(p))
        for w in self.watchers:
            raw.extend(w.poll())
        return self._finish(raw)

    def _searchable(self) -> list[str]:
        """PATHs that are not themselves a watched checkpoint."""
        known = {w.url.rstrip("/") for w in self.watchers}
        return [p for p in self.paths if p.rstrip("/") not in known and os.path.realpath(p) not in known]

    def _rediscover(self, path: str) -> list[WatchRecord]:
        assert self.chain is not None
        known = {w.url for w in self.watchers}
        try:
            fresh = [f for f in discover(path, self.options) if f.url not in known]
        except DiscoveryError:
            return []  # a PATH vanished for a moment, or nothing yet: keep watching what is known
        out: list[WatchRecord] = []
        for f in fresh:
            w = self._watcher(f)
            try:
                out.extend(w.open())
            except WatchError:
                continue  # still being created: next time
            self.watchers.append(w)
            self.chain.add(w)
        return out

    def add(self, url: str, name: str, sink: str | None = None) -> list[WatchRecord]:
        """Watch one more checkpoint ``url`` shown as ``name`` (after :meth:`open`; ``sink``: its
        file-sink folder or Delta table when known); its recent history's records. Raises
        :class:`WatchError` when it cannot be read (yet)."""
        assert self.chain is not None, "open() first"
        w = self._watcher(Found(url, name), sink)
        records = w.open()
        self.watchers.append(w)
        self.chain.add(w)
        return self._finish(records)

    def statuses(self) -> list[CheckpointStatus]:
        return [w.judge() for w in self.watchers]

    def lags(self) -> list[SourceLag]:
        """Every watched file and Kafka source's latest :class:`SourceLag`."""
        return [lag for w in self.watchers for lag in w.lags.values()]

    def _finish(self, raw: Sequence[WatchRecord]) -> list[WatchRecord]:
        """Batches through the chain in commit order (so an upstream batch's lineage is known
        before a downstream batch that reads its files), then the edges if anything committed."""
        assert self.chain is not None
        batches = sorted((r for r in raw if isinstance(r, CheckpointBatch)), key=lambda b: (b.committed_at_ms, b.batch_id))
        lineage = {id(b): self.chain.observe(b) for b in batches}
        out: list[WatchRecord] = [lineage.get(id(r), r) if isinstance(r, CheckpointBatch) else r for r in raw]
        if batches:
            self.edges = self.chain.edges(int(self.clock() * 1000))
            out.extend(self.edges)
        return out
