"""``streamwatch compat``: will a changed query restart from this checkpoint? One verdict per
rule (schema ``streamwatch.compat/1``), from the checkpoint's files and the new query's shape
(:class:`NewQuery`, extracted from Spark by :mod:`streamwatch.spark.compat` without running a
batch). Pure Python: no pyspark here.

Rules, after Spark's "Recovery Semantics after Changes in a Streaming Query" and the checks
Spark 4.x makes on restart:

* sources: the number of sources must match the offsets log (``MicroBatchExecution``
  refuses otherwise), each source's kind must read the recorded offset; a file source with a
  different path (moved, or two sources swapped) is incompatible: Spark matches unnamed
  sources by index (named ones, ``DataStreamReader.name`` with offsets log v2, by name), so
  it resumes a source log listing files outside the new path; Spark 4.2 refuses it when the
  last batch read files from that source, else it restarts and the source reads its whole
  folder as new; maxFilesPerTrigger and other rate options are fine;
* sink: a different kind or file sink path is allowed — a new file sink path starts a new
  ``_spark_metadata`` (no dedup with what the old folder holds); a file sink supports the
  append output mode only;
* stateful operators: their number and names must match ``state/<id>`` (operator ids are
  assigned from the sink down); key and value schemas must match the stored state schema
  (``StateSchemaCompatibilityChecker``: same number of fields, same types; names are ignored);
* confs recorded in the offsets log (shuffle partitions, state store provider, state format
  versions, checkpoint format version…): Spark restores the checkpoint's value on restart
  (``OffsetSeqMetadata.setSessionConf``), so a changed session value is ignored for this query;
* watermark delay changes are allowed: state is evicted by the new watermark from the next
  batch, late-row cutoffs change; a query name is not stored in the checkpoint.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from streamwatch.checkpoint.fs import Storage
from streamwatch.checkpoint.ops.paths import inside, same_place
from streamwatch.model.checkpoint import Checkpoint, SourceLog

SCHEMA = "streamwatch.compat/1"
Verdict = Literal["compatible", "allowed", "incompatible"]
RANK = {"compatible": 0, "allowed": 1, "incompatible": 3}

#: Logical plan node → the operator name Spark records in operator metadata.
OPERATOR_NAMES = {
    "Aggregate": "stateStoreSave",
    "Deduplicate": "dedupe",
    "DeduplicateWithinWatermark": "dedupeWithinWatermark",
    "Join": "symmetricHashJoin",
    "FlatMapGroupsWithState": "flatMapGroupsWithState",
    "TransformWithState": "transformWithStateExec",
}
#: Offsets-log confs Spark restores from the checkpoint on restart.
RESTORED_CONFS = (
    "spark.sql.shuffle.partitions",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.aggregation.stateFormatVersion",
    "spark.sql.streaming.join.stateFormatVersion",
    "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
    "spark.sql.streaming.stateStore.checkpointFormatVersion",
    "spark.sql.streaming.stateStore.encodingFormat",
    "spark.sql.streaming.multipleWatermarkPolicy",
    "spark.sql.streaming.stateStore.compression.codec",
)


@dataclass(frozen=True, slots=True)
class NewSource:
    """A source of the new query: ``kind`` (``file``, ``kafka``, ``rate``, ``delta``…),
    ``path`` (file sources), ``options`` as given to the reader, ``name`` as given with
    ``DataStreamReader.name`` (Spark 4.2+; None for an unnamed source)."""

    kind: str
    path: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None

    def source_id(self, index: int) -> str:
        """The id the checkpoint knows this source by when it is the query's ``index``-th
        source: its name (the offsets log v2 key, the ``sources/<name>/`` folder), else its
        index as text (``"0"``…), as Spark matches an unnamed source."""
        return self.name or str(index)


@dataclass(frozen=True, slots=True)
class NewOperator:
    """A stateful operator of the new query, in operator-id order: ``name`` as recorded in
    operator metadata, key/value schemas as Spark's StructType JSON (None when not known)."""

    name: str
    key_schema: Any = None
    value_schema: Any = None


