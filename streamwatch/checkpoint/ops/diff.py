"""``streamwatch diff``: what changed between two snapshots of one checkpoint (schema
``streamwatch.diff/1``).

Compares two :class:`~streamwatch.checkpoint.ops.snapshot.Snapshot` objects: batches planned
and purged, each source's offset movement (file-source log files added, Kafka offsets per
partition, rate/Delta/number fields), watermark movement (ms), conf keys added/removed/changed,
state versions and bytes per operator and partition, sink log entries added, findings that
appeared, cleared or changed (matched by code and subject, not by their text). :func:`at_batch` makes the snapshot of one checkpoint as of batch N, for
``--from-batch A --to-batch B``.

The document is plain JSON types; keys are stable within ``streamwatch.diff/1`` (new keys may
be added; renaming or removing one bumps the version). Sizes are bytes, times epoch ms.
"""

from __future__ import annotations

from typing import Any

from streamwatch.checkpoint.jsonout import iso, redact
from streamwatch.checkpoint.ops.paths import place, relative_to
from streamwatch.checkpoint.ops.snapshot import OperatorState, Snapshot, SourceState
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.sourcebatches import log_at

SCHEMA = "streamwatch.diff/1"


class BatchRangeError(StreamwatchError, ValueError):
    """``--from-batch``/``--to-batch`` name a batch whose ``offsets/N`` is not in the
    checkpoint, or A > B. Exit 2 (usage)."""

    exit_code = ExitCode.USAGE


def _span(a: int | None, b: int | None) -> list[int] | None:
    """Inclusive [a, b] when a <= b, else None."""
    return [a, b] if a is not None and b is not None and a <= b else None


def _num(v: Any) -> int | float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _source_change(old: SourceState | None, new: SourceState | None) -> dict[str, Any]:
    either = new or old
    assert either is not None, "a source is on at least one side"
    kind = either.kind
    doc: dict[str, Any] = {
        "id": either.source_id,
        "kind": kind,
        "old": old.raw if old else None,
        "new": new.raw if new else None,
        "changed": (old.raw if old else None) != (new.raw if new else None),
    }
    if old is None or new is None:
        doc["note"] = "source added" if old is None else "source removed"
        return doc
    if kind == "file" and old.kind is None and old.raw is None:  # no offset yet (``-``): nothing read
        old = SourceState(old.source_id, "file", None, {"logOffset": -1}, old.files, old.log_entries)
    if old.kind != new.kind:
        doc["note"] = f"kind changed {old.kind} → {new.kind}"
        return doc
    if kind == "file":
        lo, hi = _num(old.fields.get("logOffset")), _num(new.fields.get("logOffset"))
        doc["log_offset"] = {"old": lo, "new": hi}
        files = None
        if new.files is not None and lo is not None and hi is not None:
            files = sorted(p for p, b in new.files if lo < b <= hi)
        doc["files_added"] = len(files) if files is not None else None
        doc["files"] = files
        if files is None and old.log_entries is not None and new.log_entries is not None:
            doc["log_entries"] = {"old": old.log_entries, "new": new.log_entries}
    elif kind == "kafka":
        rows = []
        topics = sorted(set(old.fields) | set(new.fields))
        for t in topics:
            op, np_ = old.fields.get(t) or {}, new.fields.get(t) or {}
            if not isinstance(op, dict) or not isinstance(np_, dict):
                continue
            for p in sorted(set(op) | set(np_), key=lambda x: (len(str(x)), str(x))):
                a, b = _num(op.get(p)), _num(np_.get(p))
                rows.append({"topic": t, "partition": str(p), "old": a, "new": b, "delta": (b - a) if a is not None and b is not None else None})
        doc["partitions"] = rows
        doc["records"] = sum(r["delta"] for r in rows if r["delta"] is not None)
    else:
        fields = {}
        for k in sorted(set(old.fields) | set(new.fields)):
            a, b = old.fields.get(k), new.fields.get(k)
            if a == b:
                continue
            d: dict[str, Any] = {"old": a, "new": b}
            na, nb = _num(a), _num(b)
            if na is not None and nb is not None:
                d["delta"] = nb - na
            fields[k] = d
        doc["fields"] = fields
    return doc


