"""Read the rows of a checkpoint's state stores as of a batch, without a JVM (the answer
Spark's ``spark.read.format("statestore")`` gives, for HDFS-backed and RocksDB stores).

State store version ``V`` holds the state after batch ``V - 1``: batch ``B`` is version
``B + 1``. Store folders are ``state/<op>/<partition>`` (store ``default``) or
``state/<op>/<partition>/<store>`` (stream-stream joins: ``left-keyToNumValues``,
``left-keyWithIndexToValue``, ``right-…``; join state formats 3–4 keep theirs as column
families of ``default`` instead: :mod:`streamwatch.state.join`). With checkpoint format v2 the
commit log's ``stateUniqueIds`` (operator → partition → one id per store) picks each version's
file.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from streamwatch.checkpoint import CheckpointError, read_checkpoint
from streamwatch.checkpoint.fs import StorageError, open_storage
from streamwatch.model.statestore import StateOperator
from streamwatch.state import hdfs, join, rocksdb, scan, tws_reader
from streamwatch.state.encoding import batch_rows, decoders
from streamwatch.state.join import SIDES
from streamwatch.state.model import Column, StateReadError, StateTable
from streamwatch.state.schema import DEFAULT_CF, ColumnFamilySchema
from streamwatch.state.stores import StateContext, find_schema, provider_of
from streamwatch.state.unsaferow import RowError

if TYPE_CHECKING:
    from streamwatch.model.checkpoint import Checkpoint
    from streamwatch.state.entries import Entries


def _columns(cf: ColumnFamilySchema, drop_key_tail: int = 0) -> tuple[Column, ...]:
    keys = cf.key.fields[: len(cf.key.fields) - drop_key_tail]
    return (tuple(Column(f"key.{f.name}", f.type.simple(), "key") for f in keys)
            + tuple(Column(f"value.{f.name}", f.type.simple(), "value") for f in cf.value.fields)
            + (Column("partition_id", "int", "meta"),))


def _loader(ctx: StateContext, op: StateOperator, provider: str, store: str, version: int) -> scan.Loader:
    """The rebuild of one partition's store ``store`` at ``version`` (module docstring)."""
    names = [s.name for s in op.stores] or [DEFAULT_CF]
    index = names.index(store) if store in names else 0

    def load(partition: int, folder: str) -> tuple[Entries | dict[bytes, bytes], hdfs.Replay | rocksdb.Replay]:
        ids = ctx.unique_ids(op.operator_id, partition, index, version)
        if provider == "rocksdb":
            return rocksdb.load_entries(ctx.storage, folder, version, ctx.codec, ids)
        return hdfs.load_entries(ctx.storage, folder, version, ctx.codec, ids)
    return load


