"""One state key at a time, without a JVM: its value as of a batch (``streamwatch state CP
--key JSON``) and its history over a range of batches (``--from-batch A --to-batch B``).

The key is given as a JSON object typed by the operator's key schema (``{"key": "user42",
"window": {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:10Z"}}``), encoded to the
UnsafeRow bytes the store holds (:mod:`streamwatch.state.unsaferow_encode`) and placed in the
partition Spark's ``HashPartitioning`` sends it to (:mod:`streamwatch.state.murmur`). Only that
partition's files are read:

- RocksDB: the newest snapshot zip at or below the version, opened read-only with rocksdict in
  a temporary folder and asked for the key alone (``get``), then the changelogs after it
  filtered on the key;
- HDFS-backed: the partition rebuilt from its snapshot and deltas
  (:func:`streamwatch.state.hdfs.load`) and the key picked out.

History mirrors Spark's change feed (``readChangeFeed``, ``StateStoreChangeDataReader``): each
put of the key in a version's ``N.delta`` (HDFS) or ``N.changelog`` (RocksDB with changelog
checkpointing) is an ``update`` with its value, each remove a ``delete`` (an expired window
too); version ``N`` is batch ``N - 1``. A RocksDB store without changelogs compares the key's
value in successive versions instead (a put of an unchanged value is not seen). Beside each
change: the batch's event-time watermark from ``offsets/N`` (epoch ms).

Session windows: the key is the grouping key (the store's prefix-scan columns, which alone
place a row) and its answer every session stored under it — ``entries``, each with its own key
columns (``sessionStartTime``) and value; history lists each session's puts and removes
(:mod:`streamwatch.state.keygroups`).

Covered: the ``default`` store of streaming aggregations, session window aggregations,
dropDuplicates and flatMapGroupsWithState/applyInPandasWithState, UnsafeRow encoding. Not
covered (a one-line :class:`~streamwatch.state.model.StateReadError`): stream-stream joins,
transformWithState variables, the Avro encoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from streamwatch.checkpoint.fs import Storage
from streamwatch.checkpoint.logs import parse_offsets
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.statestore import StateOperator
from streamwatch.state import hdfs, join, keygroups, rocksdb, tws_reader
from streamwatch.state.encoding import decoders
from streamwatch.state.keyjson import KeyUsageError, describe, parse_key
from streamwatch.state.keyvalue import Resolved, pick, records, value_at
from streamwatch.state.model import StateReadError
from streamwatch.state.murmur import HashError, partition_of
from streamwatch.state.reader import open_context
from streamwatch.state.records import DELETE, StateFileError
from streamwatch.state.schema import DEFAULT_CF
from streamwatch.state.stores import find_schema, provider_of, store_folder
from streamwatch.state.types import StructType
from streamwatch.state.unsaferow import RowError
from streamwatch.state.unsaferow_encode import EncodeError, encode_row

SHUFFLE_PARTITIONS_CONF = "spark.sql.shuffle.partitions"
UPDATE, REMOVE = "update", "delete"


@dataclass(frozen=True, slots=True)
class KeyTarget:
    """Where one key lives: operator, store, provider, the key ``schema`` and its ``values``
    (schema order), the UnsafeRow ``key_row`` bytes, the value schema, and ``partition`` of
    ``num_partitions`` (Spark's hash placement). A store with several entries per key
    (session windows): ``prefix_cols`` > 0, ``schema`` its grouping key (the prefix columns)
    and ``entry_key`` the key columns after it (``sessionStartTime``)."""

    operator_id: int
    operator_name: str | None
    store: str
    provider: str
    schema: StructType
    values: tuple[Any, ...]
    key_row: bytes
    value_schema: StructType
    partition: int
    num_partitions: int
    prefix_cols: int = 0
    entry_key: StructType = StructType()


@dataclass(frozen=True, slots=True)
class KeyEntry:
    """One entry stored under a grouping key: ``sub_key`` (values of ``target.entry_key``,
    e.g. the session's start as an aware UTC datetime) and ``value`` (``target.value_schema``)."""

    sub_key: tuple[Any, ...]
    value: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class KeyLookup:
    """The key's value as of ``batch_id`` (state version ``batch_id + 1``): ``value`` (one
    value per field of ``target.value_schema``, in order — aggregation buffers repeat names
    such as ``sum``/``count``; None when the store does not hold the key), the files read and
    their ``bytes`` (compressed, as stored). A grouped store (``target.prefix_cols`` > 0):
    ``value`` None and ``entries`` the key's entries, ordered by sub-key."""

    target: KeyTarget
    batch_id: int
    version: int
    value: tuple[Any, ...] | None
    files: tuple[str, ...]
    bytes: int
    entries: tuple[KeyEntry, ...] = ()

    @property
    def found(self) -> bool:
        """Whether the store holds the key (a value, or at least one entry)."""
        return self.value is not None or bool(self.entries)


@dataclass(frozen=True, slots=True)
class KeyChange:
    """One change of the key: ``batch_id`` (version − 1), ``change_type`` ``update`` or
    ``delete``, the new ``value`` (as :class:`KeyLookup`'s; None for a delete), ``watermark_ms`` the batch's
    event-time watermark (epoch ms, None when ``offsets/<batch>`` has none). In a grouped
    store, ``sub_key`` names the entry that changed (:class:`KeyEntry`); None otherwise."""

    batch_id: int
    version: int
    change_type: str
    value: tuple[Any, ...] | None
    watermark_ms: int | None
    sub_key: tuple[Any, ...] | None = None


@dataclass(frozen=True, slots=True)
class KeyHistory:
    """Every change of the key in batches ``from_batch``…``to_batch``, in order; ``source``:
    ``delta files``, ``changelogs`` or ``versions compared``."""

    target: KeyTarget
    from_batch: int
    to_batch: int
    source: str
    changes: tuple[KeyChange, ...]


# -- where the key lives ----------------------------------------------------------------------

def _operator(cp: Checkpoint, operator: int | None) -> StateOperator:
    if not cp.state:
        raise StateReadError(f"{cp.path}: no state operators (state/ is empty or missing)")
    if operator is not None:
        op = next((o for o in cp.state if o.operator_id == operator), None)
        if op is None:
            raise StateReadError(f"{cp.path}: no state operator {operator} "
                                 f"(operators: {', '.join(str(o.operator_id) for o in cp.state)})")
        return op
    if len(cp.state) > 1:
        raise KeyUsageError("--key: the query has state operators "
                            + ", ".join(f"{o.operator_id} ({o.name or 'unknown'})" for o in cp.state)
                            + ": pick one with --operator")
    return cp.state[0]


def _num_partitions(cp: Checkpoint, op: StateOperator, conf: Mapping[str, str], version: int) -> int:
    """Spark pins a query's state partitions to the shuffle partitions of its first run:
    the operator metadata's count, else the offsets log's ``spark.sql.shuffle.partitions``,
    else the partition folders (an offline repartition's target when one applies)."""
    n = cp.partitions_for_version(version)
    if n:
        return n
    info = next((s.num_partitions for s in op.stores if s.name == DEFAULT_CF and s.num_partitions), None)
    if info:
        return info
    raw = str(conf.get(SHUFFLE_PARTITIONS_CONF, "")).strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return op.num_partitions


def _resolve(path: str, key: str, operator: int | None, batch: int, storage_options: dict[str, Any] | None) -> Resolved:
    cp, ctx = open_context(path, storage_options)
    op = _operator(cp, operator)
    if tws_reader.is_tws(op) or op.state_variables:
        raise StateReadError(f"state/{op.operator_id} ({op.name}): --key does not read transformWithState "
                             "state variables yet (read them with --var)")
    if join.is_join(op):
        raise StateReadError(f"state/{op.operator_id} ({op.name or 'join'}): --key does not read stream-stream "
                             "join state yet (read a side with --store left/right)")
    if ctx.encoding != "unsaferow":
        raise StateReadError(f"state/{op.operator_id}: --key reads the unsaferow state encoding, "
                             f"not {ctx.encoding}")
    version = batch + 1
    parts = sorted({p.partition_id for p in op.partitions})
    op_folder = ctx.storage.join(ctx.root, "state", str(op.operator_id))
    cfs = find_schema(ctx.storage, op_folder, DEFAULT_CF, batch, parts)
    cf = next((c for c in cfs if c.name == DEFAULT_CF), None) or (cfs[0] if len(cfs) == 1 else None)
    if cf is None:
        raise StateReadError(f"state/{op.operator_id}: its schema file has no column family default")
    info = next((s for s in op.stores if s.name == DEFAULT_CF), None)
    prefix = cf.prefix_cols if cf.encoder == "prefixScan" else (info.num_cols_prefix_key or 0) if info else 0
    if cf.encoder not in ("noPrefix", "prefixScan") or (prefix <= 0 and cf.encoder == "prefixScan"):
        raise StateReadError(f"state/{op.operator_id} ({op.name or 'unknown'}): --key reads stores keyed by whole "
                             f"rows or a prefix (session windows); this one's keys are {cf.encoder} encoded")
    if prefix > 0:
        cf = replace(cf, encoder="prefixScan", prefix_cols=prefix)
    schema = keygroups.prefix_schema(cf.key, prefix) if prefix else cf.key
    values = parse_key(key, schema)
    try:
        key_row = encode_row(schema, values)
    except EncodeError as e:
        raise KeyUsageError(f"--key: {e}; the key columns are {describe(schema)}") from None
    n = _num_partitions(cp, op, ctx.conf, version)
    try:
        partition = partition_of(schema, values, n)
    except HashError as e:
        raise KeyUsageError(f"--key: {e}") from None
    if parts and partition not in parts:
        raise StateReadError(f"state/{op.operator_id}: the key hashes to partition {partition} of {n}, which has no "
                             f"state folder (partitions: {', '.join(map(str, parts))})")
    provider = provider_of(op, ctx.conf)
    target = KeyTarget(op.operator_id, op.name, DEFAULT_CF, provider, schema, values, key_row, cf.value, partition, n,
                       prefix, StructType(cf.key.fields[prefix:]) if prefix else StructType())
    names = [s.name for s in op.stores] or [DEFAULT_CF]
    index = names.index(DEFAULT_CF) if DEFAULT_CF in names else 0
    return Resolved(ctx, op, cf, target, store_folder(ctx, op, partition, DEFAULT_CF), index)


def _decode(r: Resolved, raw: bytes | None) -> tuple[Any, ...] | None:
    if raw is None:
        return None
    _kdec, vdec = decoders(r.cf, r.target.provider)
    try:
        row = vdec(raw)
    except RowError as e:
        raise StateReadError(f"state/{r.op.operator_id} partition {r.target.partition}: the key's value does not "
                             f"decode ({e})") from None
    return row


def _last_batch(path: str, storage_options: dict[str, Any] | None) -> int:
    cp, _ctx = open_context(path, storage_options)
    ids = cp.commit_batch_ids
    if not ids:
        raise StateReadError(f"{path}: no committed batch yet (commits/ is empty)")
    return ids[-1]


def lookup_key(path: str, key: str, *, operator: int | None = None, batch: int | None = None,
               storage_options: dict[str, Any] | None = None) -> KeyLookup:
    """The value of the state key ``key`` (JSON, :func:`parse_key`) as of ``batch`` (default:
    the last committed batch), reading only the partition Spark placed it in. Raises
    :class:`KeyUsageError` for a key that does not fit the key schema (or an operator to
    pick), :class:`StateReadError` when the state cannot be read."""
    if batch is None:
        batch = _last_batch(path, storage_options)
    r = _resolve(path, key, operator, batch, storage_options)
    if r.target.prefix_cols:
        return _group_lookup(r, batch)
    raw, files, nbytes = value_at(r, batch + 1)
    return KeyLookup(r.target, batch, batch + 1, _decode(r, raw), tuple(files), nbytes)


def _group_entries(r: Resolved, version: int) -> tuple[dict[bytes, tuple[tuple[Any, ...], bytes]], list[str], int]:
    try:
        return keygroups.entries_at(r, version)
    except (StateFileError, OSError) as e:
        raise StateReadError(f"state/{r.op.operator_id} partition {r.target.partition}: {e}") from None


def _group_lookup(r: Resolved, batch: int) -> KeyLookup:
    """:func:`lookup_key` of a grouped store: every entry under the key."""
    found, files, nbytes = _group_entries(r, batch + 1)
    entries = sorted((KeyEntry(sub, _decode(r, raw) or ()) for sub, raw in found.values()), key=lambda e: e.sub_key)
    return KeyLookup(r.target, batch, batch + 1, None, tuple(files), nbytes, tuple(entries))


def _group_changes(r: Resolved, from_batch: int, to_batch: int, files: rocksdb.Files | None) -> list[KeyChange]:
    """The changes of a grouped key's entries: each record of the versions' deltas/changelogs
    (``files``), or (None: a RocksDB store without changelogs) the entries of successive
    versions compared, removed entries first, then new or changed ones by sub-key."""
    ctx, out = r.ctx, []
    if files is not None:
        ids = ctx.unique_ids(r.op.operator_id, r.target.partition, r.store_index, to_batch + 1)
        for v in range(from_batch + 1, to_batch + 2):
            recs = keygroups.records_of(r, v, files, ids)
            wm = _watermark(ctx.storage, ctx.root, v - 1) if recs else None
            out += [KeyChange(v - 1, v, REMOVE if g.op == DELETE else UPDATE, _decode(r, g.value), wm, g.sub_key)
                    for g in recs]
        return out
    before = keygroups.entries_at(r, from_batch)[0] if from_batch > 0 else {}
    for v in range(from_batch + 1, to_batch + 2):
        now = keygroups.entries_at(r, v)[0]
        gone = sorted(before[k][0] for k in before if k not in now)
        changed = sorted((now[k] for k in now if before.get(k) != now[k]), key=lambda e: e[0])
        if gone or changed:
            wm = _watermark(ctx.storage, ctx.root, v - 1)
            out += [KeyChange(v - 1, v, REMOVE, None, wm, sub) for sub in gone]
            out += [KeyChange(v - 1, v, UPDATE, _decode(r, raw), wm, sub) for sub, raw in changed]
        before = now
    return out


def _watermark(storage: Storage, root: str, batch: int) -> int | None:
    try:
        data = storage.read(storage.join(root, "offsets", str(batch)))
    except OSError:
        return None
    entry, _findings = parse_offsets(data, batch, f"offsets/{batch}")
    return entry.watermark_ms if entry is not None else None


def key_history(path: str, key: str, from_batch: int, to_batch: int | None = None, *, operator: int | None = None,
                storage_options: dict[str, Any] | None = None) -> KeyHistory:
    """Every batch in ``from_batch``…``to_batch`` (default: the last committed batch) in which
    the state key ``key`` was updated or removed (module docstring), with the batch's
    watermark. Raises :class:`KeyUsageError` or :class:`StateReadError` (a delta or changelog
    of the range that is missing or unreadable)."""
    if to_batch is None:
        to_batch = _last_batch(path, storage_options)
    if from_batch > to_batch:
        raise KeyUsageError(f"--from-batch {from_batch} is after --to-batch {to_batch}")
    r = _resolve(path, key, operator, to_batch, storage_options)
    ctx, folder, key_row = r.ctx, r.folder, r.target.key_row
    changes: list[KeyChange] = []
    ids = ctx.unique_ids(r.op.operator_id, r.target.partition, r.store_index, to_batch + 1)
    rocks = r.target.provider == "rocksdb"
    try:
        files = (rocksdb.list_files if rocks else hdfs.list_files)(ctx.storage, folder)
        kind = "changelog" if rocks else "delta"
        versions = range(from_batch + 1, to_batch + 2)
        logged = not rocks or all((v, kind) in files for v in versions)
        if r.target.prefix_cols:
            source = "versions compared" if not logged else "changelogs" if rocks else "delta files"
            changes = _group_changes(r, from_batch, to_batch, files if logged else None)
        elif not logged:
            source = "versions compared"
            before = value_at(r, from_batch)[0] if from_batch > 0 else None
            for v in versions:
                now = value_at(r, v)[0]
                if now != before:
                    changes.append(KeyChange(v - 1, v, UPDATE if now is not None else REMOVE, _decode(r, now),
                                             _watermark(ctx.storage, ctx.root, v - 1)))
                before = now
        else:
            source = "changelogs" if rocks else "delta files"
            for v in versions:
                picked = pick(files.get((v, kind)), ids.get(v))
                if picked is None:
                    raise StateFileError(f"{folder}: no {kind} file for version {v} (batch {v - 1})")
                recs = records(ctx.storage, folder, picked[0], ctx.codec, rocks, key_row)
                wm = _watermark(ctx.storage, ctx.root, v - 1) if recs else None
                for op, raw in recs:
                    changes.append(KeyChange(v - 1, v, REMOVE if op == DELETE else UPDATE, _decode(r, raw), wm))
    except (StateFileError, OSError) as e:
        raise StateReadError(f"state/{r.op.operator_id} partition {r.target.partition}: {e}") from None
    return KeyHistory(r.target, from_batch, to_batch, source, tuple(changes))
