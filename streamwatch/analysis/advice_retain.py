"""The rule ``advise-min-batches-to-retain`` of :mod:`streamwatch.analysis.advice`: how many
micro-batches the checkpoint keeps (``spark.sql.streaming.minBatchesToRetain``, default 100)
against the files and bytes that costs.

Spark keeps the latest ``minBatchesToRetain`` + 1 ``offsets/N`` and ``commits/N`` files (it
purges the older ones when it plans a batch, ``MicroBatchExecution`` → ``HDFSMetadataLog.purge``)
and, per state store, every version a restart of the last ``minBatchesToRetain`` batches could
load (state maintenance, ``HDFSBackedStateStoreProvider.cleanup`` / ``RocksDBFileManager.
deleteOldVersions``); file source and sink logs are purged by the same count. The conf is not
one of the SQL confs Spark writes into ``offsets/N`` (``OffsetSeqMetadata.relevantSQLConfs``),
so the value the query runs with is read off what the checkpoint holds: the offsets log's
batch range (``N - first`` batches behind the latest once Spark has purged) unless the offsets
conf names it. What a lower value would free is what Spark's cleanup deletes at
:data:`ADVISED` (:func:`streamwatch.checkpoint.ops.retention.plan`, the mirror ``streamwatch
retention`` prints), counted in data files (Hadoop's ``.crc`` companions not counted).

Verdict ``change`` (``likely``: the value is inferred, and what the older batches are kept for
cannot be seen) when the checkpoint keeps more than :data:`KEEP_UP_TO` batches and lowering to
:data:`ADVISED` frees :data:`EXCESS_FILES` files or :data:`EXCESS_BYTES` bytes or more;
``keep`` ``measured`` when it keeps :data:`KEEP_UP_TO` or fewer; ``keep`` ``likely`` below the
thresholds; ``unknown`` (with ``needs``) when the checkpoint has no offsets log or its storage
cannot be listed. The cost of lowering it: a restart from an older batch (deleting the newer
``offsets``/``commits`` files) and the state reader (``format("statestore")``, ``batchId``)
reach back only :data:`ADVISED` batches. Measured (``bench/advise_retain_bench.py``,
docs/advise.md): a stateful query after 120 micro-batches (2 state partitions) keeps 1,124 files
(1.40 MB) at the default 100 against 368 (0.53 MB) at 10, batch time unchanged (medians, local[2]).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamwatch.analysis.advice import Advice, Confidence, Evidence, Verdict
from streamwatch.model.checkpoint import Checkpoint

RETAIN_CODE = "advise-min-batches-to-retain"
MIN_BATCHES_KEY = "spark.sql.streaming.minBatchesToRetain"
#: The value advised (and the one the bench measures against Spark's default of 100).
ADVISED = 10
#: Batches kept (the offsets log's latest id − its first) at or below which the rule keeps.
KEEP_UP_TO = 20
#: Files (or bytes) Spark's cleanup would delete at :data:`ADVISED` at or above which the rule advises it.
EXCESS_FILES = 200
EXCESS_BYTES = 64 * 1024 * 1024
#: The checkpoint's folders counted, in evidence order.
AREAS = ("offsets", "commits", "sources", "state")


@dataclass(frozen=True, slots=True)
class AreaFiles:
    """One folder of the checkpoint (``offsets``, ``commits``, ``sources``, ``state``) listed
    recursively: ``files`` (every file, ``.crc`` included) and ``bytes``."""

    area: str
    files: int
    bytes: int


@dataclass(frozen=True, slots=True)
class RetainedFiles:
    """What the checkpoint keeps now: ``areas`` (:class:`AreaFiles`, the folders present),
    ``freed_files`` and ``freed_bytes`` (what Spark's cleanup deletes at :data:`ADVISED`: the
    offsets/commits files, state versions and file-log files below its cut-off, ``.crc`` not
    counted), ``state_versions`` ((oldest, newest) state version kept over every store; None
    without state), and ``reason`` (why not listed; then the rest is empty)."""

    areas: tuple[AreaFiles, ...] = ()
    freed_files: int = 0
    freed_bytes: int = 0
    state_versions: tuple[int, int] | None = None
    reason: str | None = None


def retained_files(path: str, cp: Checkpoint) -> RetainedFiles:
    """The checkpoint ``cp`` (read at ``path``, local or an fsspec URL) listed, read-only: each
    folder of :data:`AREAS` walked once, and :func:`~streamwatch.checkpoint.ops.retention.plan`
    at :data:`ADVISED`. Never raises: storage that cannot be opened gives ``reason``."""
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.checkpoint.ops.retention import plan
    from streamwatch.checkpoint.storage import StorageError

    try:
        storage, root = open_storage(path)
    except StorageError as e:
        return RetainedFiles(reason=str(e))
    areas = []
    for name in AREAS:
        tree = storage.tree(storage.join(root, name))
        if tree is not None:
            files, size = tree.total()
            areas.append(AreaFiles(name, files, size or 0))
    doc = plan(storage, root, cp, ADVISED)
    logs = doc["batch_logs"]
    stores = [s for op in doc["state"] for s in op["stores"]]
    freed = (len(logs["offsets"]["delete_next"]) + len(logs["commits"]["delete_next"])
             + sum(len(s["delete_next"]) + len(s.get("delete_after_next", [])) for s in stores)
             + sum(len(lg["delete_next"]) for lg in doc["file_logs"]))
    freed_bytes = int(doc["delete_bytes"]) + int(doc["after_next_bytes"])
    versions = [v for op in cp.state for p in op.partitions for v in p.versions]
    return RetainedFiles(tuple(areas), freed, freed_bytes, (min(versions), max(versions)) if versions else None)


def _value(cp: Checkpoint, first: int, last: int) -> Evidence:
    conf = cp.latest_offsets.conf.get(MIN_BATCHES_KEY) if cp.latest_offsets else None
    if conf is not None and str(conf).isdigit():
        return Evidence("minBatchesToRetain", int(conf), "batches", f"offsets/{last} conf")
    if first > 0:
        return Evidence("minBatchesToRetain (inferred)", last - first, "batches",
                        f"offsets log keeps batches {first}..{last}: Spark purged below {first}")
    return Evidence("minBatchesToRetain at least (inferred)", last, "batches",
                    f"offsets log keeps batches 0..{last}: nothing purged yet")


def min_batches_to_retain(cp: Checkpoint, kept: RetainedFiles) -> Advice:
    """``advise-min-batches-to-retain`` (see the module docstring) for ``cp`` given what its
    storage holds (:func:`retained_files`). Sizes are bytes."""
    setting = MIN_BATCHES_KEY
    ids = cp.offset_batch_ids
    if not ids or kept.reason is not None:
        why = kept.reason if kept.reason is not None else "no offsets/N file in the checkpoint"
        return Advice(RETAIN_CODE, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"the batches the checkpoint keeps were not counted: {why}",
                      needs="the checkpoint's offsets log and folders listed from here")
    first, last = ids[0], ids[-1]
    ev: tuple[Evidence, ...] = (_value(cp, first, last),)
    ev += tuple(Evidence(f"kept in {a.area}/", a.files, "files", f"listing of {a.area}/ now ({a.bytes:,} bytes)")
                for a in kept.areas)
    ev += tuple(Evidence(f"bytes kept in {a.area}/", a.bytes, "bytes", f"listing of {a.area}/ now") for a in kept.areas)
    if kept.state_versions is not None:
        ev += (Evidence("oldest state version kept", kept.state_versions[0], "version", "state/ listing"),
               Evidence("newest state version", kept.state_versions[1], "version", "state/ listing"))
    if last - first <= KEEP_UP_TO:
        return Advice(RETAIN_CODE, setting, Verdict.KEEP, Confidence.MEASURED,
                      f"the checkpoint keeps batches {first}..{last} ({last - first + 1} offsets files): "
                      f"{KEEP_UP_TO} or fewer behind the latest, little kept for nothing", ev)
    src = f"Spark's cleanup at minBatchesToRetain={ADVISED} (streamwatch retention --min-batches {ADVISED})"
    ev += (Evidence(f"files freed at {ADVISED}", kept.freed_files, "files", src),
           Evidence(f"bytes freed at {ADVISED}", kept.freed_bytes, "bytes", src))
    if kept.freed_files < EXCESS_FILES and kept.freed_bytes < EXCESS_BYTES:
        return Advice(RETAIN_CODE, setting, Verdict.KEEP, Confidence.LIKELY,
                      f"the checkpoint keeps batches {first}..{last}, but lowering minBatchesToRetain to {ADVISED} "
                      f"would free only {kept.freed_files:,} files ({kept.freed_bytes:,} bytes): below "
                      f"{EXCESS_FILES:,} files and {EXCESS_BYTES:,} bytes", ev)
    return _change(first, last, kept, ev)


def _change(first: int, last: int, kept: RetainedFiles, ev: tuple[Evidence, ...]) -> Advice:
    return Advice(RETAIN_CODE, MIN_BATCHES_KEY, Verdict.CHANGE, Confidence.LIKELY,
                  f"the checkpoint keeps batches {first}..{last} ({last - first + 1} offsets files and their commits, "
                  f"state versions and log files); at {ADVISED} Spark's cleanup would delete {kept.freed_files:,} files "
                  f"({kept.freed_bytes:,} bytes). The conf is not in the checkpoint: inferred from the batches kept",
                  ev,
                  f"set spark.sql.streaming.minBatchesToRetain={ADVISED} in the query's session (it is read when the "
                  "query starts; not stored in the checkpoint), then restart it with the checkpoint kept. Cost: a "
                  f"restart from an older batch and the state reader (format(\"statestore\"), batchId) reach back only "
                  f"{ADVISED} batches",
                  f"Spark purges the older offsets/commits files and state versions as it runs: the checkpoint holds "
                  f"about {ADVISED} batches' files instead of {last - first} (measured: docs/advise.md); batch time "
                  "unchanged",
                  target=ADVISED)
