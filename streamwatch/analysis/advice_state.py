"""The rule ``advise-state-store`` of :mod:`streamwatch.analysis.advice`: which state store a
stateful query runs on, and how RocksDB checkpoints it. Pure over model objects (the
:class:`~streamwatch.model.checkpoint.Checkpoint`, the progress events of a recording, the
newest state version's files measured by :func:`newest_version_files`, the one function here
that reads storage).

The provider is the one Spark wrote into ``offsets/N`` conf
(``spark.sql.streaming.stateStore.providerClass``, one of
``OffsetSeqMetadata.relevantSQLConfs``: Spark restores it on every restart, so the session's
value does nothing for an existing checkpoint), else the one the state files tell
(``N.delta``/``N.snapshot``: HDFS-backed; ``N.zip``/``N.changelog``: RocksDB).

* **HDFS-backed** (``HDFSBackedStateStoreProvider``): every version's rows live in a map on the
  executor's JVM heap (``spark.sql.streaming.maxBatchesToRetainInMemory`` versions, 2 by
  default, plus the one being written). The state's size is Spark's
  ``stateOperators[].memoryUsedBytes`` of the latest progress (the heap those maps hold, bytes):
  up to :data:`HDFS_KEEP_BYTES`, keep (``measured``: the bench found RocksDB no faster per
  batch there); above it, unknown (not measured). The rule never advises leaving HDFS: that advice
  did not measurably help (see :data:`HDFS_KEEP_BYTES`). Without progress the files needed to
  load the newest version (its newest ``.snapshot`` at or below it and the ``.delta`` files
  after, per partition) are given as evidence: a lower bound only (LZ4-compressed rows on
  disk; the map holds them uncompressed), so the verdict is unknown.
* **RocksDB** (``RocksDBStateStoreProvider``): changelog checkpointing is off by default
  (``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``, not in
  ``offsets/N``: read off the state files, where every version then is an ``N.zip`` snapshot
  and no ``N.changelog`` is written). Off → change (``measured`` when the recording gives the
  commit times, else ``likely``): each commit then flushes RocksDB's memtable, makes a
  checkpoint and uploads its new SST files and a zip instead of the batch's changed rows.
  On → keep.

Measured (``bench/advise_state_bench.py``, docs/advise.md): 6 micro-batches of 48,000 (and of
100,000) new keys, groupBy count, on local[2]: changelog checkpointing cut RocksDB's commit time
per batch ÷ 3.5 (median; ÷ 2.7 min) at 288,000 keys, ÷ 2.0 (÷ 2.1) at 600,000; batch time
÷ 1.24 (÷ 1.07) at 288,000 keys, not measurably changed at 600,000.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from streamwatch.analysis.advice import PROVIDER_CONF, Advice, Confidence, Evidence, Verdict
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.events import QueryProgress
from streamwatch.model.statestore import StateOperator

STATE_CODE = "advise-state-store"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
#: HDFS-backed state up to this much heap (``memoryUsedBytes``, bytes) is kept: 120 MiB. The
#: bench measured RocksDB with changelog checkpointing no faster per batch than HDFS at 71 MB
#: (288,000 keys: HDFS/RocksDB batch time 0.83× and 1.09× (medians) in two runs) and slower at
#: 132 MB (126 MiB, 600,000 keys: 0.74×) of HDFS state on a 1 GiB heap, with more CPU, while
#: it cut garbage collection time ÷ 9–13: the advice to move did not measurably help, so the
#: rule never gives it. Above this size it is not measured: unknown.
HDFS_KEEP_BYTES = 120 * 1024 * 1024
#: The batches whose commit times are the evidence: the most recent this many.
RECENT_BATCHES = 10


@dataclass(frozen=True, slots=True)
class StateFiles:
    """The files needed to load state operator ``operator_id``'s newest version ``version`` of
    an HDFS-backed store (per partition: its newest ``.snapshot`` at or below that version and
    the ``.delta`` files after it): ``files`` and their ``bytes`` summed over ``partitions``
    partition folders (every store of the operator)."""

    operator_id: int
    version: int
    files: int
    bytes: int
    partitions: int


def newest_version_files(path: str, cp: Checkpoint) -> tuple[StateFiles, ...]:
    """One :class:`StateFiles` per HDFS-backed operator of ``cp`` (read at ``path``, local or an
    fsspec URL), each partition folder listed once (file names and sizes, no row decoded).
    Operators on RocksDB, or without versions, are absent; so is everything when the storage
    cannot be opened (the rule then says what it needs)."""
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.checkpoint.storage import StorageError

    try:
        storage, _ = open_storage(path)
    except StorageError:
        return ()
    out = []
    for op in cp.state:
        if op.provider != "hdfs" or not op.partitions:
            continue
        version = max(max(p.versions, default=0) for p in op.partitions)
        files = size = 0
        for p in op.partitions:
            folder = storage.join(op.path, str(p.partition_id))
            folder = folder if p.store_name == "default" else storage.join(folder, p.store_name)
            sizes = {i.name: i.size for i in storage.list(folder) or [] if not i.is_dir}
            loaded = _load_chain(sizes, version)
            files += len(loaded)
            size += sum(sizes[n] for n in loaded)
        out.append(StateFiles(op.operator_id, version, files, size, len(op.partitions)))
    return tuple(out)


def _load_chain(sizes: dict[str, int], version: int) -> list[str]:
    """The file names HDFSBackedStateStoreProvider reads to load ``version``: the newest
    ``V.snapshot`` with V ≤ version, then ``V+1.delta`` … ``version.delta`` (those present)."""
    snap = max((v for v in range(version, 0, -1) if f"{v}.snapshot" in sizes), default=0)
    chain = [f"{snap}.snapshot"] if snap else []
    return chain + [f"{v}.delta" for v in range(snap + 1, version + 1) if f"{v}.delta" in sizes]


@dataclass(frozen=True, slots=True)
class _Store:
    """What the checkpoint and the progress say about the query's state store."""

    provider: str
    named: str
    evidence: tuple[Evidence, ...]
    memory: int | None
    commit_ms: int | None


