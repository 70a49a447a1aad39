"""Stream-stream join state (operator ``symmetricHashJoin``) in every layout Spark writes,
read without a JVM (mirrors ``SymmetricHashJoinStateManager`` V1–V4 and the answer of Spark's
``spark.read.format("statestore").option("joinSide", …)``).

Each side (``left``/``right``) buffers its input rows by join key:

- state formats 1 and 2 (every Spark; 2 is the default): four stores per partition,
  ``state/<op>/<p>/<side>-keyToNumValues`` (key row → count, a long) and
  ``<side>-keyWithIndexToValue`` (key row + ``index`` long → the input row; format 2 adds a
  ``matched`` boolean), each with its own schema file — plain stores, read by
  :func:`streamwatch.state.reader.read_store`;
- format 3 (Spark 4.1+, ``spark.sql.streaming.join.stateFormatVersion=3``, RocksDB): the same
  four as virtual column families of the one store ``default``; one schema file
  (``_stateSchema/default/<batch>_<uuid>``) lists them;
- format 4 (Spark 4.2+): ``<side>-keyWithTsToValues`` (the join key and the row's event time →
  every buffered row with that key and event time, a list) and ``<side>-tsWithKey`` (event time
  and key → a one-field row: the index that eviction scans in event-time order).

Bytes of formats 3 and 4 (``RocksDBStateEncoder`` with virtual column families): every key
starts with its family's 2-byte little-endian id (the snapshot zip's ``columnFamilyMapping``);
each row is preceded by a version byte (0):

- format 3: key ``[id][0][key row]``, value ``[0][value row]``;
- format 4 ``keyWithTsToValues``: key ``[id][0][key row][event time]``, value a list of
  ``[int32 LE size][0][value row]`` joined by ``,``; ``tsWithKey``: key
  ``[id][event time][0][key row]``, value a list of one ``[0][row]``. The event time is 8
  big-endian bytes with the sign bit flipped (byte order = numeric order): the µs of the
  timestamp column it comes from, shown as the key schema's field ``__event_time``.

A side's rows (``store="left"``/``"right"``): one row per buffered input row — ``key.*`` (the
join key; format 4 with its ``__event_time``), ``value.*`` (the input row and its ``matched``
flag), ``partition_id``. Spark's ``numRowsTotal`` for the operator counts the entries of both
sides' value stores: ``keyWithIndexToValue`` (formats 1–3; ``keyToNumValues`` is an index and
not counted) or ``keyWithTsToValues`` (format 4: RocksDB's key count, so rows sharing key and
event time count once). Bytes that do not decode are an error finding, never a value.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamwatch.model.statestore import StateOperator
from streamwatch.state import rocksdb
from streamwatch.state.model import Column, StateReadError, StateTable
from streamwatch.state.records import StateFileError
from streamwatch.state.scan import ScanSpec, ScanStats, StateStream, scan_rows
from streamwatch.state.schema import DEFAULT_CF, ColumnFamilySchema
from streamwatch.state.stores import StateContext, find_schema, provider_of
from streamwatch.state.types import Field, StructType
from streamwatch.state.unsaferow import RowError, compile_row

JOIN = "symmetricHashJoin"
SIDES = ("left", "right")
#: the stores (formats 1–2) or column families (format 3) of one side
KEY_TO_NUM, KEY_WITH_INDEX = "keyToNumValues", "keyWithIndexToValue"
#: the column families of one side in format 4
KEY_WITH_TS, TS_WITH_KEY = "keyWithTsToValues", "tsWithKey"
STORE_NAMES = frozenset(f"{s}-{k}" for s in SIDES for k in (KEY_TO_NUM, KEY_WITH_INDEX))
#: the families whose entries are the buffered rows Spark counts in numRowsTotal
VALUE_FAMILIES = frozenset(f"{s}-{k}" for s in SIDES for k in (KEY_WITH_INDEX, KEY_WITH_TS))
EVENT_TIME = "__event_time"
ROW_VERSION = 0  # RocksDBStateEncoder's STATE_ENCODING_VERSION, the byte before each row
_I = struct.Struct("<i")
_SIGN = 1 << 63
_DELIMITER = ord(",")  # RocksDB's StringAppendOperator delimiter, between list elements

Decoder = Callable[[bytes], tuple[Any, ...]]
ValuesDecoder = Callable[[bytes], list[tuple[Any, ...]]]


def is_join(op: StateOperator) -> bool:
    """Whether ``op`` is a stream-stream join: its name, or (no operator metadata: Spark 3.5)
    its store folders."""
    return op.name == JOIN or any(n in STORE_NAMES for n in op.store_names)


def has_store_folders(op: StateOperator) -> bool:
    """Whether the join keeps four stores per partition (formats 1–2), not column families of
    ``default`` (formats 3–4)."""
    return any(n in STORE_NAMES for n in op.store_names)


def format_of(cfs: list[ColumnFamilySchema]) -> int:
    """3 or 4: the join state format the column families of store ``default`` belong to.
    Raises :class:`StateReadError` for any other set."""
    names = {c.name for c in cfs}
    if any(f"{s}-{KEY_WITH_TS}" in names for s in SIDES):
        return 4
    if any(f"{s}-{KEY_WITH_INDEX}" in names for s in SIDES):
        return 3
    raise StateReadError(f"store default holds no join state column families ({', '.join(sorted(names)) or 'none'}): "
                         "a join state format streamwatch does not know")


def _event_time(b: bytes, pos: int) -> int:
    """The signed long stored big-endian with its sign bit flipped at ``b[pos:pos + 8]``."""
    u = int.from_bytes(b[pos:pos + 8], "big") ^ _SIGN
    return u - (1 << 64) if u >= _SIGN else u


def _versioned_row(row: Callable[[bytes, int, int], Any], b: bytes, start: int, end: int, what: str) -> Any:
    if end <= start or b[start] != ROW_VERSION:
        got = f"version byte {b[start]}" if end > start else "nothing"
        raise RowError(f"{what}: {got} where a version-{ROW_VERSION} row starts")
    return row(b, start + 1, end - start - 1)


def key_decoder(cf: ColumnFamilySchema) -> Decoder:
    """Key bytes of one format 3/4 column family → values in ``cf.key`` order (format 4: the
    event time at its ``__event_time`` field)."""
    fields = cf.key.fields
    if cf.encoder not in ("eventTimePostfix", "eventTimePrefix"):
        whole = compile_row(cf.key)
        return lambda b: _versioned_row(whole, b, 2, len(b), f"{cf.name} key")
    names = [f.name for f in fields]
    at = names.index(EVENT_TIME) if EVENT_TIME in names else len(fields) - 1
    rest = compile_row(StructType(tuple(f for i, f in enumerate(fields) if i != at)))
    postfix = cf.encoder == "eventTimePostfix"

    def decode(b: bytes) -> tuple[Any, ...]:
        if len(b) < 11:
            raise RowError(f"{cf.name} key of {len(b)} bytes is shorter than an id, an event time and a row")
        if postfix:
            vals = _versioned_row(rest, b, 2, len(b) - 8, f"{cf.name} key")
            ts = _event_time(b, len(b) - 8)
        else:
            ts = _event_time(b, 2)
            vals = _versioned_row(rest, b, 10, len(b), f"{cf.name} key")
        return tuple(vals[:at]) + (ts,) + tuple(vals[at:])
    return decode


def values_decoder(cf: ColumnFamilySchema, fmt: int) -> ValuesDecoder:
    """Value bytes of one column family → its rows (format 3: one; format 4: the list)."""
    row = compile_row(cf.value)
    if fmt == 3:
        return lambda b: [_versioned_row(row, b, 0, len(b), f"{cf.name} value")]

    def decode(b: bytes) -> list[tuple[Any, ...]]:
        out: list[tuple[Any, ...]] = []
        pos = 0
        while pos < len(b):
            if pos + 4 > len(b):
                raise RowError(f"{cf.name} value list: {len(b) - pos} stray bytes after {len(out)} values")
            size = _I.unpack_from(b, pos)[0]
            if size <= 0 or pos + 4 + size > len(b):
                raise RowError(f"{cf.name} value list: value {len(out)} of {size} bytes does not fit "
                               f"the {len(b)}-byte entry")
            out.append(_versioned_row(row, b, pos + 4, pos + 4 + size, f"{cf.name} value"))
            pos += 4 + size
            if pos < len(b):
                # elements appended by RocksDB's merge operator (and Spark's own lists) are
                # joined by its delimiter
                if b[pos] != _DELIMITER:
                    raise RowError(f"{cf.name} value list: byte {pos} is {b[pos]:#04x}, not the ',' between values")
                pos += 1
                if pos == len(b):
                    raise RowError(f"{cf.name} value list ends with a ','")
        if not out:
            raise RowError(f"{cf.name} value list is empty")
        return out
    return decode


def _columns(keys: tuple[Field, ...], values: tuple[Field, ...]) -> tuple[Column, ...]:
    return (tuple(Column(f"key.{f.name}", f.type.simple(), "key") for f in keys)
            + tuple(Column(f"value.{f.name}", f.type.simple(), "value") for f in values)
            + (Column("partition_id", "int", "meta"),))


def stream_virtual(ctx: StateContext, op: StateOperator, store: str, batch_id: int, partitions: list[int],
                   limit: int | None) -> StateStream:
    """The rows of a format 3/4 join's side (``left``/``right``) or of one of its column
    families (``left-keyToNumValues``…) after ``batch_id``, decoded as they are iterated.
    Raises :class:`StateReadError` for store ``default`` (its rows are the families', each
    with its own schema), an unknown store, or no readable schema; an unreadable partition or
    row is an error finding in the stream's stats."""
    op_folder = ctx.storage.join(ctx.root, "state", str(op.operator_id))
    every = sorted({p.partition_id for p in op.partitions})
    cfs = find_schema(ctx.storage, op_folder, DEFAULT_CF, batch_id, partitions + [p for p in every if p not in partitions])
    fmt = format_of(cfs)
    by_name = {c.name: c for c in cfs}
    families = sorted(n for n in by_name if n != DEFAULT_CF)
    label = f"state/{op.operator_id} ({JOIN}, state format {fmt})"
    if store == DEFAULT_CF:
        raise StateReadError(f"{label}: store default holds the join's column families ({', '.join(families)}), "
                             "each with its own schema; read a side (left, right) or one family")
    side = store in SIDES
    cf_name = f"{store}-{KEY_WITH_INDEX if fmt == 3 else KEY_WITH_TS}" if side else store
    cf = by_name.get(cf_name)
    if cf is None:
        raise StateReadError(f"{label}: no store {store!r} (stores: {', '.join(list(SIDES) + families)})")
    provider = provider_of(op, ctx.conf)
    if provider != "rocksdb":
        raise StateReadError(f"{label}: column families in a {provider} store are not decoded")
    if ctx.encoding != "unsaferow":
        raise StateReadError(f"{label}: stateStore.encodingFormat={ctx.encoding} is not decoded by streamwatch "
                             "for joins (unsaferow is)")
    kdec = key_decoder(cf)
    vdec = values_decoder(cf, fmt if cf.name.endswith((KEY_WITH_TS, TS_WITH_KEY)) else 3)
    # a side drops format 3's index (the key's last field), as Spark's joinSide reader does
    drop = 1 if side and fmt == 3 else 0
    keys = cf.key.fields[: len(cf.key.fields) - drop]
    columns = _columns(keys, cf.value.fields)
    version = batch_id + 1

    def entry_rows(k: bytes, v: bytes) -> list[tuple[Any, ...]]:
        key = kdec(k)
        return [key[: len(key) - drop] + val for val in vdec(v)]

    def load(partition: int, folder: str) -> tuple[dict[bytes, bytes], rocksdb.Replay]:
        return rocksdb.load(ctx.storage, folder, version, ctx.codec, ctx.unique_ids(op.operator_id, partition, 0, version))

    spec = ScanSpec(DEFAULT_CF, store, entry_rows, lambda n: f"{n} {cf.name} entries could not be decoded with the state schema",
                    family=cf.name, label=f"{cf.name} ", empty_unmapped_ok=True)
    stats = ScanStats()
    rows = scan_rows(ctx, op, partitions, spec, load, limit, stats)
    return StateStream(op.operator_id, op.name or JOIN, store, provider, ctx.encoding, batch_id, version, columns, rows, stats)


