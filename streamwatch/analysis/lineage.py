"""A landed file's journey through every layer, from checkpoints and sink logs alone.

Given a run plan (queries, their checkpoints and tables, the medallion DAG, landing folders —
see :func:`streamwatch.pipeline.plan_run`) and a file, :func:`file_journey` follows it:

* the bronze query's file source log (``sources/<id>/``, mirrors ``FileStreamSourceLog``) names
  the source's own log batch that listed the file; the query batch N that read it is the one
  whose ``offsets/N`` ``logOffset`` first reached that log batch (the log numbers its batches
  itself; unknown when the offsets that would tell are gone); ``offsets/N`` gives when N was
  planned, ``commits/N`` whether it committed;
* the file sink log of bronze's table (``_spark_metadata/``, mirrors ``FileStreamSinkLog``)
  names the part files batch N wrote (after a compaction, ``N.compact`` keeps no batch ids: a
  file then belongs to the latest batch planned before its modification time), or the Delta
  log the versions whose streaming ``txn`` is batch N;
* a downstream query's file source log names the batches that read those part files (a Delta
  source: the batches whose offsets range covers those versions), and so on along the DAG.

A layer that filters rows out (cancelled flights, late rows, malformed lines) still reads the
upstream files, so the journey goes on; where the tables carry a source-file column
(``_source_file``, the quarantine table's ``source_file``) the rows of the file in each hop's
output are counted (Parquet read with pyarrow), which says where filtered rows went.
Read-only: nothing under a checkpoint or table is written.
"""

from __future__ import annotations

import os
import posixpath
from collections import defaultdict
from urllib.parse import unquote, urlparse

from streamwatch.checkpoint import CheckpointError, read_checkpoint
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.checkpoint import Checkpoint, FilesByBatch, SinkFileEntry
from streamwatch.model.lineage import Hop, Journey, Step
from streamwatch.model.runtime import QueryPlan, RunPlan

#: columns that name the landing file a row came from (bronze/silver, quarantine)
SOURCE_FILE_COLUMNS = ("_source_file", "source_file")


class LineageError(StreamwatchError):
    """The file is not known to any query of the pipeline (one-line message). Exit 1: nothing
    to show, as ``streamwatch lineage`` says."""

    exit_code = ExitCode.WARNINGS


def norm_path(uri: str) -> str:
    """``file:///a/b%20c`` / ``file:/a/b`` / ``/a/b`` → ``/a/b c`` (other schemes unchanged)."""
    if uri.startswith("file:"):
        return unquote(urlparse(uri).path)
    if "://" in uri:
        return uri
    return os.path.abspath(uri)


def _read(q: QueryPlan) -> Checkpoint | None:
    if not os.path.isdir(q.checkpoint):
        return None
    try:
        return read_checkpoint(q.checkpoint, sink=q.table if q.table and os.path.isdir(q.table) else None)
    except CheckpointError:
        return None


def _sink_files_by_batch(cp: Checkpoint) -> dict[int, list[SinkFileEntry]]:
    """Batch id → part files it wrote (file sink log)."""
    out: dict[int, list[SinkFileEntry]] = defaultdict(list)
    if cp.sink is None:
        return out
    planned = sorted((e.timestamp_ms, e.batch_id) for e in cp.offsets if e.timestamp_ms is not None)
    compact = set(cp.sink.compact_batch_ids)
    for e in cp.sink.live_files:
        b = e.batch_id
        if b in compact:  # a compaction folds earlier batches in: place the file by time
            earlier = [bid for ts, bid in planned if ts <= e.modification_time_ms]
            b = earlier[-1] if earlier else b
        out[b].append(e)
    return out


def _hop_out(cp: Checkpoint, batch_id: int, by_batch: dict[int, list[SinkFileEntry]]) -> tuple[tuple[str, ...], int | None]:
    """(files or Delta versions written by ``batch_id``, when they were there in epoch ms)."""
    if cp.delta_sink is not None:
        versions = cp.delta_sink.versions_for_batch(batch_id, cp.query_id)
        times = [c.timestamp_ms for c in cp.delta_sink.commits if c.version in versions and c.timestamp_ms is not None]
        return tuple(f"delta v{v}" for v in versions), (max(times) if times else None)
    files = by_batch.get(batch_id, [])
    return tuple(e.path for e in files), (max(e.modification_time_ms for e in files) if files else None)


