"""What every read of one checkpoint's state stores shares, below the readers of each store
kind (:mod:`~streamwatch.state.reader`, :mod:`~streamwatch.state.join`,
:mod:`~streamwatch.state.tws_reader`, :mod:`~streamwatch.state.scan`): the
:class:`StateContext` (storage, root, conf, the commit log's checkpoint-v2 unique ids), where a
store's folder and schema are, and which provider wrote it."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from streamwatch.checkpoint.fs import Storage
from streamwatch.checkpoint.logs import parse_commit
from streamwatch.model.batchlogs import CommitLogEntry
from streamwatch.model.statestore import StateOperator
from streamwatch.state.model import StateReadError
from streamwatch.state.schema import DEFAULT_CF, ColumnFamilySchema, parse_schema_file
from streamwatch.state.types import SchemaError

_SCHEMA_V3 = re.compile(r"^(\d+)_[0-9A-Za-z-]+$")
CODEC_CONF = "spark.sql.streaming.stateStore.compression.codec"
ENCODING_CONF = "spark.sql.streaming.stateStore.encodingFormat"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


class StateContext:
    """What every store read of one call shares: storage, root, conf, commit cache."""

    def __init__(self, storage: Storage, root: str, conf: Mapping[str, str]) -> None:
        self.storage, self.root, self.conf = storage, root, conf
        self.codec = conf.get(CODEC_CONF, "lz4")
        self.encoding = conf.get(ENCODING_CONF, "unsaferow")
        self._commits: dict[int, CommitLogEntry | None] = {}

    def unique_ids(self, op: int, partition: int, store_index: int, version: int) -> dict[int, str]:
        """version → checkpoint-v2 unique id for versions 1…``version`` (from commits/v-1)."""
        out: dict[int, str] = {}
        for v in range(version, 0, -1):
            b = v - 1
            if b not in self._commits:
                try:
                    data = self.storage.read(self.storage.join(self.root, "commits", str(b)))
                    self._commits[b] = parse_commit(data, b, f"commits/{b}")[0]
                except OSError:
                    self._commits[b] = None
            entry = self._commits[b]
            ids = entry.state_unique_ids if entry is not None else None
            if not ids:
                if v == version:
                    return {}
                break
            try:
                store_ids = ids[str(op)][partition]
                out[v] = str(store_ids[store_index] if isinstance(store_ids, list) else store_ids)
            except (KeyError, IndexError, TypeError):
                break
        return out


def find_schema(storage: Storage, op_folder: str, store: str, batch_id: int, partitions: list[int]) -> list[ColumnFamilySchema]:
    """The column families of ``store``: the newest ``_stateSchema/<store>/<batch>_<uuid>``
    (v3) written at or before ``batch_id``, else ``<p>/[<store>/]_metadata/schema`` of the
    first partition that has one. Raises :class:`StateReadError` when none can be read."""
    problems: list[str] = []
    v3 = storage.join(op_folder, "_stateSchema", store)
    names = []
    for it in storage.list(v3) or []:
        m = _SCHEMA_V3.match(it.name)
        if m and not it.is_dir:
            names.append((int(m.group(1)), it.name))
    for b, name in sorted(names, reverse=True):
        if b > batch_id and len(names) > 1:
            continue
        try:
            return parse_schema_file(storage.read(storage.join(v3, name)))
        except (SchemaError, OSError) as e:
            problems.append(f"_stateSchema/{store}/{name}: {e}")
    for p in partitions:
        parts = [str(p)] + ([] if store == DEFAULT_CF else [store])
        path = storage.join(op_folder, *parts, "_metadata", "schema")
        try:
            data = storage.read(path)
        except OSError:
            continue
        try:
            return parse_schema_file(data)
        except SchemaError as e:
            problems.append(f"{'/'.join(parts)}/_metadata/schema: {e}")
    raise StateReadError(f"state/{os.path.basename(op_folder)} store {store}: "
                         + ("; ".join(problems[:2]) if problems else "no readable state schema file"))


def _store_folder(ctx: StateContext, op_folder: str, partition: int, store: str) -> str:
    parts = [str(partition)] + ([] if store == DEFAULT_CF else [store])
    return ctx.storage.join(op_folder, *parts)


def store_folder(ctx: StateContext, op: StateOperator, partition: int, store: str) -> str:
    """``state/<op>/<partition>[/<store>]`` of ``op`` under the context's checkpoint."""
    return _store_folder(ctx, ctx.storage.join(ctx.root, "state", str(op.operator_id)), partition, store)


def provider_of(op: StateOperator, conf: Mapping[str, str]) -> str:
    """``hdfs`` or ``rocksdb``: from the files, else the offsets log's providerClass."""
    if op.provider in ("hdfs", "rocksdb"):
        return op.provider
    cls = conf.get(PROVIDER_CONF, "")
    return "rocksdb" if "RocksDB" in cls else "hdfs"