def _state_change(old: OperatorState | None, new: OperatorState | None) -> dict[str, Any]:
    o = new or old
    assert o is not None
    doc: dict[str, Any] = {
        "operator_id": o.operator_id,
        "name": o.name,
        "versions": {"old": list(old.versions) if old and old.versions else None, "new": list(new.versions) if new and new.versions else None},
        "bytes": {"old": old.bytes if old else None, "new": new.bytes if new else None},
        "bytes_delta": (new.bytes - old.bytes) if old and new and old.bytes is not None and new.bytes is not None else None,
        "partitions": None,
    }
    if old and new and old.partitions is not None and new.partitions is not None:
        rows = []
        for key in sorted(set(old.partitions) | set(new.partitions)):
            ov, ob = old.partitions.get(key, (None, None))
            nv, nb = new.partitions.get(key, (None, None))
            if (ov, ob) == (nv, nb):
                continue
            rows.append({"partition": key[0], "store": key[1], "version": {"old": ov, "new": nv}, "bytes": {"old": ob, "new": nb}})
        doc["partitions"] = rows
    return doc


def diff(old: Snapshot, new: Snapshot) -> dict[str, Any]:
    """The ``streamwatch.diff/1`` document for OLD → NEW (see docs/ops.md, "Checkpoint
    operations")."""
    old_ops = {o.operator_id: o for o in old.state}
    new_ops = {o.operator_id: o for o in new.state}
    state = [_state_change(old_ops.get(i), new_ops.get(i)) for i in sorted(set(old_ops) | set(new_ops))]
    oc, nc = dict(old.conf), dict(new.conf)
    conf = {
        "added": {k: nc[k] for k in sorted(set(nc) - set(oc))},
        "removed": {k: oc[k] for k in sorted(set(oc) - set(nc))},
        "changed": {k: {"old": oc[k], "new": nc[k]} for k in sorted(set(oc) & set(nc)) if oc[k] != nc[k]},
    }
    appeared, cleared, changed_findings = _findings_change(old, new)
    wm_o, wm_n = old.watermark_ms, new.watermark_ms
    return {
        "schema": SCHEMA,
        "old": {"path": old.path, "origin": old.origin, "query_id": old.query_id},
        "new": {"path": new.path, "origin": new.origin, "query_id": new.query_id},
        "same_query": None if old.query_id is None or new.query_id is None else old.query_id == new.query_id,
        "batches": _batches_change(old, new),
        "sources": _sources_change(old, new),
        "watermark": {
            "old_ms": wm_o,
            "new_ms": wm_n,
            "old": iso(wm_o) if wm_o else None,
            "new": iso(wm_n) if wm_n else None,
            "moved_ms": (wm_n - wm_o) if wm_o is not None and wm_n is not None else None,
        },
        "conf": conf,
        "state": state,
        "sink": {
            "kind": new.sink_kind or old.sink_kind,
            "entries": {"old": old.sink_entries, "new": new.sink_entries},
            "files_added": _files_added(old, new),
            "delta_version": {"old": old.delta_version, "new": new.delta_version} if (old.delta_version, new.delta_version) != (None, None) else None,
        },
        "findings": {"appeared": appeared, "cleared": cleared, "changed": changed_findings},
    }


def _batches_change(old: Snapshot, new: Snapshot) -> dict[str, Any]:
    """Both ends of the logs, and the batch ids ``planned``, ``committed``, ``purged`` (gone
    from the start of the offsets log) and ``rolled_back`` (gone from its end) in between."""
    return {
        "old": {"first": old.first, "latest": old.latest, "last_committed": old.last_committed},
        "new": {"first": new.first, "latest": new.latest, "last_committed": new.last_committed},
        "planned": _span(None if old.latest is None else old.latest + 1, new.latest) if old.latest is not None else _span(new.first, new.latest),
        "committed": _span(None if old.last_committed is None else old.last_committed + 1, new.last_committed)
        if old.last_committed is not None
        else _span(new.first, new.last_committed),
        "purged": _span(old.first, min(old.latest if old.latest is not None else -1, (new.first if new.first is not None else 0) - 1)) if old.first is not None else None,
        "rolled_back": _span(None if new.latest is None else new.latest + 1, old.latest) if new.latest is not None else _span(old.first, old.latest),
    }