@dataclass(frozen=True, slots=True)
class NewQuery:
    """The changed query, as configured (never started): sink ``format``, ``sink_path``,
    ``output_mode`` (append/update/complete), ``query_name``, watermark delays (ms), and the
    session's values of the restored confs."""

    sources: tuple[NewSource, ...]
    operators: tuple[NewOperator, ...]
    sink_format: str | None
    sink_path: str | None
    output_mode: str
    query_name: str | None = None
    watermark_delays_ms: tuple[int, ...] = ()
    conf: Mapping[str, str] = field(default_factory=dict)


def read_schema_file(data: bytes) -> list[Any]:
    """The StructType JSON documents in a state schema file (v1/v2: Java ``writeUTF`` chunks
    after a ``vN`` version; v3: JSON lines): key schema first, then value schema."""
    out = []
    dec = orjson.loads
    for m in re.finditer(rb'\{"type":"struct"', data):
        depth, i = 0, m.start()
        for j in range(i, len(data)):
            c = data[j : j + 1]
            if c == b"{":
                depth += 1
            elif c == b"}":
                depth -= 1
                if depth == 0:
                    with contextlib.suppress(orjson.JSONDecodeError):
                        out.append(dec(data[i : j + 1]))
                    break
    # keep only top-level documents (nested structs are inside an earlier one)
    top: list[Any] = []
    for doc in out:
        if not any(_contains(t, doc) for t in top):
            top.append(doc)
    return top


def _contains(outer: Any, inner: Any) -> bool:
    if outer is inner:
        return False
    if outer == inner:
        return True
    if isinstance(outer, dict):
        return any(_contains(v, inner) for v in outer.values())
    if isinstance(outer, list):
        return any(_contains(v, inner) for v in outer)
    return False


def shape(t: Any) -> Any:
    """A StructType JSON without names, nullability and metadata (what the compatibility
    checker compares)."""
    if isinstance(t, dict):
        if t.get("type") == "struct":
            return ("struct", tuple(shape(f.get("type")) for f in t.get("fields", [])))
        if t.get("type") == "array":
            return ("array", shape(t.get("elementType")))
        if t.get("type") == "map":
            return ("map", shape(t.get("keyType")), shape(t.get("valueType")))
        return orjson.dumps(t).decode()
    return t


def _types(t: Any) -> str:
    s = shape(t)

    def fmt(x: Any) -> str:
        if isinstance(x, tuple):
            if x[0] == "struct":
                return "struct<" + ",".join(fmt(y) for y in x[1]) + ">"
            return f"{x[0]}<" + ",".join(fmt(y) for y in x[1:]) + ">"
        return str(x)

    return fmt(s)


def _watermark_ms(schema: Any) -> int | None:
    for f in (schema or {}).get("fields", []) if isinstance(schema, dict) else []:
        v = (f.get("metadata") or {}).get("spark.watermarkDelayMs")
        if isinstance(v, int):
            return v
    return None


def _row(rule: str, verdict: Verdict, reason: str, source: str | None) -> dict[str, Any]:
    return {"rule": rule, "verdict": verdict, "reason": reason, "checkpoint_file": source}


def _schema_of(storage: Storage, op_path: str, files: tuple[str, ...]) -> tuple[list[Any], str | None]:
    for rel in sorted(files, key=lambda f: (not f.endswith("_metadata/schema"), f), reverse=False):
        path = storage.join(op_path, *rel.split("/"))
        try:
            docs = read_schema_file(storage.read(path))
        except OSError:
            continue
        if docs:
            return docs, path
    return [], None


