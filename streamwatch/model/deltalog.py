"""A Delta sink table's transaction log, as read from disk: ``<sink>/_delta_log/<version>.json``
commits (add/remove counts, the streaming ``txn`` = query id and batch id, commitInfo) and the
parquet checkpoint versions present. Times are epoch milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeltaCommit:
    """One ``_delta_log/<version>.json`` commit: ``adds``/``removes`` file action counts,
    the streaming ``txn`` (appId = query id, ``txn_version`` = batch id) when present, the
    ``operation`` and ``query_id``/``epoch_id`` from commitInfo, ``timestamp_ms`` epoch ms,
    ``rows_written`` (commitInfo ``operationMetrics.numOutputRows``; None when not recorded)."""

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