def _sources_change(old: Snapshot, new: Snapshot) -> list[dict[str, Any]]:
    """Each source's change, paired by source id when both sides' ids are unique (NEW's
    order, then those only OLD has), else by position."""
    old_by = {s.source_id: s for s in old.sources}
    new_by = {s.source_id: s for s in new.sources}
    if len(old_by) == len(old.sources) and len(new_by) == len(new.sources):
        # paired by id: an OffsetMap (offsets v2) writes its lines in Spark's map order, and a
        # named source (Spark 4.2+) keeps its name when others come or go
        ids = [s.source_id for s in new.sources] + [s.source_id for s in old.sources if s.source_id not in new_by]
        return [_source_change(old_by.get(i), new_by.get(i)) for i in ids]
    n_src = max(len(old.sources), len(new.sources))
    return [
        _source_change(old.sources[i] if i < len(old.sources) else None, new.sources[i] if i < len(new.sources) else None)
        for i in range(n_src)
    ]


def _files_added(old: Snapshot, new: Snapshot) -> list[str] | None:
    """The file sink's files NEW lists and OLD does not (by the batch ids after OLD's latest
    when OLD's files are not known); None when NEW's are not known, or neither way applies."""
    if new.sink_files is None:
        return None
    if old.sink_files is not None:
        before = {p for p, _ in old.sink_files}
        return sorted(p for p, _ in new.sink_files if p not in before)
    if old.latest is not None:
        return sorted(p for p, b in new.sink_files if b > old.latest)
    return None


Found = tuple[str, str, str, str | None]


def _finding(f: Found, subject: str | None = None) -> dict[str, Any]:
    return {"severity": f[0], "code": f[1], "message": f[2], "path": f[3], "subject": subject}


def _subject(snap: Snapshot, path: str | None) -> str | None:
    """What a finding is about, the same for two copies of one checkpoint: its file relative to
    the checkpoint (``offsets/3``) or to the sink folder (``sink:_spark_metadata/3``), else the
    file's place (:func:`~streamwatch.checkpoint.ops.paths.place`); None for the whole checkpoint."""
    if path is None:
        return None
    rel = relative_to(path, snap.path) or _within_store(path, snap.path)
    if rel is not None:
        return rel
    rel = (relative_to(path, snap.sink_path) or _within_store(path, snap.sink_path)) if snap.sink_path else None
    return f"sink:{rel}" if rel is not None else place(path)


def _within_store(path: str, url: str) -> str | None:
    """``path`` relative to the object-store folder ``url`` when ``path`` is that store's own
    path (the reader's findings on object storage carry fsspec paths: ``bucket/cp/state/0`` for
    ``gs://bucket/cp``; ``container/cp/…`` for ``abfss://container@account.dfs.core.windows.net/cp``),
    else None."""
    if "://" in path or "://" not in url:
        return None
    host, _, rest = url.split("://", 1)[1].partition("/")
    base = f"{host.split('@', 1)[0]}/{rest}".rstrip("/")
    p = path.rstrip("/")
    if p == base:
        return "."
    return p[len(base) + 1:] if p.startswith(base + "/") else None


def _detail(snap: Snapshot, f: Found) -> tuple[str, str]:
    """(severity, message) with the snapshot's own folders named generically: two copies of a
    checkpoint word the same finding with their own paths."""
    msg = f[2]
    names = {snap.path: "<checkpoint>", place(snap.path): "<checkpoint>"}
    if snap.sink_path:
        names |= {snap.sink_path: "<sink>", place(snap.sink_path): "<sink>"}
    for raw in sorted((n for n in names if n), key=len, reverse=True):
        msg = msg.replace(raw.rstrip("/"), names[raw])
    return f[0], msg


def _findings_change(old: Snapshot, new: Snapshot) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """(appeared, cleared, changed): findings matched by identity — code and subject (what
    :func:`_subject` says it is about) — not by their text, which names the folder it was read
    from and numbers that move; a matched finding whose severity or message (folders named
    generically) differs is ``changed``. Several findings of one identity pair by equal
    detail first, then in order."""
    groups: dict[tuple[str, str | None], tuple[list[Found], list[Found]]] = {}
    for side, snap in ((0, old), (1, new)):
        for f in snap.findings:
            groups.setdefault((f[1], _subject(snap, f[3])), ([], []))[side].append(f)
    appeared: list[dict[str, Any]] = []
    cleared: list[dict[str, Any]] = []
    changed_: list[dict[str, Any]] = []
    for (code, subject), (olds, news) in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        news = list(news)
        rest = []
        for o in olds:  # identical detail first: unchanged
            same = next((n for n in news if _detail(new, n) == _detail(old, o)), None)
            if same is None:
                rest.append(o)
            else:
                news.remove(same)
        for o, n in zip(rest, news, strict=False):  # the longer side's rest is cleared/appeared below
            changed_.append({"code": code, "subject": subject, "old": _finding(o, subject), "new": _finding(n, subject)})
        cleared += [_finding(o, subject) for o in rest[len(news):]]
        appeared += [_finding(n, subject) for n in news[len(rest):]]
    return appeared, cleared, changed_