def _source_rows(cp: Checkpoint, new: NewQuery, off_path: str | None) -> list[dict[str, Any]]:
    """The sources rules: each source of ``new`` against the latest offsets entry's line of
    the same id (:meth:`NewSource.source_id`: by name for a named source, else by index) and
    its ``sources/<id>/`` file log."""
    latest = cp.latest_offsets
    if latest is None:
        return [_row("sources", "compatible", "no batch planned yet: the query starts fresh", None)]
    if len(latest.sources) != len(new.sources):
        return [_row("sources", "incompatible", f"the offsets log has {len(latest.sources)} source(s), the query {len(new.sources)}: Spark refuses to continue", off_path)]
    rows = [_row("sources", "compatible", f"{len(new.sources)} source(s) on both sides", off_path)]
    logs = {s.name: s for s in cp.sources}
    for i, ns in enumerate(new.sources):
        sid = ns.source_id(i)
        pos = latest.position(sid)
        if pos is None:
            known = ", ".join(latest.source_ids) or "none"
            rows.append(_row(f"source {sid}", "incompatible", f"the offsets log has no source {sid} (its sources: {known}): "
                             "Spark matches a named source by its name", off_path))
            continue
        p = latest.parsed[pos] if pos < len(latest.parsed) else None
        kind = p.kind if p else None
        if kind not in ("number", "raw", None) and kind != ns.kind:
            rows.append(_row(f"source {sid} kind", "incompatible", f"the checkpoint holds a {kind} offset, the query reads {ns.kind} here", off_path))
            continue
        if ns.kind == "file":
            rows.append(_file_source_row(sid, ns, logs.get(sid), off_path))
        opts = {k: v for k, v in ns.options.items() if k.lower() != "path"}
        if opts:
            rows.append(_row(f"source {sid} options", "compatible", "reader options (" + ", ".join(sorted(opts)) + ") may change across restarts", None))
    return rows


def _file_source_row(sid: str, ns: NewSource, log: SourceLog | None, off_path: str | None) -> dict[str, Any]:
    dirs = {e.path.rsplit("/", 1)[0] for e in log.entries} if log and log.entries_loaded else set()
    # the log holds Spark's URIs (file:///…, %20), the query the path as typed (maybe
    # relative): compared as places; a partitioned source lists files in subfolders of the
    # folder it reads
    if dirs and ns.path and not any(inside(d, ns.path) for d in dirs):
        how = "by name" if not sid.isdecimal() else "by index"
        return _row(f"source {sid} path", "incompatible",
                    f"the file source's log lists files under {sorted(dirs)[0]}, the query reads {ns.path}: Spark matches sources {how} "
                    "and resumes this log (it refuses when the last batch read files here, else the source reads its "
                    "folder as new); a moved or swapped source needs a new checkpoint",
                    log.path if log else None)
    return _row(f"source {sid} path", "compatible", "same folder", log.path if log else off_path)


def check(cp: Checkpoint, storage: Storage, new: NewQuery) -> dict[str, Any]:
    """The verdict per rule for restarting ``new`` from ``cp`` (``storage`` reads the schema
    files). Returns the ``streamwatch.compat/1`` document (without Spark's --verify answer)."""
    latest = cp.latest_offsets
    off_path = f"{cp.path.rstrip('/')}/offsets/{latest.batch_id}" if latest else None
    rows = [*_source_rows(cp, new, off_path), *_sink_rows(cp, new), *_state_rows(cp, storage, new)]
    if latest is not None:
        rows += _conf_rows(latest.conf, new, bool(cp.state), off_path)
    if new.query_name:
        rows.append(_row("query name", "compatible", "the query name is not stored in the checkpoint", None))
    worst = max((RANK[r["verdict"]] for r in rows), default=0)
    verdict = {0: "compatible", 1: "allowed", 3: "incompatible"}[worst]
    return {"schema": SCHEMA, "path": cp.path, "query_id": cp.query_id, "verdict": verdict, "rules": rows}


