"""Per-batch input, output and state of one checkpoint, read with point look-ups
(:class:`~streamwatch.analysis.probe.Probe`): each call touches only the files batch N wrote.

* file source: ``sources/<i>/<L>`` (or ``<L>.compact``) for every log id the batch's
  ``{"logOffset": L}`` advanced over since the previous batch's (mirrors
  ``FileStreamSourceLog``: the source log numbers its batches itself, so batch N's log ids are
  not N); files not known (None) when ``offsets/N-1`` is gone;
* file sink: ``<sink>/_spark_metadata/<N>`` (or ``<N>.compact``; mirrors ``FileStreamSinkLog``);
* Delta sink: ``_delta_log/<version>.json`` commits after the last one seen, matched to the
  batch by their streaming ``txn`` (appId = query id, version = batch id);
* state: version N+1 of every partition's store (``N+1.delta``/``.snapshot`` for the
  HDFS-backed provider, ``N+1.zip``/``.changelog`` — with the v2 unique ids of
  ``commits/N`` when present — for RocksDB).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import orjson

from streamwatch.analysis.probe import FileStat, Probe, same_place
from streamwatch.analysis.records import BatchOutput, SourceInput, StateUsage
from streamwatch.checkpoint.delta import parse_delta_commit
from streamwatch.checkpoint.logs import MAX_FILE_LOG_VERSION, parse_commit, split_header
from streamwatch.model.batchlogs import OffsetLogEntry, SourceOffset
from streamwatch.model.deltalog import DeltaCommit
from streamwatch.model.statestore import StateOperator

#: Sink file paths remembered to tell a ``.compact`` file's new entries from older ones.
SEEN_PATHS = 200_000


def _json_lines(body: bytes) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in body.split(b"\n"):
        if line.strip():
            try:
                v = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(v, dict):
                out.append(v)
    return out


def _tail_of_batch(body: bytes, batch_id: int) -> list[dict[str, Any]]:
    """The lines of ``batch_id`` at the end of a file-source ``.compact`` file (entries are in
    batch order, so only the tail is parsed, not the whole history)."""
    out: list[dict[str, Any]] = []
    end = len(body)
    while end > 0:
        start = body.rfind(b"\n", 0, end) + 1
        line = body[start:end].strip()
        end = start - 1
        if not line:
            continue
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(row, dict) or row.get("batchId") != batch_id:
            break
        out.append(row)
    out.reverse()
    return out


def read_log_file(probe: Probe, folder: str, batch_id: int, *, tail_only: bool = False) -> tuple[list[dict[str, Any]], bool] | None:
    """Entries of a compactible log's batch ``batch_id`` (``N``, else ``N.compact``) and
    whether they came from a compact file; None when neither exists or is readable.
    ``tail_only``: from a compact file keep only the trailing lines whose ``batchId`` is
    ``batch_id`` (file-source logs)."""
    for name, compact in ((str(batch_id), False), (f"{batch_id}.compact", True)):
        path = probe.join(folder, name)
        data = probe.read(path)
        if data is None:
            continue
        version, body, _ = split_header(data, path, MAX_FILE_LOG_VERSION, name)
        if version is None:
            return None
        if compact and tail_only:
            return _tail_of_batch(body, batch_id), compact
        return _json_lines(body), compact
    return None


def _number(p: SourceOffset | None) -> int | None:
    """A numeric offset: LongOffset, rate-micro-batch ``offset``, or the sum of a rate
    source's per-partition ``value``s."""
    if p is None:
        return None
    if p.kind == "number":
        try:
            return int(p.raw)
        except ValueError:
            return None
    v = p.fields.get("offset")
    if isinstance(v, int):
        return v
    values = [d.get("value") for d in p.fields.values() if isinstance(d, dict)]
    ints = [x for x in values if isinstance(x, int)]
    return sum(ints) if values and len(ints) == len(values) else None


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class SourceReader:
    """Input of each batch (see module docstring). File sizes are looked up with one stat
    per input file (None when a file was moved or deleted)."""

    def __init__(self, probe: Probe, root: str, *, file_sizes: bool = True) -> None:
        self.probe = probe
        self.root = root
        self.file_sizes = file_sizes

    def inputs(self, entry: OffsetLogEntry, prev: OffsetLogEntry | None) -> tuple[SourceInput, ...]:
        """What each source of ``entry`` (``offsets/N``) read since ``prev`` (``offsets/N-1``,
        None when absent), in ``entry``'s line order. A source is matched across the two
        entries by its id (:meth:`OffsetLogEntry.source_id`: its name in offsets log v2, whose
        lines follow Spark's map order, else its index), never by line position."""
        out = []
        for i, p in enumerate(entry.parsed):
            sid = entry.source_id(i)
            at = prev.position(sid) if prev is not None else None
            q = prev.parsed[at] if prev is not None and at is not None and at < len(prev.parsed) else None
            if p is None:
                out.append(SourceInput(sid, "none"))
            elif p.kind == "file":
                out.append(self._file(entry, sid, p, q, prev is None))
            elif p.kind == "kafka":
                adv = None
                if q is not None and q.kind == "kafka":  # a partition new since: from offset 0
                    before = q.kafka_partitions
                    adv = {t: {str(k): v - int(before.get(t, {}).get(k, 0)) for k, v in parts.items() if isinstance(v, int)}
                           for t, parts in p.kafka_partitions.items()}
                out.append(SourceInput(sid, "kafka", offsets=adv, offset=p.summary()))
            elif p.kind == "delta":
                to = _int(p.fields.get("reservoirVersion"))
                frm = _int(q.fields.get("reservoirVersion")) if q is not None and q.kind == "delta" else to
                pos = p.delta_position
                out.append(SourceInput(sid, "delta", versions=(frm, to) if to is not None and frm is not None else None,
                                       offset=str(p.fields.get("reservoirId") or ""),
                                       position=pos[1:] if pos is not None else None))
            elif p.kind in ("rate", "number"):
                a, b = _number(p), _number(q)
                out.append(SourceInput(sid, p.kind, advanced=(a - b) if a is not None and b is not None else None,
                                       offset=p.summary()))
            else:
                out.append(SourceInput(sid, p.kind, offset=p.raw[:200]))
        return tuple(out)

    def _file(self, entry: OffsetLogEntry, sid: str, p: SourceOffset, q: SourceOffset | None,
              first: bool) -> SourceInput:
        last = p.log_offset
        before = q.log_offset if q is not None and q.kind == "file" else None
        if last is None:
            return SourceInput(sid, "file", offset=p.summary())
        if before is None:
            if (first and entry.batch_id == 0) or (not first and q is None):
                before = -1  # batch 0, or the source had no offset yet (``-``)
            else:  # offsets/N-1 is gone: which log ids N read is not known (the log counts itself)
                return SourceInput(sid, "file", offset=p.summary())
        folder = self.probe.join(self.root, "sources", sid)
        paths: list[str] = []
        mtimes: list[int] = []
        for log_id in range(before + 1, last + 1):
            got = read_log_file(self.probe, folder, log_id, tail_only=True)
            if got is None:
                continue
            rows, compact = got
            for r in rows:
                if compact and r.get("batchId") != log_id:
                    continue
                if isinstance(r.get("path"), str):
                    paths.append(r["path"])
                    mtimes.append(_int(r.get("timestamp")) or 0)
        size: int | None = None
        if self.file_sizes:
            stats = [self.probe.stat_url(u) for u in paths]
            size = None if any(s is None for s in stats) else sum(s.size for s in stats if s is not None)
        return SourceInput(sid, "file", files=len(paths), bytes=size, paths=tuple(paths),
                           offset=p.summary(), file_mtimes_ms=tuple(mtimes))


