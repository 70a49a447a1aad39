"""A Delta sink table's transaction log ``<table>/_delta_log/`` (read-only).

``NNNNNNNNNNNNNNNNNNNN.json`` commits hold one action per line: ``add``, ``remove``, ``txn``
(``appId`` = streaming query id, ``version`` = batch id — how Delta's streaming sink makes
each batch idempotent) and ``commitInfo`` (``operation`` ``STREAMING UPDATE`` with
``operationParameters.queryId``/``epochId``). ``*.checkpoint.parquet`` files are only listed.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from streamwatch.checkpoint.fs import Storage
from streamwatch.model.checkpoint import DeltaCommit, DeltaLog
from streamwatch.model.findings import Finding

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+)?(?:\.[0-9a-f-]+)?\.parquet$")


def _int(v: Any) -> int | None:
    """``int(v)`` when it is a Java long, else None."""
    try:
        n = int(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return n if -(1 << 63) <= n < (1 << 63) else None


def parse_delta_commit(data: bytes, version: int) -> DeltaCommit | None:
    """One commit file → DeltaCommit (None when a line is not JSON)."""
    adds = removes = data_adds = data_bytes = 0
    app = txn_v = op = qid = epoch = ts = rows = table_id = None
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            action = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(action, dict):
            return None
        if "add" in action:
            adds += 1
            add = action["add"]
            if isinstance(add, dict) and add.get("dataChange", True) is not False:
                data_adds += 1
                data_bytes += _int(add.get("size")) or 0
        elif "metaData" in action and isinstance(action["metaData"], dict):
            tid = action["metaData"].get("id")
            table_id = tid if isinstance(tid, str) else table_id
        elif "remove" in action:
            removes += 1
        elif "txn" in action and isinstance(action["txn"], dict):
            app, txn_v = action["txn"].get("appId"), _int(action["txn"].get("version"))
        elif "commitInfo" in action and isinstance(action["commitInfo"], dict):
            ci = action["commitInfo"]
            op, ts = ci.get("operation"), _int(ci.get("timestamp"))
            params = ci.get("operationParameters")
            params = params if isinstance(params, dict) else {}
            qid, epoch = params.get("queryId"), _int(params.get("epochId"))
            metrics = ci.get("operationMetrics")
            rows = _int(metrics.get("numOutputRows")) if isinstance(metrics, dict) else None
    return DeltaCommit(version, adds, removes, app, txn_v, op, qid, epoch, ts, rows, data_adds, data_bytes,
                       table_id)


def read_delta_log(storage: Storage, table: str) -> tuple[DeltaLog | None, list[Finding]]:
    """``<table>/_delta_log`` → DeltaLog (None when absent); bad commits become findings."""
    folder = storage.join(table, "_delta_log")
    items = storage.list(folder)
    if items is None:
        return None, []
    findings: list[Finding] = []
    commits: list[DeltaCommit] = []
    checkpoints: list[int] = []
    for it in sorted(items, key=lambda i: i.name):
        m = _COMMIT.match(it.name)
        if m:
            path = storage.join(folder, it.name)
            try:
                data = storage.read(path)
            except FileNotFoundError:
                continue
            except OSError as e:
                findings.append(Finding("error", "unreadable-file", f"Delta commit {it.name}: {e.strerror or e}", path))
                continue
            c = parse_delta_commit(data, int(m.group(1)))
            if c is None:
                findings.append(Finding("error", "unparsable-file", f"Delta commit {it.name} is not JSON lines (truncated?)", path))
            else:
                commits.append(c)
            continue
        m = _CHECKPOINT.match(it.name)
        if m:
            checkpoints.append(int(m.group(1)))
    return DeltaLog(folder, tuple(commits), tuple(sorted(set(checkpoints)))), findings


def table_history(table: str, limit: int = 20) -> list[DeltaCommit]:
    """The newest ``limit`` commits of the Delta table at ``table`` (a folder or fsspec URL),
    newest first — what ``DESCRIBE HISTORY`` lists (version, operation, rows written; time is
    commitInfo.timestamp, epoch ms, where Delta shows the commit file's modification time),
    read from ``_delta_log/<version>.json`` without a JVM; [] when it is not a Delta table.
    Raises :class:`~streamwatch.checkpoint.fs.StorageError` when the folder is unreadable."""
    from streamwatch.checkpoint.fs import open_storage

    storage, root = open_storage(table)
    folder = storage.join(root, "_delta_log")
    items = storage.list(folder)
    if items is None:
        return []
    versions = sorted((int(m.group(1)), it.name) for it in items if (m := _COMMIT.match(it.name)))
    out = []
    for version, name in reversed(versions[-limit:]):  # only the newest commits are read
        try:
            commit = parse_delta_commit(storage.read(storage.join(folder, name)), version)
        except OSError:  # removed by log cleanup meanwhile
            continue
        if commit is not None:
            out.append(commit)
    return out