def _provider(cp: Checkpoint | None) -> tuple[str, str]:
    """(``hdfs``/``rocksdb``/``unknown``, the provider as the summary names it, with its source)."""
    if cp is not None and cp.offsets:
        last = cp.offsets[-1]
        cls = last.conf.get(PROVIDER_CONF) or ""
        low = cls.lower()
        name = "rocksdb" if "rocksdb" in low else "hdfs" if "hdfsbacked" in low else None
        if name is not None:
            return name, f"{cls.rsplit('.', 1)[-1]} (offsets/{last.batch_id} conf)"
    files = {op.provider for op in (cp.state if cp is not None else ()) if op.provider != "unknown"}
    if len(files) == 1:
        name = files.pop()
        return name, f"{'RocksDB' if name == 'rocksdb' else 'HDFS-backed'} state store (from the state file names)"
    return "unknown", "unknown"


def _store(cp: Checkpoint | None, progress: Sequence[QueryProgress]) -> _Store:
    provider, named = _provider(cp)
    evidence: tuple[Evidence, ...] = ()
    stateful = [p for p in progress if p.state_operators]
    memory = commit = None
    if stateful:
        last = stateful[-1]
        memory = sum(o.memory_used_bytes for o in last.state_operators)
        rows = sum(o.num_rows_total for o in last.state_operators)
        src = f"progress of batch {last.batch_id}, stateOperators"
        evidence += (Evidence("state rows (numRowsTotal)", rows, "rows", src),
                     Evidence("state memory (memoryUsedBytes)", memory, "bytes", src))
        current = [o.custom_metrics["stateOnCurrentVersionSizeBytes"] for o in last.state_operators
                   if "stateOnCurrentVersionSizeBytes" in o.custom_metrics]
        if current:
            evidence += (Evidence("newest version's map (stateOnCurrentVersionSizeBytes)", sum(current), "bytes",
                                  f"{src} customMetrics"),)
        recent = stateful[-RECENT_BATCHES:]
        commit = int(statistics.median(sum(o.commit_time_ms for o in p.state_operators) for p in recent))
        evidence += (Evidence("median state commit time (commitTimeMs)", commit, "ms",
                              f"last {len(recent)} stateful batches' progress"),)
        copied = [sum(o.custom_metrics.get("rocksdbBytesCopied", 0) for o in p.state_operators) for p in recent]
        if provider == "rocksdb" and any("rocksdbBytesCopied" in o.custom_metrics for o in last.state_operators):
            evidence += (Evidence("median bytes uploaded at commit (rocksdbBytesCopied)", int(statistics.median(copied)),
                                  "bytes", f"last {len(recent)} stateful batches' progress customMetrics"),)
    return _Store(provider, named, evidence, memory, commit)


