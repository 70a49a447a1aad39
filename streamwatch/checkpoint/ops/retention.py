"""``streamwatch retention``: what Spark's own cleanup deletes next, and what it never will
(schema ``streamwatch.retention/1``). Read-only: a plan with bytes, nothing is deleted.

The rules mirror Spark 4.x (read from its sources, re-stated here):

* offsets/commits (``MicroBatchExecution.constructNextBatch`` → ``purge``): when batch N is
  planned and ``minBatchesToRetain < N``, every ``offsets/i`` and ``commits/i`` with
  ``i < N - minBatchesToRetain`` is deleted (``HDFSMetadataLog.purge``; asynchronous when
  ``spark.sql.streaming.asyncLogPurge.enabled``, the default).
* state is planned for the maintenance that follows the next batch, i.e. with V = the store's
  latest version + 1 (the version the next batch commits). Maintenance runs on a timer
  (``stateStore.maintenanceInterval``, 60 s) or, with ``stateStore.unloadOnCommit``, in the
  task right after each commit (``StateStoreRDD`` → ``StateStore.doMaintenanceAndUnload``).
* HDFS-backed state (``HDFSBackedStateStoreProvider.cleanup``):
  ``E = V - minBatchesToRetain``; when E > 0 the files needed to load E (latest snapshot at or
  before E, else the first delta) start at version S, and every version below S is deleted —
  one file per version, the snapshot when a version has both, so a ``.delta`` beside a deleted
  ``.snapshot`` goes one maintenance later (``delete_after_next``). Checked against Spark 4.2
  by ``tests/ops/test_ops_retention.py``.
* RocksDB state (``RocksDBFileManager.deleteOldVersions``, Spark 4.2): the commit of V writes
  ``V.zip`` unless the store keeps changelogs; Spark keeps from the newest zip at or below
  ``V - minBatchesToRetain + 1`` and, with ``spark.sql.streaming.stateStore.
  maxVersionsToDeletePerMaintenance`` = k ≥ 0 (default -1: no cap), at or below the oldest
  zip + k; when no zip lies below that version nothing is deleted, else every zip and
  ``.changelog`` below it goes, with the SST files only those versions name. Checked against
  Spark 4.2 by ``tests/ops/test_ops_retention.py`` (one zip per commit, ``unloadOnCommit``,
  ``ratioExtraSpaceAllowedInCheckpoint`` 0; three batches in a row, and a cap of 2; in those
  runs no dropped version freed an SST, so SST freeing is pinned only by the on-disk tests).
  Not modelled: Spark waits until ``round(spark.sql.streaming.ratioExtraSpaceAllowedInCheckpoint
  (0.3) × minBatchesToRetain)`` versions are stale, counted from versions the executor's file
  manager saw in memory (so with the default ratio Spark may delete later than planned, never
  other files); with changelogs a snapshot zip the maintenance uploads first; and orphan SST
  and log files older than every tracked file, which Spark also deletes (listed apart here).
* file source/sink logs (``CompactibleFileStreamLog``; a source's is ``sources/<index>/``, or
  ``sources/<name>/`` for a named source): batch ``b`` is a compaction when
  ``(b + 1) % interval == 0``; the ``.compact`` file re-writes the previous compact file plus
  every batch since. After adding batch C, when ``interval <= C + 1 - minBatchesToRetain``,
  files with id below ``M - M % interval - 1`` (``M = C + 1 - minBatchesToRetain``) and older
  than the cleanup delay (10 min) are deleted. Compact files only grow: nothing in them is
  ever dropped (the sink keeps ``delete`` lines too).
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

import orjson

from streamwatch.checkpoint.fs import Storage
from streamwatch.model.checkpoint import Checkpoint, CompactibleLog, StateOperator

SCHEMA = "streamwatch.retention/1"
DEFAULT_MIN_BATCHES = 100
DEFAULT_COMPACT_INTERVAL = 10
MIN_BATCHES_KEY = "spark.sql.streaming.minBatchesToRetain"
_STATE_FILE = re.compile(r"^(\d+)(?:_([0-9A-Za-z-]+))?\.(delta|snapshot|zip|changelog)$")
_HEADER = len(b"v1\n")


def min_batches(cp: Checkpoint, override: int | None) -> tuple[int, str]:
    """(minBatchesToRetain, where it comes from: ``option``, ``offsets conf`` or ``default``)."""
    if override is not None:
        return override, "option"
    latest = cp.latest_offsets
    raw = latest.conf.get(MIN_BATCHES_KEY) if latest else None
    if raw is not None and str(raw).isdigit():
        return int(raw), "offsets conf"
    return DEFAULT_MIN_BATCHES, "default"


def _sizes(storage: Storage, folder: str) -> dict[str, int]:
    return {i.name: i.size for i in storage.list(folder) or [] if not i.is_dir}


def _batch_logs(storage: Storage, root: str, cp: Checkpoint, m: int) -> dict[str, Any]:
    latest = cp.latest_batch_id
    nxt = None if latest is None else latest + 1
    threshold = None if nxt is None or m >= nxt else nxt - m
    out: dict[str, Any] = {"next_batch": nxt, "purge_below": threshold}
    for name, ids in (("offsets", cp.offset_batch_ids), ("commits", cp.commit_batch_ids)):
        sizes = _sizes(storage, storage.join(root, name))
        gone = [b for b in ids if threshold is not None and b < threshold]
        kept = [b for b in ids if b not in set(gone)]
        out[name] = {
            "files": len(ids),
            "bytes": sum(sizes.get(str(b), 0) for b in ids),
            "delete_next": gone,
            "delete_bytes": sum(sizes.get(str(b), 0) for b in gone),
            "kept": [kept[0], kept[-1]] if kept else None,
        }
    return out


def _hdfs_store(storage: Storage, folder: str, m: int) -> dict[str, Any]:
    items = storage.list(folder) or []
    per_version: dict[int, dict[str, int]] = {}
    for it in items:
        mt = _STATE_FILE.match(it.name)
        if mt and not it.is_dir:
            per_version.setdefault(int(mt.group(1)), {})[it.name] = it.size
    if not per_version:
        return {"latest_version": None, "planned_at_version": None, "delete_next": [], "delete_bytes": 0,
                "delete_after_next": [], "after_next_bytes": 0}
    versions = sorted(per_version)
    latest = versions[-1]
    at = latest + 1  # the version the next batch commits; its maintenance runs on it
    earliest = at - m
    delete: list[str] = []
    later: list[str] = []
    start = versions[0]
    if earliest > 0:
        snaps = [v for v in versions if v <= earliest and any(n.endswith(".snapshot") for n in per_version[v])]
        start = snaps[-1] if snaps else min((v for v in versions if v <= earliest), default=earliest)
        for v in versions:
            if v >= start:
                continue
            files = per_version[v]
            snap = [n for n in files if n.endswith(".snapshot")]
            if snap:  # Spark lists one file per version, preferring the snapshot
                delete += snap
                later += [n for n in files if n not in snap]
            else:
                delete += list(files)
    sizes = {n: s for f in per_version.values() for n, s in f.items()}
    return {
        "latest_version": latest,
        "planned_at_version": at,
        "earliest_version_kept": start,
        "delete_next": sorted(delete, key=_vkey),
        "delete_bytes": sum(sizes[n] for n in delete),
        "delete_after_next": sorted(later, key=_vkey),
        "after_next_bytes": sum(sizes[n] for n in later),
    }


def _vkey(name: str) -> tuple[int, str]:
    mt = _STATE_FILE.match(name)
    return (int(mt.group(1)) if mt else -1, name)


def _zip_ssts(data: bytes) -> set[str] | None:
    """SST file names a RocksDB checkpoint zip's ``metadata`` names (mirrors
    ``RocksDBCheckpointMetadata``: ``v1`` + JSON with ``sstFiles[].dfsSstFileName``)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            meta = z.read("metadata")
    except (zipfile.BadZipFile, KeyError, OSError, ValueError):
        return None
    _, _, body = meta.partition(b"\n")
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    files = obj.get("sstFiles") if isinstance(obj, dict) else None
    return {str(f.get("dfsSstFileName")) for f in files or [] if isinstance(f, dict)}


