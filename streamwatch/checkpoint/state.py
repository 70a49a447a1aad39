"""State stores under ``state/``: operator metadata, schema files, and the versions and
bytes each partition's store holds.

Layout (mirrors ``StateStoreId.storeCheckpointLocation`` and the operator metadata log)::

    state/<op>/_metadata/metadata          OperatorStateMetadataV1 ("v1" + JSON)
    state/<op>/_metadata/v2/<batchId>      OperatorStateMetadataV2 (transformWithState…)
    state/<op>/_stateSchema/<store>/…      state schema files (schema format v3)
    state/<op>/<part>/_metadata/schema     state schema (v1/v2, partition 0)
    state/<op>/<part>/[<store>/]V.delta|V.snapshot         HDFSBackedStateStoreProvider
    state/<op>/<part>/[<store>/]V.zip|V.changelog, SSTs/   RocksDBStateStoreProvider

``V`` may carry a checkpoint-v2 unique id (``V_<uuid>.zip``). Version V is the state after
batch V-1. An operator without operator metadata (Spark 3.5 writes none for most operators) has
no name, except a stream-stream join: its store folders (``left-keyToNumValues``…) name it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from streamwatch.checkpoint.fs import Item, Storage, Tree
from streamwatch.checkpoint.logs import split_version
from streamwatch.model.checkpoint import StateOperator, StatePartition, StateStoreInfo, StateVariable
from streamwatch.model.findings import Finding

_VERSION_NAMES = re.compile(r"(?m)^(\d+)(?:_([0-9A-Za-z-]+))?\.(delta|snapshot|zip|changelog)$")
_KIND = {"delta": "hdfs", "snapshot": "hdfs", "zip": "rocksdb", "changelog": "rocksdb"}
MAX_OPERATOR_METADATA_VERSION = 2
JOIN = "symmetricHashJoin"
#: the store folders of a stream-stream join (state formats 1–2), which no other operator has
JOIN_STORES = frozenset(f"{side}-{kind}" for side in ("left", "right") for kind in ("keyToNumValues", "keyWithIndexToValue"))


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def parse_version_names(names: list[str]) -> tuple[set[int], set[int], dict[int, list[str]], set[str]]:
    """State file names → (versions, snapshot versions (``.snapshot``/``.zip``), checkpoint-v2
    unique ids per version, kinds seen (``"hdfs"``/``"rocksdb"``)). One regular-expression
    pass over all names (no per-file call), no ``stat``."""
    versions: set[int] = set()
    snapshots: set[int] = set()
    ids: dict[int, list[str]] = {}
    kinds: set[str] = set()
    for v, uid, ext in _VERSION_NAMES.findall("\n".join(names)):
        n = int(v)
        versions.add(n)
        if ext in ("snapshot", "zip"):
            snapshots.add(n)
        if uid:
            ids.setdefault(n, []).append(uid)
        kinds.add(_KIND[ext])
    return versions, snapshots, ids, kinds


def _read_store(tree: Tree, partition: int, store: str, kinds: set[str]) -> tuple[StatePartition, list[tuple[str, Tree]], bool]:
    """One store folder's listing → (StatePartition, (store name, listing) of nested stores,
    whether it holds ``_metadata/schema``)."""
    versions, snapshots, ids, k = parse_version_names(tree.files)
    kinds |= k
    files, total = len(tree.files), tree.bytes
    nested: list[tuple[str, Tree]] = []
    has_schema = False
    for name, sub in tree.dirs.items():
        if name == "SSTs":
            kinds.add("rocksdb")
        elif name == "_metadata":
            has_schema = "schema" in sub.files
        elif not (name.startswith("_") or name.startswith(".")):
            nested.append((name, sub))
            continue
        f, b = sub.total()
        files += f
        total = _add(total, b)
    uids = tuple(sorted((v, u) for v, us in ids.items() for u in us))
    return StatePartition(partition, store, tuple(sorted(versions)), tuple(sorted(snapshots)), files, total, uids), nested, has_schema


def _last(paths: Any) -> str | None:
    return str(paths[-1]) if isinstance(paths, list) and paths else None


@dataclass(frozen=True, slots=True)
class _OperatorMetadata:
    """What the operator metadata says of a state operator (the :class:`StateOperator` fields
    of the same names); all unset when it has none."""

    name: str | None = None
    metadata_version: int | None = None
    stores: tuple[StateStoreInfo, ...] = ()
    state_variables: tuple[StateVariable, ...] = ()
    time_mode: str | None = None
    output_mode: str | None = None


def _operator_metadata(storage: Storage, op_folder: str, findings: list[Finding]) -> _OperatorMetadata:
    """Latest operator metadata of ``op_folder`` (the v2 log ``_metadata/v2/<batchId>``
    preferred over v1 ``_metadata/metadata``; mirrors ``OperatorStateMetadataV1/V2``): the
    first candidate that reads and parses, unreadable or bad ones becoming findings."""
    meta_dir = storage.join(op_folder, "_metadata")
    v2_dir = storage.join(meta_dir, "v2")
    v2_items = storage.list(v2_dir) or []
    v2_ids = sorted(int(i.name) for i in v2_items if i.name.isdecimal() and not i.is_dir)
    candidates = []
    if v2_ids:
        candidates.append(storage.join(v2_dir, str(v2_ids[-1])))
    candidates.append(storage.join(meta_dir, "metadata"))
    for path in candidates:
        try:
            data = storage.read(path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            continue
        except OSError as e:
            findings.append(Finding("error", "unreadable-file", f"operator metadata: {e.strerror or e}", path))
            continue
        version, body, fs = split_version(data, path, MAX_OPERATOR_METADATA_VERSION, "operator metadata")
        findings.extend(fs)
        if version is None:
            continue
        line = next((ln for ln in body if ln.strip()), b"")
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            findings.append(Finding("error", "unparsable-file", "operator metadata is not a JSON object (truncated?)", path))
            continue
        return _parse_operator_metadata(obj, version)
    return _OperatorMetadata()


def _parse_operator_metadata(obj: dict[str, Any], version: int) -> _OperatorMetadata:
    """One operator metadata document ``obj`` (its JSON line) of log version ``version``."""
    info = obj.get("operatorInfo")
    info = info if isinstance(info, dict) else {}
    stores = []
    store_infos = obj.get("stateStoreInfo")
    for s in store_infos if isinstance(store_infos, list) else []:
        if isinstance(s, dict):
            stores.append(
                StateStoreInfo(
                    str(s.get("storeName", "default")),
                    s.get("numPartitions"),
                    s.get("numColsPrefixKey"),
                    # v2 names a list of schema files (one per schema version)
                    s.get("stateSchemaFilePath") or _last(s.get("stateSchemaFilePaths")),
                )
            )
    props = obj.get("operatorPropertiesJson")
    variables: tuple[StateVariable, ...] = ()
    time_mode = output_mode = None
    if isinstance(props, str):
        try:
            p = orjson.loads(props)
        except orjson.JSONDecodeError:
            p = {}
        p = p if isinstance(p, dict) else {}
        time_mode, output_mode = p.get("timeMode"), p.get("outputMode")
        svars = p.get("stateVariables")
        variables = tuple(StateVariable(str(v.get("stateName")), str(v.get("stateVariableType")), bool(v.get("ttlEnabled")))
                          for v in (svars if isinstance(svars, list) else []) if isinstance(v, dict))
    return _OperatorMetadata(info.get("operatorName"), version, tuple(stores), variables, time_mode, output_mode)


def read_state(storage: Storage, root: str, provider_hint: str | None = None, *, sizes: bool = True) -> tuple[tuple[StateOperator, ...], list[Finding]]:
    """Every operator under ``<root>/state``. ``provider_hint`` (``"hdfs"``/``"rocksdb"``,
    from the recorded conf) is used when no store file tells. ``sizes`` False skips measuring
    bytes where that costs a ``stat`` per file (``bytes`` None then): versions come from the
    file names alone. Each partition folder is listed recursively, the partitions
    ``storage.concurrency`` at a time (one listing request per partition on object storage)."""
    state_dir = storage.join(root, "state")
    items = storage.list(state_dir)
    if items is None:
        return (), []
    findings: list[Finding] = []
    op_ids: list[tuple[int, str]] = []
    for it in sorted(items, key=lambda i: (not i.name.isdecimal(), int(i.name) if i.name.isdecimal() else 0, i.name)):
        path = storage.join(state_dir, it.name)
        if not it.is_dir or not it.name.isdecimal():
            if not it.name.startswith("."):
                findings.append(Finding("warning", "stray-file", f"unexpected {'folder' if it.is_dir else 'file'} {it.name!r} in state/", path))
            continue
        op_ids.append((int(it.name), path))
    # One listing per operator folder, then every partition folder of every operator at once.
    listings = storage.map_concurrent(storage.list, [p for _, p in op_ids])
    parts: list[tuple[int, str]] = []  # (operator index, partition folder name)
    for i, listing in enumerate(listings):
        parts += [(i, it.name) for it in listing or [] if it.is_dir and it.name.isdecimal()]
    trees = storage.trees([storage.join(op_ids[i][1], name) for i, name in parts], sizes)
    by_op: dict[int, list[tuple[str, Tree | None]]] = {}
    for (i, name), tree in zip(parts, trees, strict=True):
        by_op.setdefault(i, []).append((name, tree))
    ops = [
        _read_operator(storage, path, op_id, listings[i] or [], by_op.get(i, []), provider_hint, findings, sizes)
        for i, (op_id, path) in enumerate(op_ids)
    ]
    return tuple(ops), findings


def _read_operator(
    storage: Storage,
    op_folder: str,
    op_id: int,
    listing: list[Item],
    partition_trees: list[tuple[str, Tree | None]],
    provider_hint: str | None,
    findings: list[Finding],
    sizes: bool,
) -> StateOperator:
    meta = _operator_metadata(storage, op_folder, findings)
    kinds: set[str] = set()
    partitions: list[StatePartition] = []
    schema_files: list[str] = []
    total: int | None = 0
    for it in listing:
        sub = storage.join(op_folder, it.name)
        if it.name in ("_stateSchema", "_metadata") and it.is_dir:
            tree = storage.tree(sub, sizes)
            if tree is None:
                continue
            if it.name == "_stateSchema":
                schema_files += [f"_stateSchema/{store}/{f}" for store, t in tree.dirs.items() for f in t.files]
            total = _add(total, tree.total()[1])
            continue
        if (not it.is_dir or not it.name.isdecimal()) and not it.name.startswith("."):
            findings.append(Finding("warning", "stray-file", f"unexpected {'folder' if it.is_dir else 'file'} {it.name!r} in a state operator folder", sub))
    for name, tree in partition_trees:
        if tree is None:
            continue
        pid = int(name)
        queue: list[tuple[str, Tree, str]] = [("default", tree, "")]
        while queue:
            store, t, rel = queue.pop()
            part, nested, has_schema = _read_store(t, pid, store, kinds)
            if part.versions or store != "default" or not nested:
                partitions.append(part)
            total = _add(total, part.bytes)
            queue.extend((n, sub, f"{rel}{n}/") for n, sub in nested)
            if has_schema:
                schema_files.append(f"{name}/{rel}_metadata/schema")
    partitions.sort(key=lambda p: (p.partition_id, p.store_name))
    op_name = meta.name
    if op_name is None and any(p.store_name in JOIN_STORES for p in partitions):
        op_name = JOIN
    provider = "rocksdb" if "rocksdb" in kinds else "hdfs" if "hdfs" in kinds else (provider_hint or "unknown")
    return StateOperator(
        operator_id=op_id,
        path=op_folder,
        provider=provider,
        partitions=tuple(partitions),
        schema_files=tuple(sorted(schema_files)),
        bytes=total,
        name=op_name,
        metadata_version=meta.metadata_version,
        stores=meta.stores,
        state_variables=meta.state_variables,
        time_mode=meta.time_mode,
        output_mode=meta.output_mode,
    )
