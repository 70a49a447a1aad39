"""The rows of one transformWithState state variable as of a batch (see
:mod:`streamwatch.state.tws` for the byte layout), as tables shaped like Spark's state data
source output (struct columns flattened to ``column.field``): value state ``key.*,
value.*``; list state one row per element ``key.*, list_element.*``; map state one row per
entry ``key.*, user_map_key.*, user_map_value.*``; timers (``timers``) ``key.*,
expiration_timestamp_ms``; each with ``partition_id``. A variable with a TTL keeps its
value in a ``value`` struct beside ``ttlExpirationMs`` (epoch ms), as Spark stores it."""

from __future__ import annotations

from typing import Any

from streamwatch.model.statestore import StateOperator
from streamwatch.state import rocksdb
from streamwatch.state.model import Column, StateReadError, StateTable
from streamwatch.state.records import StateFileError
from streamwatch.state.scan import DECODE_ERRORS, EntryRows, ScanSpec, ScanStats, StateStream, scan_rows
from streamwatch.state.schema import DEFAULT_CF, ColumnFamilySchema
from streamwatch.state.stores import StateContext, find_schema, provider_of
from streamwatch.state.tws import TIMER_CFS, TIMERS, key_decoder, split_values, value_decoder
from streamwatch.state.types import DataType, StructType


def is_tws(op: StateOperator) -> bool:
    """Whether ``op`` is a transformWithState operator (its name or state variables say so)."""
    return (op.name or "").startswith("transformWithState") or bool(op.state_variables)


def variable_names(op: StateOperator, cfs: list[ColumnFamilySchema] | None = None) -> list[str]:
    """The user state variables of ``op`` (operator metadata order), plus ``timers`` when it
    registers timers; from the schema file's column families when the metadata has none."""
    names = [v.name for v in op.state_variables if not v.name.startswith("$")]
    has_timers = any(v.kind == "TimerState" for v in op.state_variables)
    if cfs is not None:
        if not names:
            names = [c.name for c in cfs if not c.name.startswith("$") and c.name != DEFAULT_CF]
        has_timers = has_timers or any(c.name in TIMER_CFS for c in cfs)
    return names + ([TIMERS] if has_timers else [])


def count_rows(rows: dict[bytes, bytes], mapping: tuple[tuple[str, int], ...]) -> int:
    """The rows of one partition of a transformWithState store as Spark's ``numRowsTotal``
    counts them (its RocksDB ``numKeys``): the keys of the user's state variables — one per
    grouping key of a value or list state (a list is one key however many elements it holds),
    one per entry of a map state — not those of the internal ``$``-prefixed families (TTL
    indexes, list counters, timers), which Spark counts apart (``numInternalKeys``).
    ``rows``/``mapping`` as :func:`streamwatch.state.rocksdb.load` returns them. Raises
    :class:`StateFileError` when the store has keys but no column family mapping (no zip to
    name the ids: which family is which is then unknown)."""
    if not rows:
        return 0
    if not mapping:
        raise StateFileError("transformWithState column family ids unknown (no snapshot zip names them: "
                             "no columnFamilyMapping)")
    ids = {int(i).to_bytes(2, "little", signed=True) for name, i in mapping if not name.startswith("$")}
    return sum(1 for k in rows if k[:2] in ids)


def _kind(op: StateOperator, var: str, cf: ColumnFamilySchema) -> str:
    for v in op.state_variables:
        if v.name == var:
            return {"ValueState": "value", "ListState": "list", "MapState": "map"}.get(v.kind, v.kind)
    return "map" if cf.encoder == "prefixScan" else "value"


def _fields(prefix: str, schema: StructType | DataType, part: str) -> tuple[Column, ...]:
    """One column per field of a row schema or struct type, named ``prefix.field``."""
    return tuple(Column(f"{prefix}.{f.name}", f.type.simple(), part) for f in schema.fields)