def stream_store(ctx: StateContext, op: StateOperator, store: str, batch_id: int, partitions: list[int],
                 limit: int | None) -> scan.StateStream:
    """The rows of one raw store (``default``, ``left-keyWithIndexToValue``…) or, for a
    stream-stream join, one side (``left``/``right``: keyWithIndexToValue rows without the
    index, value columns with the ``matched`` flag), decoded as they are iterated. Raises
    :class:`StateReadError` when the store, its schema or its encoding cannot be read; an
    unreadable partition or row is a finding in the stream's stats."""
    provider = provider_of(op, ctx.conf)
    version = batch_id + 1
    if (op.name or "").startswith("transformWithState") or op.state_variables:
        raise StateReadError(f"state/{op.operator_id} ({op.name}): transformWithState state is read per state "
                             "variable (pick one with var=/--var)")
    op_folder = ctx.storage.join(ctx.root, "state", str(op.operator_id))
    # a join side: its keyWithIndexToValue store (the operator is a join by its name or, with no
    # operator metadata as in Spark 3.5, by its store folders)
    side = store in SIDES and join.is_join(op)
    raw_store = f"{store}-keyWithIndexToValue" if side else store
    every = sorted({p.partition_id for p in op.partitions})
    cfs = find_schema(ctx.storage, op_folder, raw_store, batch_id, partitions + [p for p in every if p not in partitions])
    cf = next((c for c in cfs if c.name == raw_store), None) or next((c for c in cfs if c.name == DEFAULT_CF), None)
    if cf is None:
        if len(cfs) != 1:
            # several column families and none is this store: decoding every entry with one of
            # their schemas would show other families' bytes as values
            raise StateReadError(f"state/{op.operator_id} store {store}: its schema file lists column families "
                                 f"{', '.join(c.name for c in cfs)}, none of them {raw_store!r}")
        cf = cfs[0]
    info = next((s for s in op.stores if s.name == raw_store), None)
    if cf.encoder == "noPrefix" and info is not None and (info.num_cols_prefix_key or 0) > 0:
        cf = replace(cf, encoder="prefixScan", prefix_cols=info.num_cols_prefix_key or 0)
    if ctx.encoding != "unsaferow":
        raise StateReadError(f"state/{op.operator_id} store {store}: stateStore.encodingFormat={ctx.encoding} "
                             "is not decoded by streamwatch (unsaferow is)")
    kdec, vdec = decoders(cf, provider)
    drop = 1 if side else 0
    columns = _columns(cf, drop)

    def entry_rows(k: bytes, v: bytes) -> list[tuple[Any, ...]]:
        key = kdec(k)
        return [(key[:len(key) - drop] if drop else key) + vdec(v)]

    spec = scan.ScanSpec(raw_store, raw_store, entry_rows, lambda n: f"{n} rows could not be decoded with the state schema",
                         batch=batch_rows(cf, provider, drop), count_entries=True, errors=(RowError,))
    stats = scan.ScanStats()
    rows = scan.scan_rows(ctx, op, partitions, spec, _loader(ctx, op, provider, raw_store, version), limit, stats)
    return scan.StateStream(op.operator_id, op.name, store, provider, ctx.encoding, batch_id, version, columns, rows, stats)


def read_store(ctx: StateContext, op: StateOperator, store: str, batch_id: int, partitions: list[int],
               limit: int | None) -> StateTable:
    """:func:`stream_store`'s table, every row read."""
    return stream_store(ctx, op, store, batch_id, partitions, limit).table()


def default_stores(op: StateOperator) -> list[str]:
    """What ``streamwatch state`` shows for an operator without ``--store``: the two join
    sides of a stream-stream join, else each store it has (usually ``default``)."""
    names = list(op.store_names) or [DEFAULT_CF]
    if join.is_join(op):
        return [s for s in SIDES if f"{s}-keyWithIndexToValue" in names] or list(SIDES)
    return names


def open_context(path: str, storage_options: dict[str, Any] | None = None,
                 checkpoint: Checkpoint | None = None) -> tuple[Checkpoint, StateContext]:
    """(checkpoint model, context) for ``path``; ``checkpoint``: the checkpoint already read
    (not read again). Raises :class:`StateReadError`."""
    try:
        cp = checkpoint if checkpoint is not None else read_checkpoint(path, full=False, storage_options=storage_options)
    except CheckpointError as e:
        raise StateReadError(str(e)) from None
    try:
        storage, root = open_storage(os.fspath(path), storage_options)
    except StorageError as e:
        raise StateReadError(str(e)) from None
    conf = cp.offsets[-1].conf if cp.offsets else {}
    return cp, StateContext(storage, root, conf)


def read_state(path: str, *, operator: int | None = None, store: str | None = None, batch: int | None = None,
               partition: int | None = None, limit: int | None = None,
               storage_options: dict[str, Any] | None = None, var: str | None = None) -> list[StateTable]:
    """:func:`stream_state`'s tables, every row read into memory."""
    return [s.table() for s in stream_state(path, operator=operator, store=store, batch=batch, partition=partition,
                                            limit=limit, storage_options=storage_options, var=var)]


