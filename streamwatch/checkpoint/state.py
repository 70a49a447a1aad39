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
batch V-1.
"""

from __future__ import annotations

import re

import orjson

from streamwatch.checkpoint.fs import Storage
from streamwatch.checkpoint.logs import split_version
from streamwatch.model.checkpoint import StateOperator, StatePartition, StateStoreInfo, StateVariable
from streamwatch.model.findings import Finding

_VERSION_FILE = re.compile(r"^(\d+)(?:_[0-9A-Za-z-]+)?\.(delta|snapshot|zip|changelog)$")
MAX_OPERATOR_METADATA_VERSION = 2


def _walk_bytes(storage: Storage, folder: str) -> tuple[int, int]:
    """(files, bytes) under ``folder``, recursively."""
    items = storage.list(folder) or []
    files = total = 0
    for it in items:
        if it.is_dir:
            f, b = _walk_bytes(storage, storage.join(folder, it.name))
            files += f
            total += b
        else:
            files += 1
            total += it.size
    return files, total


def _read_store(storage: Storage, folder: str, partition: int, store: str, kinds: set[str]) -> tuple[StatePartition, list[tuple[str, str]], bool]:
    """One store folder → (StatePartition, (store name, folder) of nested stores, whether it
    holds ``_metadata/schema``)."""
    items = storage.list(folder) or []
    versions: set[int] = set()
    snapshots: set[int] = set()
    files = total = 0
    nested: list[tuple[str, str]] = []
    has_schema = False
    for it in items:
        if it.is_dir:
            sub = storage.join(folder, it.name)
            if it.name == "SSTs":
                kinds.add("rocksdb")
                f, b = _walk_bytes(storage, sub)
            elif it.name == "_metadata":
                names = storage.list(sub) or []
                has_schema = any(i.name == "schema" for i in names)
                f, b = len(names), sum(i.size for i in names)
            elif it.name.startswith("_") or it.name.startswith("."):
                f, b = _walk_bytes(storage, sub)
            else:
                nested.append((it.name, sub))
                continue
            files += f
            total += b
            continue
        files += 1
        total += it.size
        m = _VERSION_FILE.match(it.name)
        if m:
            v, ext = int(m.group(1)), m.group(2)
            versions.add(v)
            if ext in ("snapshot", "zip"):
                snapshots.add(v)
            kinds.add("hdfs" if ext in ("delta", "snapshot") else "rocksdb")
    return StatePartition(partition, store, tuple(sorted(versions)), tuple(sorted(snapshots)), files, total), nested, has_schema


def _operator_metadata(storage: Storage, op_folder: str, findings: list[Finding]) -> dict:
    """Latest operator metadata (v2 log preferred over v1) as a dict with name, version,
    stores, variables, time/output mode."""
    meta_dir = storage.join(op_folder, "_metadata")
    out: dict = {}
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
                        s.get("stateSchemaFilePath"),
                    )
                )
        props = obj.get("operatorPropertiesJson")
        variables: list[StateVariable] = []
        time_mode = output_mode = None
        if isinstance(props, str):
            try:
                p = orjson.loads(props)
            except orjson.JSONDecodeError:
                p = {}
            p = p if isinstance(p, dict) else {}
            time_mode, output_mode = p.get("timeMode"), p.get("outputMode")
            svars = p.get("stateVariables")
            for v in svars if isinstance(svars, list) else []:
                if not isinstance(v, dict):
                    continue
                variables.append(StateVariable(str(v.get("stateName")), str(v.get("stateVariableType")), bool(v.get("ttlEnabled"))))
        out = dict(
            name=info.get("operatorName"),
            metadata_version=version,
            stores=tuple(stores),
            state_variables=tuple(variables),
            time_mode=time_mode,
            output_mode=output_mode,
        )
        break
    return out


def read_state(storage: Storage, root: str, provider_hint: str | None = None) -> tuple[tuple[StateOperator, ...], list[Finding]]:
    """Every operator under ``<root>/state``. ``provider_hint`` (``"hdfs"``/``"rocksdb"``,
    from the recorded conf) is used when no store file tells."""
    state_dir = storage.join(root, "state")
    items = storage.list(state_dir)
    if items is None:
        return (), []
    findings: list[Finding] = []
    ops: list[StateOperator] = []
    for it in sorted(items, key=lambda i: (not i.name.isdecimal(), int(i.name) if i.name.isdecimal() else 0, i.name)):
        path = storage.join(state_dir, it.name)
        if not it.is_dir or not it.name.isdecimal():
            if not it.name.startswith("."):
                findings.append(Finding("warning", "stray-file", f"unexpected {'folder' if it.is_dir else 'file'} {it.name!r} in state/", path))
            continue
        ops.append(_read_operator(storage, path, int(it.name), provider_hint, findings))
    return tuple(ops), findings


def _read_operator(storage: Storage, op_folder: str, op_id: int, provider_hint: str | None, findings: list[Finding]) -> StateOperator:
    meta = _operator_metadata(storage, op_folder, findings)
    kinds: set[str] = set()
    partitions: list[StatePartition] = []
    schema_files: list[str] = []
    total = 0
    for it in storage.list(op_folder) or []:
        sub = storage.join(op_folder, it.name)
        if it.name == "_stateSchema" and it.is_dir:
            for store in storage.list(sub) or []:
                if store.is_dir:
                    schema_files += [f"_stateSchema/{store.name}/{f.name}" for f in storage.list(storage.join(sub, store.name)) or [] if not f.is_dir]
            total += _walk_bytes(storage, sub)[1]
            continue
        if it.name == "_metadata" and it.is_dir:
            total += _walk_bytes(storage, sub)[1]
            continue
        if not it.is_dir or not it.name.isdecimal():
            if not it.name.startswith("."):
                findings.append(Finding("warning", "stray-file", f"unexpected {'folder' if it.is_dir else 'file'} {it.name!r} in a state operator folder", sub))
            continue
        pid = int(it.name)
        queue = [("default", sub, "")]
        while queue:
            store, folder, rel = queue.pop()
            part, nested, has_schema = _read_store(storage, folder, pid, store, kinds)
            if part.versions or store != "default" or not nested:
                partitions.append(part)
            total += part.bytes
            queue.extend((name, f, f"{rel}{name}/") for name, f in nested)
            if has_schema:
                schema_files.append(f"{it.name}/{rel}_metadata/schema")
    partitions.sort(key=lambda p: (p.partition_id, p.store_name))
    provider = "rocksdb" if "rocksdb" in kinds else "hdfs" if "hdfs" in kinds else (provider_hint or "unknown")
    return StateOperator(
        operator_id=op_id,
        path=op_folder,
        provider=provider,
        partitions=tuple(partitions),
        schema_files=tuple(sorted(schema_files)),
        bytes=total,
        **meta,
    )