def read_virtual(ctx: StateContext, op: StateOperator, store: str, batch_id: int, partitions: list[int],
                 limit: int | None) -> StateTable:
    """:func:`stream_virtual`'s table, every row read."""
    return stream_virtual(ctx, op, store, batch_id, partitions, limit).table()


def buffered_keys(rows: dict[bytes, bytes], mapping: tuple[tuple[str, int], ...], folder: str) -> dict[str, set[bytes]]:
    """Side (``left``/``right``) → the keys of its buffered rows in one partition of a format
    3/4 join: the entries Spark's ``numRowsTotal`` counts (see module docstring). ``rows`` and
    ``mapping`` as :func:`streamwatch.state.rocksdb.load` returns them. Raises
    :class:`StateFileError` when the store has rows but no column family mapping (rebuilt
    from changelogs alone: which id is which family is then unknown)."""
    out: dict[str, set[bytes]] = {side: set() for side in SIDES}
    if not rows:
        return out
    if not mapping:
        raise StateFileError(f"{folder}: join column family ids unknown (no snapshot zip was read, so no "
                             "columnFamilyMapping names them)")
    ids = {int(i).to_bytes(2, "little", signed=True): name.split("-", 1)[0]
           for name, i in mapping if name in VALUE_FAMILIES}
    for k in rows:
        side = ids.get(k[:2])
        if side is not None:
            out[side].add(k)
    return out


def counts_rows(store: str) -> bool:
    """Whether a format 1/2 join store's entries are buffered rows Spark counts (the
    ``keyWithIndexToValue`` stores; ``keyToNumValues`` is their index)."""
    return store.endswith(f"-{KEY_WITH_INDEX}")
