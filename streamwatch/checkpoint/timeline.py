"""Per-batch timeline: offsets N / commit N / state version N+1 / sink entry N side by side."""

from __future__ import annotations

from streamwatch.model.checkpoint import BatchRow, Checkpoint


def batch_timeline(cp: Checkpoint) -> tuple[BatchRow, ...]:
    """One :class:`BatchRow` per batch id present in the offsets or commit log, ascending.

    ``state_version`` is True when every state operator holds version N+1 in every partition
    (None for a stateless query); ``sink_entry`` whether the file sink log holds batch N
    (None when no sink log is known); ``watermark_ms``/``timestamp_ms`` come from
    ``offsets/N`` (None when it was not parsed, e.g. in a summary read); state versions
    count in the partition layout in effect for them (after an offline repartition, the new
    one); ``files_read`` counts the files the file sources read in batch N — source-log
    batches after ``offsets/N-1``'s ``logOffset`` up to ``offsets/N``'s (a file source's log
    numbers its batches itself), None when either offsets entry is gone; ``repartition`` and
    ``unique_ids`` as in :class:`BatchRow`. O(batches + partitions × versions + file entries ×
    log(batches))."""
    offs = {e.batch_id: e for e in cp.offsets}
    off_ids = set(cp.offset_batch_ids) or set(offs)
    com_ids = set(cp.commit_batch_ids) or {c.batch_id for c in cp.commits}
    ids = sorted(off_ids | com_ids)
    state_sets = [set(cp.state_versions(op)) for op in cp.state] if cp.state else None
    reps = {r.batch_id: r for r in cp.repartitions}
    ids_by_batch = {m.batch_id: m for m in cp.unique_ids}
    sink = cp.sink
    sink_ids = set(sink.batch_ids) if sink is not None else set()
    sink_compact = sink.compact_batch_ids[-1] if sink is not None and sink.compact_batch_ids else -1
    files: dict[int, int] | None = None
    by_batch = cp.files_by_batch()
    if cp.sources and by_batch.entries_loaded:
        files = by_batch.counts()
    delta: dict[int, list[int]] | None = None
    if cp.delta_sink is not None:
        delta = {}
        for c in cp.delta_sink.commits:
            if c.txn_version is not None and (cp.query_id is None or c.txn_app_id in (None, cp.query_id)):
                delta.setdefault(c.txn_version, []).append(c.version)
    rows = []
    for b in ids:
        e = offs.get(b)
        rows.append(
            BatchRow(
                batch_id=b,
                has_offsets=b in off_ids,
                has_commit=b in com_ids,
                state_version=None if state_sets is None else all((b + 1) in s for s in state_sets),
                sink_entry=None if sink is None else (b in sink_ids or 0 <= b <= sink_compact),
                watermark_ms=e.watermark_ms if e else None,
                timestamp_ms=e.timestamp_ms if e else None,
                files_read=None if files is None or not by_batch.known(b) else files.get(b, 0),
                delta_versions=None if delta is None else tuple(delta.get(b, ())),
                repartition=reps.get(b),
                unique_ids=ids_by_batch.get(b),
            )
        )
    return tuple(rows)