def stream_state(path: str, *, operator: int | None = None, store: str | None = None, batch: int | None = None,
                 partition: int | None = None, limit: int | None = None,
                 storage_options: dict[str, Any] | None = None, var: str | None = None) -> list[scan.StateStream]:
    """The tables of :func:`read_state` with rows decoded as each stream's ``rows`` is
    iterated (a chunk of entries at a time: memory holds one partition's store, not the
    table): every operator, store, variable and schema is resolved (and any
    :class:`StateReadError` raised) before the first row is decoded. The state rows of the
    checkpoint at ``path`` as of ``batch`` (default: the last committed batch): one
    :class:`StateTable` per operator and store (join: per side), or
    only ``operator``/``store``/``partition`` when given; at most ``limit`` rows per table
    (``total_rows`` still counts all). A transformWithState operator gives one table per
    state variable (value/list/map state, ``timers``), or only ``var``; ``encodingFormat``
    ``unsaferow`` and ``avro`` are decoded. Raises :class:`StateReadError` (one line) when the
    checkpoint, operator, store, batch or schema cannot be read; an unreadable partition is
    a finding in its table."""
    cp, ctx = open_context(path, storage_options)
    if not cp.state:
        raise StateReadError(f"{path}: no state operators (state/ is empty or missing)")
    ops = [o for o in cp.state if operator is None or o.operator_id == operator]
    if not ops:
        raise StateReadError(f"{path}: no state operator {operator} (operators: {', '.join(str(o.operator_id) for o in cp.state)})")
    if batch is None:
        if not cp.commit_batch_ids:
            raise StateReadError(f"{path}: no committed batch yet (commits/ is empty)")
        batch = cp.commit_batch_ids[-1]
    if batch < 0:
        raise StateReadError(f"batch {batch}: batch ids start at 0")
    tables: list[scan.StateStream] = []
    for op in ops:
        parts = _partitions(cp, op, batch, partition)
        tables.extend(_operator_streams(ctx, op, store, var, batch, parts, limit))
    return tables


def _partitions(cp: Checkpoint, op: StateOperator, batch: int, partition: int | None) -> list[int]:
    """The partitions of ``op`` to read for ``batch`` (only ``partition`` when given). Raises
    :class:`StateReadError` for a partition it does not have."""
    # the partitions of the layout state version batch+1 was written in: before an offline
    # repartition to more partitions the new folders hold no version of that batch
    n = cp.partitions_for_version(batch + 1)
    parts = sorted({p.partition_id for p in op.partitions if n is None or p.partition_id < n})
    if partition is None:
        return parts
    if partition not in parts:
        raise StateReadError(f"state/{op.operator_id}: no partition {partition} (partitions 0–{max(parts) if parts else -1})")
    return [partition]


def _operator_streams(ctx: StateContext, op: StateOperator, store: str | None, var: str | None, batch: int,
                      parts: list[int], limit: int | None) -> list[scan.StateStream]:
    """:func:`stream_state`'s tables of one operator: its state variables (transformWithState),
    join sides or stores, or only ``store``/``var``. Raises :class:`StateReadError`."""
    if tws_reader.is_tws(op):
        if store not in (None, DEFAULT_CF):
            raise StateReadError(f"state/{op.operator_id}: transformWithState keeps one store (default); "
                                 "pick a state variable with var=/--var")
        op_folder = ctx.storage.join(ctx.root, "state", str(op.operator_id))
        if var is None:
            cfs = find_schema(ctx.storage, op_folder, DEFAULT_CF, batch, parts)
            variables = tws_reader.variable_names(op, cfs)
        else:
            variables = [var]
        return [tws_reader.stream_variable(ctx, op, v, batch, parts, limit) for v in variables]
    if var is not None:
        raise StateReadError(f"state/{op.operator_id} ({op.name or 'unknown'}): var= applies to transformWithState "
                             "operators only")
    names = default_stores(op) if store is None else [store]
    if join.is_join(op) and not join.has_store_folders(op):
        # join state formats 3–4: the sides are column families of store default
        return [join.stream_virtual(ctx, op, name, batch, parts, limit) for name in names]
    # a join keeps no store default (formats 1–2: its four stores and two sides)
    known = set(op.store_names) | set(default_stores(op)) | (set() if join.is_join(op) else {DEFAULT_CF})
    tables = []
    for name in names:
        if name not in known:
            raise StateReadError(f"state/{op.operator_id}: no store {name!r} (stores: {', '.join(sorted(known - {DEFAULT_CF}) or [DEFAULT_CF])})")
        tables.append(stream_store(ctx, op, name, batch, parts, limit))
    return tables