def _batch_times(cp: Checkpoint, batch_id: int) -> tuple[int | None, bool]:
    entry = cp.offsets_for(batch_id)
    return (entry.timestamp_ms if entry else None), batch_id in set(cp.commit_batch_ids)


def _count_rows(file: str, wrote: tuple[str, ...]) -> int | None:
    """Rows in the Parquet files ``wrote`` whose source-file column names ``file``; None when
    no file has such a column or pyarrow cannot read them."""
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return None
    target, total, known = norm_path(file), 0, False
    for path in wrote:
        if path.startswith("delta v"):
            return None
        try:
            names = pq.read_schema(norm_path(path)).names
            col = next((c for c in SOURCE_FILE_COLUMNS if c in names), None)
            if col is None:
                continue
            values = pq.read_table(norm_path(path), columns=[col]).column(0).to_pylist()
        except (OSError, ValueError):
            continue
        known = True
        total += sum(1 for v in values if v is not None and norm_path(v) == target)
    return total if known else None


def _committed_log_batch(cp: Checkpoint, fb: FilesByBatch, source: str, log_batch_id: int) -> bool:
    """Whether source-log batch ``log_batch_id`` of ``sources/<source>/`` (its folder name) is
    at or below the ``logOffset`` of the last committed batch (so committed, whichever batch
    read it)."""
    last = cp.last_committed_batch_id
    m = fb.batches_of(source)
    lo = None if last is None or m is None else m.read_up_to(last)
    return lo is not None and log_batch_id <= lo


def _root_hops(q: QueryPlan, cp: Checkpoint, file: str, rows: bool) -> tuple[list[Hop], str | None, int | None]:
    """Hops of a landing-reading query for ``file`` (matched by path, else by file name, so an
    archived file — ``cleanSource=archive`` — or a bare name is found); the logged path and
    its modification time. The query batch that read it comes from the offsets' ``logOffset``
    (the source log numbers its batches itself); a hop with batch None when that is not known
    (its offsets are gone)."""
    target = norm_path(file)
    fb = cp.files_by_batch()
    mapped = fb.query_batches()
    entries = [(i, e, b) for i, e, b in mapped if norm_path(e.path) == target]
    if not entries:
        name = posixpath.basename(target)
        entries = [(i, e, b) for i, e, b in mapped if posixpath.basename(norm_path(e.path)) == name]
    if not entries:
        return [], None, None
    by_batch = _sink_files_by_batch(cp)
    hops = []
    first = entries[0][1]
    for b in sorted({b for _, _, b in entries if b is not None}):
        planned, committed = _batch_times(cp, b)
        wrote, written = _hop_out(cp, b, by_batch)
        hops.append(Hop(q.query_name, b, planned, committed, written, (first.path,), wrote,
                        _count_rows(first.path, wrote) if rows else None))
    unknown = [(i, e) for i, e, b in entries if b is None]
    if unknown:
        committed = all(_committed_log_batch(cp, fb, i, e.batch_id) for i, e in unknown)
        hops.append(Hop(q.query_name, None, None, committed, None, (unknown[0][1].path,)))
    return hops, first.path, first.timestamp_ms


def _delta_batches(cp: Checkpoint, versions: set[int], source_index: int) -> dict[int, set[int]]:
    """Batch id → upstream Delta versions it read, from the Delta source offsets (mirrors
    ``DeltaSourceOffset``: reservoirVersion + index, index -1 = the version not yet started).
    The source is found by its id ``source_index`` (an ``OffsetMap``'s lines follow Spark's map
    order, not the query's); a named source (Spark 4.2+) has no index, so it is not matched."""
    out: dict[int, set[int]] = defaultdict(set)
    prev: tuple[int, int] | None = None
    for entry in cp.offsets:
        pos = entry.position(source_index)
        o = entry.parsed[pos] if pos is not None and pos < len(entry.parsed) else None
        if o is None or o.kind != "delta":
            continue
        rv, idx = o.fields.get("reservoirVersion"), o.fields.get("index", -1)
        if not isinstance(rv, int) or not isinstance(idx, int):
            continue
        end = (rv, idx)
        for v in versions:
            starting = prev is None and o.fields.get("isStartingVersion")
            read_v = (starting and v <= rv) or ((prev is None or prev < (v + 1, -1)) and end > (v, -1))
            if read_v and prev != end:
                out[entry.batch_id].add(v)
        prev = end
    return out