def _sink_rows(cp: Checkpoint, new: NewQuery) -> list[dict[str, Any]]:
    """The sink's kind and folder against the checkpoint's, and the file sink's output mode."""
    rows: list[dict[str, Any]] = []
    fmt = (new.sink_format or "").lower()
    if cp.sink is not None or cp.delta_sink is not None:
        old_kind = "file" if cp.sink is not None else "delta"
        new_kind = "file" if fmt in ("parquet", "json", "csv", "orc", "text") else fmt
        if new_kind != old_kind:
            rows.append(_row("sink kind", "allowed", f"sink changes from {old_kind} to {fmt}: the new sink starts without the old one's batches", cp.sink_path))
        elif not same_place(new.sink_path, cp.sink_path):  # ./ws/tables/x is /…/ws/tables/x
            rows.append(_row("sink path", "allowed", f"the sink moves to {new.sink_path}: a new _spark_metadata starts there, the old folder keeps what was written", cp.sink_path))
        else:
            rows.append(_row("sink path", "compatible", "same sink folder", cp.sink_path))
    if fmt in ("parquet", "json", "csv", "orc", "text") and new.output_mode != "append":
        rows.append(_row("output mode", "incompatible", f"the {fmt} file sink supports the append output mode only, not {new.output_mode}", None))
    return rows


def _state_rows(cp: Checkpoint, storage: Storage, new: NewQuery) -> list[dict[str, Any]]:
    """The stateful operators by name and position; when they match, per operator its key
    and value schema (``StateSchemaCompatibilityChecker``), watermark delay and output mode."""
    rows: list[dict[str, Any]] = []
    ops = list(cp.state)
    names_old = [op.name or "?" for op in ops]
    names_new = [o.name for o in new.operators]
    state_path = f"{cp.path.rstrip('/')}/state"
    if len(ops) != len(new.operators) or any(a not in ("?", b) for a, b in zip(names_old, names_new, strict=True)):
        return [_row("stateful operators", "incompatible",
                     f"the checkpoint has {names_old or 'no state'}, the query {names_new or 'no stateful operator'}", state_path)]
    if ops:
        rows.append(_row("stateful operators", "compatible", f"{names_new} on both sides", state_path))
    for op, no in zip(ops, new.operators, strict=True):
        docs, spath = _schema_of(storage, op.path, op.schema_files)
        for what, old_s, new_s in (("key", docs[0] if docs else None, no.key_schema), ("value", docs[1] if len(docs) > 1 else None, no.value_schema)):
            if old_s is None or new_s is None:
                continue
            if shape(old_s) == shape(new_s):
                rows.append(_row(f"state {op.operator_id} {what} schema", "compatible", _types(new_s), spath))
            else:
                rows.append(_row(f"state {op.operator_id} {what} schema", "incompatible",
                                 f"stored {_types(old_s)}, the query needs {_types(new_s)} (StateSchemaCompatibilityChecker)", spath))
        if docs and new.watermark_delays_ms:
            old_wm = _watermark_ms(docs[0])
            if old_wm is not None and old_wm not in new.watermark_delays_ms:
                rows.append(_row("watermark", "allowed",
                                 f"delay {old_wm} ms → {new.watermark_delays_ms[0]} ms: state is evicted by the new watermark from the next batch; late rows are cut off differently", spath))
        if op.output_mode and op.output_mode.lower() != new.output_mode:
            rows.append(_row("output mode", "allowed", f"state written in {op.output_mode} mode, the query uses {new.output_mode}", op.path))
    return rows


def _conf_rows(old_conf: Mapping[str, str], new: NewQuery, stateful: bool, off_path: str | None) -> list[dict[str, Any]]:
    """The confs Spark restores from the latest offsets (:data:`RESTORED_CONFS`) that the new
    query sets otherwise: the checkpoint's value wins (a stateless query's shuffle partitions
    do not matter)."""
    rows: list[dict[str, Any]] = []
    for key in RESTORED_CONFS:
        old_v, new_v = old_conf.get(key), new.conf.get(key)
        if old_v is None or new_v is None or old_v == new_v:
            continue
        if key == "spark.sql.shuffle.partitions" and not stateful:
            rows.append(_row(key, "compatible", f"{old_v} → {new_v}: stateless query (Spark still keeps the checkpoint's value)", off_path))
            continue
        rows.append(_row(key, "allowed", f"{old_v} → {new_v}: Spark restores the checkpoint's {old_v} for this query and ignores the new value", off_path))
    return rows