class FileSinkReader:
    """Files a file sink committed per batch, from ``<sink>/_spark_metadata``."""

    def __init__(self, probe: Probe, sink: str) -> None:
        self.probe = probe
        self.folder = probe.join(sink, "_spark_metadata")
        self._seen: OrderedDict[str, None] = OrderedDict()

    def output(self, batch_id: int, planned_at_ms: int | None) -> BatchOutput | None:
        got = read_log_file(self.probe, self.folder, batch_id)
        if got is None:
            return None
        rows, compact = got
        files: list[tuple[str, int]] = []
        floor = (planned_at_ms // 1000) * 1000 if planned_at_ms else None
        for r in rows:
            path = r.get("path")
            if r.get("action") != "add" or not isinstance(path, str):
                continue
            key = same_place(path)
            if compact and (key in self._seen or (floor is not None and (_int(r.get("modificationTime")) or 0) < floor)):
                continue
            files.append((path, _int(r.get("size")) or 0))
        for path, _ in files:
            self._seen[same_place(path)] = None
        while len(self._seen) > SEEN_PATHS:
            self._seen.popitem(last=False)
        return BatchOutput("file", len(files), sum(s for _, s in files), paths=tuple(p for p, _ in files),
                           sizes=tuple(s for _, s in files))


class DeltaSinkReader:
    """Delta versions a streaming Delta sink wrote per batch (``_delta_log`` commits whose
    ``txn`` names the query and the batch)."""

    def __init__(self, probe: Probe, table: str, query_id: str | None, history: int) -> None:
        self.probe = probe
        self.folder = probe.join(table, "_delta_log")
        self.query_id = query_id
        names = probe.names(self.folder) or []
        versions = sorted(int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit())
        self.next_version = max(0, versions[-1] - history) if versions else 0
        self.table_id = self._table_id(versions[0] if versions else None)
        self.commits: OrderedDict[int, DeltaCommit] = OrderedDict()

    def _table_id(self, version: int | None) -> str | None:
        if version is None:
            return None
        data = self.probe.read(self.probe.join(self.folder, f"{version:020d}.json"))
        for row in _json_lines(data or b""):
            meta = row.get("metaData")
            table_id = meta.get("id") if isinstance(meta, dict) else None
            if isinstance(table_id, str):
                return table_id
        return None

    def catch_up(self) -> None:
        """Read every commit after the last one read (one look-up past the end)."""
        while True:
            data = self.probe.read(self.probe.join(self.folder, f"{self.next_version:020d}.json"))
            if data is None:
                return
            c = parse_delta_commit(data, self.next_version)
            if c is not None:
                self.commits[c.version] = c
                if self.table_id is None:
                    self.table_id = self._table_id(c.version)
            while len(self.commits) > 10_000:
                self.commits.popitem(last=False)
            self.next_version += 1

    @property
    def latest_version(self) -> int | None:
        return self.next_version - 1 if self.next_version else None

    def output(self, batch_id: int) -> BatchOutput:
        self.catch_up()
        mine = [c for c in self.commits.values()
                if c.txn_version == batch_id and (self.query_id is None or c.txn_app_id in (None, self.query_id))]
        return BatchOutput("delta", sum(c.adds for c in mine), None, versions=tuple(c.version for c in mine))


class StateReader:
    """State files written for version N+1 per operator (see module docstring)."""

    def __init__(self, probe: Probe, operators: Iterable[StateOperator]) -> None:
        self.probe = probe
        self.folders: list[tuple[int, str, str, list[tuple[str, str]]]] = []
        for op in operators:
            parts = [(str(p.partition_id), probe.join(op.path, str(p.partition_id))
                      if p.store_name == "default" else probe.join(op.path, str(p.partition_id), p.store_name))
                     for p in op.partitions]
            self.folders.append((op.operator_id, op.path, op.provider, parts))

    def batch_usage(self, batch_id: int, entry: OffsetLogEntry | None, commit_path: str) -> tuple[StateUsage, ...]:
        """:meth:`usage` of batch ``batch_id``, the provider told by its ``offsets/N`` conf
        (``spark.sql.streaming.stateStore.providerClass``; HDFS-backed when not said) and, for
        RocksDB, the v2 unique ids of ``commits/N`` at ``commit_path`` (checkpoint format v2
        names RocksDB files by them)."""
        cls = entry.conf.get("spark.sql.streaming.stateStore.providerClass", "") if entry else ""
        if "RocksDB" not in cls:
            return self.usage(batch_id, "hdfs", None)
        c, _ = parse_commit(self.probe.read(commit_path) or b"", batch_id, commit_path)
        return self.usage(batch_id, "rocksdb", dict(c.state_unique_ids) if c is not None and c.state_unique_ids else None)

    def usage(self, batch_id: int, provider_hint: str | None, unique_ids: dict[str, Any] | None) -> tuple[StateUsage, ...]:
        v = batch_id + 1
        out = []
        for op_id, _path, provider, parts in self.folders:
            kind = provider if provider in ("hdfs", "rocksdb") else (provider_hint or "hdfs")
            files = size = 0
            ids = (unique_ids or {}).get(str(op_id)) if isinstance(unique_ids, dict) else None
            for pid, folder in parts:
                if kind == "rocksdb":
                    uids = ids.get(pid) if isinstance(ids, dict) else None
                    stems = [f"{v}_{u}" for u in uids] if isinstance(uids, list) and uids else [str(v)]
                    names = [f"{s}{ext}" for s in stems for ext in (".zip", ".changelog")]
                else:
                    names = [f"{v}.delta", f"{v}.snapshot"]
                for n in names:
                    st: FileStat | None = self.probe.stat(self.probe.join(folder, n))
                    if st is not None:
                        files += 1
                        size += st.size
            out.append(StateUsage(op_id, v, files, size))
        return tuple(out)
