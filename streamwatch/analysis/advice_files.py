"""The rule ``advise-max-files-per-trigger`` of :mod:`streamwatch.analysis.advice` (pure over model objects, no
I/O, no Spark): a file source's ``maxFilesPerTrigger`` against its
files per batch (the source log ``sources/<id>/``: one log batch per micro-batch that read
files from it) and its backlog (:class:`~streamwatch.analysis.records.SourceLag`). One huge
first batch (at least :data:`FIRST_BATCH_FACTOR` times the median files of the later
batches, or that many times their median batch time, and more files than the limit it
would advise) advises a limit; a backlog not
draining while every recent batch reads the same count (a limit that binds) advises raising
it. The source options are not in the checkpoint, so whether a limit is set is inferred:
the verdict is ``likely`` at most.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from streamwatch.analysis.advice import Advice, BatchDuration, Confidence, Evidence, Verdict, start_spacing_ms
from streamwatch.analysis.records import SourceLag
from streamwatch.model.checkpoint import Checkpoint, SourceLog
from streamwatch.model.sourcebatches import SourceBatches

#: A first batch reading this many times the later batches' median files (or taking this many
#: times their median batch time) is judged unbounded.
FIRST_BATCH_FACTOR = 10
#: The limit advised after a huge first batch: this many times what the later batches read —
#: room to drain the backlog while files keep landing (a limit equal to the arrival per batch
#: would never drain it).
FILES_HEADROOM = 2
#: Recent batches judged for a binding limit (each must read the same count).
LIMIT_BATCHES = 3
MAX_FILES = "maxFilesPerTrigger"


@dataclass(frozen=True, slots=True)
class _SourceBatchFiles:
    """One file source's files per micro-batch that read from it, from its log: ``log_ids``
    (the source log's batch ids, ascending: one per such micro-batch), ``files`` the count of
    each, ``query_ids`` the query batch that read each (None when its offsets are gone)."""

    log_ids: tuple[int, ...]
    files: tuple[int, ...]
    query_ids: tuple[int | None, ...]

    @classmethod
    def of(cls, log: SourceLog, batches: SourceBatches | None) -> _SourceBatchFiles:
        counts = Counter(e.batch_id for e in log.entries)
        ids = tuple(sorted(counts))
        qids = tuple(batches.query_batch(i) if batches is not None else None for i in ids)
        return cls(ids, tuple(counts[i] for i in ids), qids)

    def ms(self, durations: Mapping[int, int], k: int) -> int | None:
        q = self.query_ids[k]
        return None if q is None else durations.get(q)


def max_files_per_trigger(cp: Checkpoint, durations: Sequence[BatchDuration],
                          lags: Mapping[str, SourceLag] | None = None) -> tuple[Advice, ...]:
    """``advise-max-files-per-trigger`` (see the module docstring): one :class:`Advice` per
    file source of ``cp`` (its ``sources/<name>/`` log, entries read), or one ``unknown`` when
    it has none. ``durations``: batch times (ms) by query batch id; ``lags``: each source's
    :class:`SourceLag` by source name (its backlog; absent: not listed)."""
    code = "advise-max-files-per-trigger"
    if not cp.sources:
        return (Advice(code, MAX_FILES, Verdict.UNKNOWN, Confidence.UNKNOWN,
                       "no file source log (sources/<id>/) in the checkpoint: the rule judges file sources only",
                       needs="a file source: its log sources/<id>/ names the files of every micro-batch"),)
    fb = cp.files_by_batch()
    ms = {d.batch_id: d.ms for d in durations}
    return tuple(_files_advice(code, log, _SourceBatchFiles.of(log, fb.batches_of(log.name)), ms,
                               (lags or {}).get(log.name), start_spacing_ms(cp)) for log in cp.sources)


def _files_advice(code: str, log: SourceLog, sb: _SourceBatchFiles, ms: Mapping[int, int],
                  lag: SourceLag | None, interval_ms: int | None) -> Advice:
    where = f"sources/{log.name} log"
    setting = f"{MAX_FILES} (source {log.name})"
    if not log.entries_loaded or len(sb.log_ids) < 2:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{len(sb.log_ids)} micro-batch(es) read files from source {log.name}: nothing to compare",
                      tuple(Evidence(f"files read by log batch {i}", n, "files", where)
                            for i, n in zip(sb.log_ids, sb.files, strict=True)),
                      needs="at least two micro-batches that read files from the source (its log sources/<id>/)")
    first, later = sb.files[0], sb.files[1:]
    med = statistics.median(later)
    ev: tuple[Evidence, ...] = (Evidence("files read by the first batch", first, "files", f"{where} batch {sb.log_ids[0]}"),
                                Evidence("median files of the later batches", med, "files",
                                         f"{len(later)} batches, {where}"))
    first_ms = sb.ms(ms, 0)
    later_ms = [t for k in range(1, len(sb.files)) if (t := sb.ms(ms, k)) is not None]
    if first_ms is not None and later_ms:
        ev += (Evidence("first batch time", first_ms, "ms", "query batch " + str(sb.query_ids[0])),
               Evidence("median batch time of the later batches", int(statistics.median(later_ms)), "ms",
                        f"{len(later_ms)} batches"))
    slow = first_ms is not None and bool(later_ms) and first_ms >= FIRST_BATCH_FACTOR * statistics.median(later_ms)
    target = max(1, math.ceil(FILES_HEADROOM * med))
    # a limit at or above what the first batch read changes nothing: a first batch slow for
    # its JVM warm-up alone (codegen, class loading) is not judged huge
    if first > target and (first >= FIRST_BATCH_FACTOR * med or slow):
        return Advice(code, setting, Verdict.CHANGE, Confidence.LIKELY,
                      f"the first batch read {first:,} files, the later ones {med:,.0f} (median): likely no "
                      f"{MAX_FILES} on source {log.name} (the source options are not in the checkpoint)", ev,
                      f"set .option(\"{MAX_FILES}\", {target}) on the source ({FILES_HEADROOM}× what the later "
                      "batches read: room to drain a backlog while files keep landing); it applies on restart, "
                      "the checkpoint kept",
                      f"a backlog is read {target} files a batch instead of all at once: first results after one "
                      f"batch of {target} files, every batch bounded to about that; the whole backlog takes more "
                      "batches, each with its fixed cost, so it drains later (measured: docs/advise.md)",
                      target=target)
    return _backlog_advice(code, setting, sb, ev, lag, interval_ms)


def _backlog_advice(code: str, setting: str, sb: _SourceBatchFiles, ev: tuple[Evidence, ...],
                    lag: SourceLag | None, interval_ms: int | None) -> Advice:
    """Verdict (b): the backlog against the recent batches' counts (the first batch was not huge)."""
    if lag is None or lag.backlog is None or lag.catching_up is None:
        why = lag.reason if lag is not None and lag.reason else "no recent committed batch to measure by"
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"the first batch was not huge; the backlog is unknown ({why})", ev,
                      needs="the source's folder listed from here (the backlog) and recent committed batches")
    ev += (Evidence("backlog", lag.backlog, "files", "source folder listing − the source log"),)
    if lag.arrival_per_s is not None and lag.processed_per_s is not None and lag.window_from_ms is not None:
        span_s = (lag.at_ms - lag.window_from_ms) / 1000
        since = f"in the {span_s:,.0f} s since the first of the recent batches was planned"
        ev += (Evidence("files landed", round(lag.arrival_per_s * span_s), "files", since),
               Evidence("files read", round(lag.processed_per_s * span_s), "files", since))
    if lag.catching_up:
        return Advice(code, setting, Verdict.KEEP, Confidence.MEASURED,
                      f"the first batch was not huge and the backlog ({lag.backlog:,} files) drains", ev)
    recent = sb.files[-LIMIT_BATCHES:]
    bound = len(sb.files) > LIMIT_BATCHES and len(set(recent)) == 1 and lag.backlog >= recent[0]
    if not bound or lag.arrival_per_s is None or interval_ms is None:
        return Advice(code, setting, Verdict.KEEP, Confidence.LIKELY,
                      f"the backlog ({lag.backlog:,} files) is not draining, but the recent batches read "
                      f"{', '.join(map(str, recent))} files: no file limit binds them (look at the batch time)", ev)
    limit = recent[0]
    per_batch = lag.arrival_per_s * interval_ms / 1000
    target = max(limit + 1, math.ceil(FILES_HEADROOM * per_batch))
    ev += (Evidence("batch interval", interval_ms, "ms", "median gap of offsets/N batchTimestampMs"),)
    return Advice(code, setting, Verdict.CHANGE, Confidence.LIKELY,
                  f"the backlog ({lag.backlog:,} files) is not draining while each of the last {LIMIT_BATCHES} "
                  f"batches read exactly {limit} files: likely {MAX_FILES}={limit}", ev,
                  f"raise .option(\"{MAX_FILES}\", {target}) on the source ({FILES_HEADROOM}× the "
                  f"{per_batch:,.1f} files landing a batch interval); it applies on restart, the checkpoint kept",
                  f"each batch reads up to {target} files, more than land in a batch interval: the backlog drains "
                  "(bigger batches take longer: watch the batch time)",
                  target=target)
