"""Many checkpoints at once (``streamwatch inspect --recursive ROOT``): find every checkpoint
under a folder (local or any fsspec URL) and summarise each in one row.

A checkpoint is a folder holding ``offsets/`` and a ``metadata`` file (what
``StreamExecution`` writes first); the search does not descend into one, nor into
``state/``, ``_spark_metadata/``, ``_delta_log/`` or hidden folders (but into a Spark
Declarative Pipelines storage's ``_checkpoints/``: :mod:`streamwatch.checkpoint.sdp`). Folders are listed level by
level, ``Storage.concurrency`` listings at a time (object storage is latency-bound), and the
checkpoints are read the same way.

Each checkpoint is read and judged by the caller's ``read`` — ``streamwatch inspect``'s own
reading (sink discovery from the pipeline definition, the reader's findings, the state audit),
so a row's verdict is the worst of the findings ``inspect`` shows for that checkpoint, never a
second, thinner judgement.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from streamwatch.checkpoint.fs import Storage, StorageError, open_storage, url_of
from streamwatch.checkpoint.reader import CheckpointError
from streamwatch.checkpoint.sdp import CHECKPOINTS, sdp_flow, superseded
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.findings import SEVERITY_RANK, Finding, Severity, worst_severity

#: Folders never searched for checkpoints (they belong to one).
SKIP = {"state", "offsets", "commits", "sources", "_spark_metadata", "_delta_log"}
MAX_DEPTH = 8
#: Checkpoints read at once on a local disk.
LOCAL_THREADS = 4


@dataclass(frozen=True, slots=True)
class FleetRow:
    """One checkpoint: ``path`` (as given: local path or URL), ``name`` (``pipeline/layer``
    for a streamwatch workspace's ``checkpoints/<pipeline>/<layer>``, ``database.table``
    or ``database.table ← flow`` for a Spark Declarative Pipelines flow — ``(superseded)``
    when a later full refresh replaced it — else None),
    ``query_id``, ``latest_batch`` / ``last_committed`` / ``in_flight`` batch ids,
    ``last_commit_ms`` (epoch ms the last ``commits/N`` file was written; None when unknown),
    ``state_bytes`` (None when not measured), ``files`` in state, the ``worst`` severity with its
    first ``finding``, and ``error`` (one line) when the checkpoint could not be read."""

    path: str
    name: str | None
    query_id: str | None = None
    latest_batch: int | None = None
    last_committed: int | None = None
    in_flight: int | None = None
    last_commit_ms: int | None = None
    state_bytes: int | None = None
    worst: Severity | None = None
    finding: Finding | None = None
    error: str | None = None

    @property
    def rank(self) -> int:
        """Sort key: unreadable 3, errors 2, warnings 1, info 0, healthy -1."""
        if self.error is not None:
            return 3
        return SEVERITY_RANK[self.worst] if self.worst else -1


def _url(raw_root: str, root: str, path: str) -> str:
    """``path`` (in the storage's terms) as the user would type it (an Azure URL keeps its
    ``@ACCOUNT.dfs.core.windows.net``: see :func:`~streamwatch.checkpoint.fs.url_of`)."""
    return url_of(raw_root, path)


def find_checkpoints(storage: Storage, root: str) -> list[str]:
    """Every checkpoint folder under ``root`` (``root`` itself included), sorted."""
    found: list[str] = []
    level = [root]
    for _ in range(MAX_DEPTH + 1):
        if not level:
            break
        listings = storage.map_concurrent(storage.list, level)
        nxt: list[str] = []
        for folder, items in zip(level, listings, strict=True):
            if not items:
                continue
            names = {i.name: i.is_dir for i in items}
            if names.get("offsets") is True and names.get("metadata") is False:
                found.append(folder)
                continue
            nxt += [storage.join(folder, i.name) for i in items if i.is_dir and i.name not in SKIP
                    and (i.name == CHECKPOINTS or not i.name.startswith((".", "_")))]
        level = sorted(nxt)
    return sorted(found)


def _name(path: str, old: AbstractSet[str] = frozenset()) -> str | None:
    flow = sdp_flow(path)
    if flow is not None:
        return flow.name + (" (superseded)" if path in old else "")
    parts = path.rstrip("/").replace("\\", "/").split("/")
    if len(parts) >= 3 and parts[-3] == "checkpoints":
        return f"{parts[-2]}/{parts[-1]}"
    return None


#: Reads one checkpoint (its path or URL as the user would type it) with every finding
#: ``inspect`` shows for it; raises :class:`CheckpointError` when it cannot be read.
ReadCheckpoint = Callable[[str], Checkpoint]


def read_fleet(raw_root: str, *, read: ReadCheckpoint, storage_options: dict[str, Any] | None = None) -> list[FleetRow]:
    """Find and summarise every checkpoint under ``raw_root`` (local folder or fsspec URL),
    worst first (unreadable, errors, warnings, info, healthy; then by path). ``read`` reads
    each one as ``inspect`` does (the CLI passes its own reading: this package cannot import
    the state audit or the pipeline definitions), so ``worst`` is the worst severity of the
    findings ``inspect`` shows. Raises :class:`CheckpointError` when ``raw_root`` itself is
    missing or not a folder."""
    try:
        storage, root = open_storage(raw_root, storage_options)
        kind = storage.kind(root)
    except StorageError as e:
        raise CheckpointError(str(e)) from None
    if kind != "dir":
        raise CheckpointError(f"{raw_root}: {'no such file or directory' if kind is None else 'not a directory'}")
    paths = find_checkpoints(storage, root)
    old = superseded(paths)

    def one(path: str) -> FleetRow:
        url = _url(raw_root, root, path)
        name = _name(path, old)
        try:
            cp = read(url)
        except CheckpointError as e:
            return FleetRow(url, name, error=str(e))
        except Exception as e:  # noqa: BLE001 - one bad checkpoint never stops the fleet
            return FleetRow(url, name, error=f"unreadable ({type(e).__name__}: {e})")
        done = cp.last_committed_batch_id
        commit_ms = storage.mtime_ms(storage.join(path, "commits", str(done))) if done is not None else None
        worst = worst_severity(cp.findings)
        first = next((f for f in cp.findings if f.severity == worst), None)
        total = None if any(op.bytes is None for op in cp.state) else sum(op.bytes or 0 for op in cp.state)
        return FleetRow(url, name, cp.query_id, cp.latest_batch_id, done, cp.in_flight_batch_id, commit_ms, total, worst, first)

    if storage.concurrency > 1:
        rows = storage.map_concurrent(one, paths)
    else:  # local: threads overlap the reads' and stats' system calls (they release the GIL)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=LOCAL_THREADS) as pool:
            rows = list(pool.map(one, paths))
    return sorted(rows, key=lambda r: (-r.rank, r.path))


def age_text(ms: int | None, now_ms: int | None = None) -> str:
    """``3 s``, ``12 min``, ``5 h``, ``2 d`` since ``ms`` (``-`` for None)."""
    if ms is None:
        return "-"
    s = max(0, ((now_ms if now_ms is not None else int(time.time() * 1000)) - ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s // size} {unit}"
    return f"{s} s"


__all__ = ["FleetRow", "age_text", "find_checkpoints", "read_fleet"]