def _rocksdb_keep_from(zips: list[int], changelogs: bool, at: int, m: int, cap: int) -> int | None:
    """The oldest version ``RocksDBFileManager.deleteOldVersions`` keeps after committing ``at``:
    the newest zip at or below ``at - m + 1`` and, with a cap (``cap`` ≥ 0), at or below the
    oldest zip + cap; None when no zip lies below it (then nothing is deleted). The commit of
    ``at`` writes ``at.zip`` itself unless the store keeps changelogs."""
    versions = sorted(set(zips) | ({at} if not changelogs else set()))
    if not versions:
        return None
    keep = max((v for v in versions if v <= at - m + 1 and (cap < 0 or v <= versions[0] + cap)), default=0)
    return keep if any(v < keep for v in versions) else None


def _rocksdb_store(storage: Storage, folder: str, m: int, cap: int = -1) -> dict[str, Any]:
    items = storage.list(folder) or []
    zips: dict[int, list[tuple[str, int]]] = {}
    others: dict[int, list[tuple[str, int]]] = {}
    for it in items:
        mt = _STATE_FILE.match(it.name)
        if mt and not it.is_dir:
            (zips if mt.group(3) == "zip" else others).setdefault(int(mt.group(1)), []).append((it.name, it.size))
    # Hadoop's local file system keeps a hidden ``.<name>.crc`` beside each SST file and deletes
    # it with the file: not an SST of its own.
    ssts = {n: s for n, s in _sizes(storage, storage.join(folder, "SSTs")).items() if not n.startswith(".")}
    all_versions = sorted(set(zips) | set(others))
    if not all_versions:
        return {"latest_version": None, "planned_at_version": None, "delete_next": [], "delete_bytes": 0, "orphan_ssts": [],
                "orphan_bytes": 0}
    latest = all_versions[-1]
    keep = _rocksdb_keep_from(list(zips), bool(others), latest + 1, m, cap)  # after the next commit
    keep_from = all_versions[0] if keep is None else max(all_versions[0], keep)
    delete = [n for v in all_versions if v < keep_from for n, _ in zips.get(v, []) + others.get(v, [])]
    referenced_kept: set[str] = set()
    referenced_any: set[str] = set()
    unreadable = []
    for v, fs in sorted(zips.items()):  # version order, whatever order the listing came in
        for name, _ in sorted(fs):
            try:
                names = _zip_ssts(storage.read(storage.join(folder, name)))
            except OSError:
                names = None
            if names is None:
                unreadable.append(name)
                continue
            referenced_any |= names
            if v >= keep_from:
                referenced_kept |= names
    sizes = {n: s for fs in (*zips.values(), *others.values()) for n, s in fs}
    orphan = sorted(n for n in ssts if n not in referenced_any)
    freed = sorted(n for n in ssts if n in referenced_any and n not in referenced_kept)
    return {
        "latest_version": latest,
        "planned_at_version": latest + 1,
        "earliest_version_kept": keep_from,
        "delete_next": delete + [f"SSTs/{n}" for n in freed],
        "delete_bytes": sum(sizes[n] for n in delete) + sum(ssts[n] for n in freed),
        "orphan_ssts": [f"SSTs/{n}" for n in orphan],
        "orphan_bytes": sum(ssts[n] for n in orphan),
        "unreadable_zips": unreadable,
    }