def _downstream_hops(q: QueryPlan, cp: Checkpoint, carried: dict[str, list[Hop]], file: str, rows: bool) -> list[Hop]:
    by_batch = _sink_files_by_batch(cp)
    read: dict[int, set[str]] = defaultdict(set)
    files = {norm_path(p): p for up in q.upstream for h in carried.get(up, []) for p in h.wrote if not p.startswith("delta v")}
    unknown: list[tuple[str, str, int]] = []
    fb = cp.files_by_batch()
    for source, e, b in fb.query_batches():  # source-log batch → query batch
        if norm_path(e.path) in files:
            if b is None:
                unknown.append((source, e.path, e.batch_id))
            else:
                read[b].add(e.path)
    for i, up in enumerate(q.upstream):  # Delta upstreams: source i reads upstream i
        versions = {int(p.split("v", 1)[1]) for h in carried.get(up, []) for p in h.wrote if p.startswith("delta v")}
        if versions:
            for b, vs in _delta_batches(cp, versions, i).items():
                read[b] |= {f"delta v{v}" for v in vs}
    hops = []
    for b in sorted(read):
        planned, committed = _batch_times(cp, b)
        wrote, written = _hop_out(cp, b, by_batch)
        hops.append(Hop(q.query_name, b, planned, committed, written, tuple(sorted(read[b])), wrote,
                        _count_rows(file, wrote) if rows else None))
    if unknown:
        committed = all(_committed_log_batch(cp, fb, i, lb) for i, _, lb in unknown)
        hops.append(Hop(q.query_name, None, None, committed, None, tuple(sorted({p for _, p, _ in unknown}))))
    return hops


def _note(q: QueryPlan, hops: list[Hop], upstream_rows: int | None) -> str | None:
    got = [h.rows for h in hops if h.rows is not None]
    n = sum(got) if got else None
    if "quarantine" in q.layer and n is not None:
        return f"{n} malformed row{'s' * (n != 1)} of this file → table {posixpath.basename(q.table) or q.layer}"
    if n is not None and upstream_rows is not None and n < upstream_rows:
        return f"{n} of {upstream_rows} rows carried on ({upstream_rows - n} filtered out by this layer)"
    return None


def file_journey(plan: RunPlan, file: str, *, rows: bool = True) -> Journey:
    """The journey of ``file`` (a landing path, an archived path or a bare file name) through
    the queries of ``plan`` (in their topological order). ``rows`` counts the file's rows in
    each hop's output where a source-file column tells. Raises :class:`LineageError` when no
    landing-reading query has read the file (not landed, or not processed yet)."""
    steps: list[Step] = []
    carried: dict[str, list[Hop]] = {}
    step_rows: dict[str, int | None] = {}
    logged, landed = None, None
    for q in plan.queries:
        cp = _read(q)
        hops: list[Hop] = []
        note = None
        if cp is None:
            note = "no checkpoint yet"
        elif q.landing:
            hops, path, mtime = _root_hops(q, cp, file, rows)
            if path is not None and logged is None:
                logged, landed = path, mtime
            if not hops:
                note = "did not read this file"
        else:
            hops = _downstream_hops(q, cp, carried, logged or file, rows)
            if not hops:
                reached_up = [u for u in q.upstream if carried.get(u)]
                note = "not read yet" if reached_up else None
        carried[q.query_name] = hops
        got = [h.rows for h in hops if h.rows is not None]
        step_rows[q.query_name] = sum(got) if got else None
        ups = [n for u in q.upstream if (n := step_rows.get(u)) is not None]
        if hops:
            note = _note(q, hops, sum(ups) if len(ups) == 1 else None)
        steps.append(Step(q.query_name, q.layer, q.table, q.upstream, tuple(hops), note))
    if logged is None:
        roots = ", ".join(q.query_name for q in plan.queries if q.landing)
        raise LineageError(f"{file}: not read by any landing query of pipeline {plan.pipeline} ({roots}): "
                           "not landed there, or not processed yet")
    source = next((name for name, folder in plan.landing
                   if norm_path(logged).startswith(norm_path(folder).rstrip("/") + "/")), "?")
    return Journey(plan.pipeline, logged, source, landed, tuple(steps))
