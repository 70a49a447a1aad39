"""A Delta sink table's transaction log, as read from disk: ``<sink>/_delta_log/<version>.json``
commits (add/remove counts, the streaming ``txn`` = query id and batch id, commitInfo) and the
parquet checkpoint versions present. Times are epoch milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeltaCommit:
    """One ``_delta_log/<version>.json`` commit: ``adds``/``removes`` file action counts,
    the streaming ``txn`` (appId = query id, ``txn_version`` = batch id) when present, the
    ``operation`` and ``query_id``/``epoch_id`` from commitInfo, ``timestamp_ms`` epoch ms,
    ``rows_written`` (commitInfo ``operationMetrics.numOutputRows``; None when not recorded),
    ``data_adds``/``data_add_bytes`` (the ``add`` actions with ``dataChange`` true and their
    ``size``, bytes — the files a Delta streaming source reads, numbered 0, 1, … in commit
    order by its offsets' ``index``; OPTIMIZE's rewrites are not among them) and ``table_id``
    (the ``metaData`` action's ``id``, when this commit has one)."""

    version: int
    adds: int = 0
    removes: int = 0
    txn_app_id: str | None = None
    txn_version: int | None = None
    operation: str | None = None
    query_id: str | None = None
    epoch_id: int | None = None
    timestamp_ms: int | None = None
    rows_written: int | None = None
    data_adds: int = 0
    data_add_bytes: int = 0
    table_id: str | None = None


@dataclass(frozen=True, slots=True)
class DeltaLog:
    """A Delta table's ``_delta_log``: commits by version, ``checkpoint_versions`` (parquet
    checkpoints present) and the last streaming ``txn`` seen (appId, version)."""

    path: str
    commits: tuple[DeltaCommit, ...] = ()
    checkpoint_versions: tuple[int, ...] = ()

    @property
    def latest_version(self) -> int | None:
        return self.commits[-1].version if self.commits else None

    @property
    def table_id(self) -> str | None:
        """The table's id (``metaData.id``; what a Delta source offset calls ``reservoirId``)."""
        return next((c.table_id for c in self.commits if c.table_id), None)

    @property
    def last_txn(self) -> tuple[str, int] | None:
        for c in reversed(self.commits):
            if c.txn_app_id is not None and c.txn_version is not None:
                return c.txn_app_id, c.txn_version
        return None

    def versions_for_batch(self, batch_id: int, query_id: str | None) -> tuple[int, ...]:
        return tuple(
            c.version
            for c in self.commits
            if c.txn_version == batch_id and (query_id is None or c.txn_app_id in (None, query_id))
        )


@dataclass(frozen=True, slots=True)
class DeltaBacklog:
    """What a Delta streaming source has not read yet from its table: ``versions`` (commits
    after its offset, counting a version it has read part of), ``files`` (``add`` actions in
    them not read yet), ``bytes`` (their size; None when the backlog includes a starting
    snapshot, whose file sizes the commits alone do not give), ``latest_version`` of the table
    and ``next_version`` (the first version not fully read)."""

    versions: int
    files: int
    bytes: int | None
    latest_version: int | None
    next_version: int


def delta_backlog(commits: Iterable[DeltaCommit], reservoir_version: int, index: int = -1,
                  starting: bool = False) -> DeltaBacklog:
    """The backlog of a Delta source whose offset (``DeltaSourceOffset``) is
    (``reservoir_version``, ``index``, ``starting`` = ``isStartingVersion``) against the
    table's ``commits`` (any order; versions the offset has passed may be missing).

    Delta's offset (``DeltaSource``) means: the data files of version ``reservoir_version``
    up to number ``index`` have been read (a negative ``index``, -1 as written: none of that
    version yet; after a version's last file the offset moves to the next version, index -1),
    and with ``starting`` that version's *snapshot* (every live file, numbered in order of
    modification time) is being read rather than its commit. A snapshot's live files are
    counted as adds minus removes of the commits given (exact when they go back to version 0)."""
    ordered = sorted(commits, key=lambda c: c.version)
    latest = ordered[-1].version if ordered else None
    versions = files = size = 0
    exact_bytes = True
    next_version: int | None = None
    if starting:
        live = sum(c.adds - c.removes for c in ordered if c.version <= reservoir_version)
        left = max(0, live - (index + 1 if index >= 0 else 0))
        if left or index < 0:
            versions, files, exact_bytes, next_version = 1, left, False, reservoir_version
    for c in ordered:
        if c.version < reservoir_version or (starting and c.version == reservoir_version):
            continue
        if c.version == reservoir_version and index >= 0:
            rest = max(0, c.data_adds - (index + 1))
            if rest:
                versions, files = versions + 1, files + rest
                exact_bytes = False
                next_version = c.version if next_version is None else next_version
            continue
        versions, files, size = versions + 1, files + c.data_adds, size + c.data_add_bytes
        next_version = c.version if next_version is None else next_version
    if next_version is None:
        next_version = (latest + 1) if latest is not None and latest >= reservoir_version else reservoir_version
    return DeltaBacklog(versions, files, size if exact_bytes else None, latest, next_version)