def _state(storage: Storage, op: StateOperator, m: int, cap: int = -1) -> dict[str, Any]:
    stores = []
    for p in op.partitions:
        folder = storage.join(op.path, str(p.partition_id)) if p.store_name == "default" else storage.join(op.path, str(p.partition_id), p.store_name)
        plan = _rocksdb_store(storage, folder, m, cap) if op.provider == "rocksdb" else _hdfs_store(storage, folder, m)
        stores.append({"partition": p.partition_id, "store": p.store_name, **plan})
    return {
        "operator_id": op.operator_id,
        "name": op.name,
        "provider": op.provider,
        "bytes": op.bytes,
        "delete_bytes": sum(s["delete_bytes"] for s in stores),
        "after_next_bytes": sum(s.get("after_next_bytes", 0) for s in stores),
        "orphan_bytes": sum(s.get("orphan_bytes", 0) for s in stores),
        "stores": stores,
    }


def _compactible(storage: Storage, log: CompactibleLog, kind: str, m: int, conf: dict[str, str]) -> dict[str, Any]:
    key = f"spark.sql.streaming.{'fileSource' if kind == 'source' else 'fileSink'}.log.compactInterval"
    interval = log.compact_interval or (int(conf[key]) if str(conf.get(key, "")).isdigit() else DEFAULT_COMPACT_INTERVAL)
    sizes = _sizes(storage, log.path)
    latest = log.latest_batch_id
    last_compact = log.compact_batch_ids[-1] if log.compact_batch_ids else None
    nxt = None if latest is None else (latest + interval + 1) // interval * interval - 1
    since = [b for b in log.batch_ids if last_compact is None or b > last_compact]
    base = sizes.get(f"{last_compact}.compact", 0) if last_compact is not None else _HEADER - 1
    pending = sum(max(0, sizes.get(str(b), 0) - _HEADER + 1) for b in since)
    # Growth: what the batches between two compactions add, per compaction.
    per_batch = pending / len(since) if since else None
    growth = round(per_batch * interval) if per_batch is not None else None
    est = base + pending + (round(per_batch * (nxt - latest)) if per_batch is not None and nxt is not None and latest is not None else 0)
    delete_after = None
    cur = None if latest is None else latest + 1  # the next batch added to this log
    if cur is not None and interval <= cur + 1 - m:
        mb = cur + 1 - m
        delete_after = mb - mb % interval - 1
    names_below = [n for n in sizes if delete_after is not None and n.split(".")[0].isdigit() and int(n.split(".")[0]) < delete_after]
    return {
        "path": log.path,
        "compact_interval": interval,
        "latest_batch": latest,
        "latest_compact": last_compact,
        "latest_compact_bytes": sizes.get(f"{last_compact}.compact") if last_compact is not None else None,
        "next_compact": nxt,
        "next_compact_bytes_min": base + pending if nxt is not None else None,
        "next_compact_bytes_estimate": est if nxt is not None else None,
        "growth_per_compaction_bytes": growth,
        "delete_below": delete_after,
        "delete_next": sorted(names_below, key=lambda n: int(n.split(".")[0])),
        "delete_bytes": sum(sizes[n] for n in names_below),
        "bytes": sum(sizes.values()),
    }