def state_store(cp: Checkpoint | None, progress: Sequence[QueryProgress], files: Sequence[StateFiles] = ()) -> Advice:
    """``advise-state-store`` (see the module docstring). ``cp`` and ``progress`` may each be
    missing; ``files`` are the newest version's files of the HDFS-backed operators
    (:func:`newest_version_files`). ``setting`` is the provider class, or RocksDB's changelog
    setting when the verdict is about it; ``target`` is None (the advice is a class name or
    ``true``, given in ``action``)."""
    has_state = bool(cp is not None and cp.state) or any(p.state_operators for p in progress)
    if not has_state:
        return Advice(STATE_CODE, PROVIDER_CONF, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      "no state operator found: the rule judges stateful queries only",
                      needs="a stateful query: state/ folders in the checkpoint or stateOperators in the "
                            "recording's progress")
    st = _store(cp, progress)
    if st.provider == "hdfs":
        return _hdfs(st, files)
    if st.provider == "rocksdb":
        return _rocksdb(cp, st)
    return Advice(STATE_CODE, PROVIDER_CONF, Verdict.UNKNOWN, Confidence.UNKNOWN,
                  "the state store provider is unknown: offsets/N conf does not name it and no state file tells",
                  st.evidence, needs=f"a checkpoint whose offsets/N conf holds {PROVIDER_CONF}, or its state files")


def _hdfs(st: _Store, files: Sequence[StateFiles]) -> Advice:
    ev, limit = st.evidence, HDFS_KEEP_BYTES
    on_disk = sum(f.bytes for f in files)
    if files:
        vs = ", ".join(f"state/{f.operator_id} v{f.version}" for f in files)
        ev += (Evidence("files to load the newest version", on_disk, "bytes",
                        f"{vs}: newest .snapshot and the .delta files after it, "
                        f"{sum(f.files for f in files)} files in {sum(f.partitions for f in files)} partition folders"),)
    if st.memory is None:
        return Advice(STATE_CODE, PROVIDER_CONF, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{st.named}; the heap its state takes is not known here", ev,
                      needs="the query's progress (--recording): stateOperators memoryUsedBytes (the newest "
                            f"version's files{'' if files else ', not readable here,'} give only a lower bound: "
                            "the heap holds the rows uncompressed)")
    if st.memory <= limit:
        return Advice(STATE_CODE, PROVIDER_CONF, Verdict.KEEP, Confidence.MEASURED,
                      f"{st.named} holding {_mib(st.memory)} of heap (memoryUsedBytes): up to "
                      f"{limit // 2**20} MiB, moving to RocksDB was measured no faster per batch (docs/advise.md)", ev)
    return Advice(STATE_CODE, PROVIDER_CONF, Verdict.UNKNOWN, Confidence.UNKNOWN,
                  f"{st.named} holding {_mib(st.memory)} of heap (memoryUsedBytes): above the "
                  f"{limit // 2**20} MiB up to which RocksDB was measured no faster per batch; whether it helps at "
                  "this size is not measured", ev,
                  needs="a measurement at this state size: bench/advise_state_bench.py with ADVISE_BENCH_KEYS "
                        "set to this query's keys a batch, on the executors' heap size")


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _changelog(cp: Checkpoint | None) -> tuple[bool | None, Evidence | None]:
    """Whether RocksDB writes changelogs, from the state files: a version without a ``.zip``
    (a ``.changelog`` only) means on; every version a ``.zip`` means off. None: no versions."""
    ops: list[StateOperator] = [op for op in (cp.state if cp is not None else ()) if op.partitions]
    versions = sum(len(p.versions) for op in ops for p in op.partitions)
    if not versions:
        return None, None
    snaps = sum(len(p.snapshot_versions) for op in ops for p in op.partitions)
    ev = Evidence("state versions uploaded as a full snapshot (N.zip)", snaps, f"of {versions:,} versions",
                  "state/ partition folders")
    return snaps < versions, ev


def _rocksdb(cp: Checkpoint | None, st: _Store) -> Advice:
    on, files_ev = _changelog(cp)
    ev = st.evidence + ((files_ev,) if files_ev is not None else ())
    if on is None:
        return Advice(STATE_CODE, CHANGELOG_CONF, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{st.named}; whether it writes changelogs is not known here", ev,
                      needs=f"the checkpoint's state files ({CHANGELOG_CONF} is not in offsets/N)")
    if on:
        return Advice(STATE_CODE, CHANGELOG_CONF, Verdict.KEEP, Confidence.MEASURED,
                      f"{st.named} with changelog checkpointing: each commit writes the batch's changed rows",
                      ev)
    sure = Confidence.MEASURED if st.commit_ms is not None else Confidence.LIKELY
    return Advice(STATE_CODE, CHANGELOG_CONF, Verdict.CHANGE, sure,
                  f"{st.named} without changelog checkpointing: every commit flushes the memtable, "
                  "makes a RocksDB checkpoint and uploads its new SST files and a zip", ev,
                  f"set {CHANGELOG_CONF}=true in the session and restart the query: it applies to this checkpoint "
                  "(RocksDB reads both checkpoint forms, in either direction)",
                  "each commit writes the batch's changed rows to a changelog file; snapshots are uploaded by the "
                  "state store's background maintenance: the commit time per batch falls (measured: docs/advise.md)"
                  + ("" if st.commit_ms is not None else "; this job's commit time is not known here (no progress)"))