def stream_variable(ctx: StateContext, op: StateOperator, var: str, batch_id: int, partitions: list[int],
                    limit: int | None) -> StateStream:
    """The rows of state variable ``var`` (or ``timers``) of transformWithState operator
    ``op`` after ``batch_id``, decoded as they are iterated. Raises :class:`StateReadError`
    for an unknown variable, a store that is not RocksDB, or an unreadable schema; an
    unreadable partition or row is a finding in the stream's stats."""
    provider = provider_of(op, ctx.conf)
    if provider != "rocksdb":
        raise StateReadError(f"state/{op.operator_id}: transformWithState state in a {provider} store is not decoded")
    if ctx.encoding not in ("avro", "unsaferow"):
        raise StateReadError(f"state/{op.operator_id}: stateStore.encodingFormat={ctx.encoding} is not decoded "
                             "(unsaferow and avro are)")
    cf_name, cf = _family(ctx, op, var, batch_id, partitions)
    kind = "timers" if var == TIMERS else _kind(op, var, cf)
    # what Spark's list encoding and RocksDB's merges put between two list elements
    delimiter = rocksdb.merge_delimiter(ctx.conf)
    version = batch_id + 1
    names = [s.name for s in op.stores] or [DEFAULT_CF]
    index = names.index(DEFAULT_CF) if DEFAULT_CF in names else 0

    def load(partition: int, folder: str) -> tuple[dict[bytes, bytes], rocksdb.Replay]:
        ids = ctx.unique_ids(op.operator_id, partition, index, version)
        return rocksdb.load(ctx.storage, folder, version, ctx.codec, ids, delimiter)

    rows_of = _entry_rows(kind, cf, ctx.encoding == "avro", delimiter)
    spec = ScanSpec(DEFAULT_CF, var, rows_of, lambda n: f"{n} {var} entries could not be decoded", family=cf_name,
                    label=f"{var} ", errors=DECODE_ERRORS + (TypeError,), unmapped_variable=True)
    stats = ScanStats()
    rows = scan_rows(ctx, op, partitions, spec, load, limit, stats)
    return StateStream(op.operator_id, op.name, DEFAULT_CF, provider, ctx.encoding, batch_id, version,
                       _columns(kind, cf), rows, stats, variable=var)


def _family(ctx: StateContext, op: StateOperator, var: str, batch_id: int,
            partitions: list[int]) -> tuple[str, ColumnFamilySchema]:
    """(column family name, its schema) of state variable ``var`` (``timers``: the timer
    family the schema file has). Raises :class:`StateReadError` for an unknown variable or
    one without a family."""
    op_folder = ctx.storage.join(ctx.root, "state", str(op.operator_id))
    every = sorted({p.partition_id for p in op.partitions})
    cfs = find_schema(ctx.storage, op_folder, DEFAULT_CF, batch_id, partitions + [p for p in every if p not in partitions])
    by_name = {c.name: c for c in cfs}
    names = variable_names(op, cfs)
    if var not in names:
        raise StateReadError(f"state/{op.operator_id}: no state variable {var!r} (variables: {', '.join(names) or 'none'})")
    cf_name = next((n for n in TIMER_CFS if n in by_name), "") if var == TIMERS else var
    cf = by_name.get(cf_name)
    if cf is None:
        raise StateReadError(f"state/{op.operator_id}: state variable {var!r} has no column family in the schema file")
    return cf_name, cf


def _columns(kind: str, cf: ColumnFamilySchema) -> tuple[Column, ...]:
    """The columns of a ``timers``, ``map``, ``list`` or ``value`` variable's table (module
    docstring), ``partition_id`` last."""
    if kind == "timers":
        columns = _fields("key", cf.key.fields[0].type, "key") + (Column("expiration_timestamp_ms", "bigint", "value"),)
    elif kind == "map":
        grouping, user_key = cf.key.fields[0].type, cf.key.fields[1].type
        columns = (_fields("key", grouping, "key") + _fields("user_map_key", user_key, "key")
                   + _fields("user_map_value", cf.value, "value"))
    else:
        columns = _fields("key", cf.key, "key") + _fields("list_element" if kind == "list" else "value", cf.value, "value")
    return columns + (Column("partition_id", "int", "meta"),)


def _flat(v: Any, n: int) -> tuple[Any, ...]:
    """A struct value's fields as a tuple (``n`` Nones for a null struct)."""
    if isinstance(v, dict):
        return tuple(v.values())
    return (None,) * n if v is None else (v,)


def _entry_rows(kind: str, cf: ColumnFamilySchema, avro: bool, delimiter: bytes) -> EntryRows:
    """The output rows of one entry (key bytes, value bytes) of a ``kind`` variable: one, or
    one per list element (split at ``delimiter``)."""
    kdec = key_decoder(cf, avro)
    vdec = value_decoder(cf, avro)
    if kind == "timers":
        n_grouping = len(cf.key.fields[0].type.fields)

        def timer_rows(k: bytes, v: bytes) -> list[tuple[Any, ...]]:
            key = kdec(k)
            return [_flat(key[0], n_grouping) + (key[1],)]
        return timer_rows
    if kind == "map":
        n_grouping, n_user_key = len(cf.key.fields[0].type.fields), len(cf.key.fields[1].type.fields)

        def map_rows(k: bytes, v: bytes) -> list[tuple[Any, ...]]:
            key = kdec(k)
            return [_flat(key[0], n_grouping) + _flat(key[1], n_user_key) + vdec(v, 0, len(v))]
        return map_rows
    listed = kind == "list"

    def value_rows(k: bytes, v: bytes) -> list[tuple[Any, ...]]:
        key = kdec(k)
        spans = split_values(v, delimiter) if listed else [(0, len(v))]
        return [key + vdec(v, off, end) for off, end in spans]
    return value_rows


def read_variable(ctx: StateContext, op: StateOperator, var: str, batch_id: int, partitions: list[int],
                  limit: int | None) -> StateTable:
    """:func:`stream_variable`'s table, every row read."""
    return stream_variable(ctx, op, var, batch_id, partitions, limit).table()