def plan(storage: Storage, root: str, cp: Checkpoint, min_batches_override: int | None = None, sink_storage: Storage | None = None,
         max_versions_per_maintenance: int = -1) -> dict[str, Any]:
    """The retention plan document (``streamwatch.retention/1``) for ``cp`` read from ``root``
    on ``storage`` (the sink's ``_spark_metadata`` on ``sink_storage``, default ``storage``).
    ``min_batches_override`` replaces minBatchesToRetain (else the offsets conf, else 100);
    ``max_versions_per_maintenance`` is ``spark.sql.streaming.stateStore.
    maxVersionsToDeletePerMaintenance`` (-1, Spark's default: no cap; RocksDB stores only).
    Sizes are bytes; nothing is written."""
    m, where = min_batches(cp, min_batches_override)
    conf = dict(cp.latest_offsets.conf) if cp.latest_offsets else {}
    # a file source's log is sources/<name>/: "index" is its index (int) when numbered, its
    # name when named (DataStreamReader.name, Spark 4.2+), as in inspect --json; "name" is
    # always the folder name
    logs = [{"kind": "source", "index": s.ref, "name": s.name, **_compactible(storage, s, "source", m, conf)} for s in cp.sources]
    if cp.sink is not None:
        logs.append({"kind": "sink", "index": None, "name": None, **_compactible(sink_storage or storage, cp.sink, "sink", m, conf)})
    batch = _batch_logs(storage, root, cp, m)
    state = [_state(storage, op, m, max_versions_per_maintenance) for op in cp.state]
    total = batch["offsets"]["delete_bytes"] + batch["commits"]["delete_bytes"] + sum(s["delete_bytes"] for s in state) + sum(lg["delete_bytes"] for lg in logs)
    return {
        "schema": SCHEMA,
        "path": cp.path,
        "query_id": cp.query_id,
        "min_batches_to_retain": m,
        "min_batches_source": where,
        "max_versions_per_maintenance": max_versions_per_maintenance,
        "batch_logs": batch,
        "state": state,
        "file_logs": logs,
        "delete_bytes": total,
        "after_next_bytes": sum(s["after_next_bytes"] for s in state),
        "orphan_bytes": sum(s["orphan_bytes"] for s in state),
        "never": [
            "metadata (the query id) and the latest minBatchesToRetain+1 offsets/commits files",
            "compact files only grow: every file a source read / a sink wrote stays listed",
        ],
    }