def changed(doc: dict[str, Any]) -> bool:
    """Whether a diff document reports any change at all."""
    b = doc["batches"]
    return bool(
        b["planned"] or b["committed"] or b["purged"] or b["rolled_back"]
        or any(s["changed"] for s in doc["sources"])
        or doc["watermark"]["old_ms"] != doc["watermark"]["new_ms"]
        or any(doc["conf"].values())
        or any(s["bytes_delta"] or s["partitions"] or s["versions"]["old"] != s["versions"]["new"] for s in doc["state"])
        or doc["sink"]["files_added"]
        or doc["sink"]["entries"]["old"] != doc["sink"]["entries"]["new"]
        or doc["findings"]["appeared"] or doc["findings"]["cleared"] or doc["findings"].get("changed")
    )


def at_batch(cp: Checkpoint, batch_id: int) -> Snapshot:
    """The snapshot of ``cp`` (read with ``full=True``) as of batch ``batch_id``: offsets,
    watermark and conf from ``offsets/<batch_id>``, file-source entries up to its ``logOffset``
    (the source log's own batch ids), sink entries of batches up to it, state version
    ``batch_id + 1`` per partition (its bytes are not known: None).
    Findings are left out (they describe the folder, not a batch).

    Raises :class:`BatchRangeError` when ``offsets/<batch_id>`` is not in the checkpoint."""
    off = cp.offsets_for(batch_id)
    if off is None:
        known = f"{cp.offset_batch_ids[0]}–{cp.latest_batch_id}" if cp.offset_batch_ids else "none"
        raise BatchRangeError(f"batch {batch_id} has no offsets file in this checkpoint (offsets hold {known})")
    parsed = tuple(off.parsed) + (None,) * (len(off.sources) - len(off.parsed))
    sources = []
    for i, (sid, raw, p) in enumerate(zip(off.source_ids, off.sources, parsed, strict=True)):
        log = log_at(cp.sources, off, i)
        files = None
        if log is not None and log.entries_loaded:
            # the source log numbers its batches itself: batch_id had read up to its logOffset
            upto = p.log_offset if p is not None and p.kind == "file" else (-1 if p is None else None)
            if upto is not None:
                files = tuple((e.path, e.batch_id) for e in log.entries if e.batch_id <= upto)
        sources.append(SourceState(sid, p.kind if p else None, raw, dict(p.fields) if p else {}, files, len(files) if files is not None else None))
    ops = []
    v = batch_id + 1
    for op in cp.state:
        parts = {(p.partition_id, p.store_name): (v if v in p.versions else None, None) for p in op.partitions}
        have = [x for x in op.any_versions if x <= v]
        ops.append(OperatorState(op.operator_id, op.name, op.provider, (have[0], have[-1]) if have else None, None, parts))
    sink_files = None
    sink_entries = None
    if cp.sink is not None and cp.sink.entries_loaded:
        sink_files = tuple((e.path, e.batch_id) for e in cp.sink.live_files if e.batch_id <= batch_id)
        sink_entries = len(sink_files)
    committed = [b for b in cp.commit_batch_ids if b <= batch_id]
    return Snapshot(
        origin=f"batch {batch_id}",
        path=cp.path,
        query_id=cp.query_id,
        first=cp.offset_batch_ids[0] if cp.offset_batch_ids else None,
        latest=batch_id,
        last_committed=committed[-1] if committed else None,
        watermark_ms=off.watermark_ms,
        conf=redact(dict(off.conf)),
        sources=tuple(sources),
        state=tuple(ops),
        sink_kind="file" if cp.sink is not None else "delta" if cp.delta_sink is not None else None,
        sink_entries=sink_entries,
        sink_files=sink_files,
        delta_version=None,
        findings=(),
    )
