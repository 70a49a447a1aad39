"""Tuning advice measured on the job itself: one :class:`Advice` per rule (per file source
for a file-source rule), pure over model objects (a
:class:`~streamwatch.model.checkpoint.Checkpoint`, the progress events of a recording or
event log, the cores available, the batch durations measured from the checkpoint and the
file sources' backlog measured by :mod:`streamwatch.analysis.lag`). No I/O, no Spark.

Each rule names the setting, its evidence (numbers with units and where each came from), the
expected effect and how sure it is (:class:`Confidence`): ``measured`` when every number the
verdict rests on was read off this job, ``likely`` when the verdict holds but its cost could
not be measured here (or it rests on a setting the checkpoint does not hold, inferred from
what the batches did), ``unknown`` when evidence is missing — the advice then says what it
needs (``needs``) and gives no verdict.

Rules (codes documented in docs/advise.md):

* ``advise-shuffle-partitions`` — the state partitions of a stateful query (its
  ``spark.sql.shuffle.partitions``, fixed by the checkpoint: Spark restores the value from
  ``offsets/N`` on every restart, ``OffsetSeqMetadata.relevantSQLConfs``) far above the cores
  that run them: every micro-batch runs one task per state partition in each stateful stage,
  and each task loads and commits a state store version whether or not it has rows.
* ``advise-max-files-per-trigger`` — a file source's ``maxFilesPerTrigger`` against its
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

import enum
import math
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamwatch.analysis.records import SourceLag
from streamwatch.model.checkpoint import Checkpoint, SourceLog
from streamwatch.model.events import QueryProgress
from streamwatch.model.sourcebatches import SourceBatches

#: A stateful query is flagged when its state partitions exceed this many per core.
OVER_PER_CORE = 4
#: The partition count advised: this many per core (a task per core in flight, one queued).
TARGET_PER_CORE = 2
#: File modification times are coarser than Spark's clock on some file systems (ms).
MTIME_SLACK_MS = 1_000
SHUFFLE_CONF = "spark.sql.shuffle.partitions"
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
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


class Confidence(str, enum.Enum):
    """How sure an :class:`Advice` is (see the module docstring)."""

    MEASURED = "measured"
    LIKELY = "likely"
    UNKNOWN = "unknown"


class Verdict(str, enum.Enum):
    """What an :class:`Advice` says: ``change`` the setting, ``keep`` it, or ``unknown``
    (evidence missing: no verdict)."""

    CHANGE = "change"
    KEEP = "keep"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One number an advice rests on: ``what`` it is, its ``value`` and ``unit``
    (``partitions``, ``cores``, ``ms``, ``batches``), and ``source``, where it was read
    (``offsets/2 conf``, ``state/0 partition folders``, ``os.cpu_count()``…)."""

    what: str
    value: int | float
    unit: str
    source: str

    @property
    def text(self) -> str:
        v = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:,.0f}"
        return f"{self.what}: {v} {self.unit} ({self.source})"

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "value": self.value, "unit": self.unit, "source": self.source}


@dataclass(frozen=True, slots=True)
class Advice:
    """One rule's finding: its stable ``code``, the ``setting`` it is about, the ``verdict``,
    ``confidence``, ``evidence``, ``action`` (what to do; None unless the verdict is change),
    ``effect`` (what the change is expected to do) and ``needs`` (the evidence missing when
    the verdict is unknown). ``target`` is the advised value when there is one."""

    code: str
    setting: str
    verdict: Verdict
    confidence: Confidence
    summary: str
    evidence: tuple[Evidence, ...] = ()
    action: str | None = None
    effect: str | None = None
    needs: str | None = None
    target: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "setting": self.setting, "verdict": self.verdict.value,
                "confidence": self.confidence.value, "summary": self.summary,
                "evidence": [e.to_dict() for e in self.evidence], "action": self.action,
                "effect": self.effect, "needs": self.needs, "target": self.target}


@dataclass(frozen=True, slots=True)
class Cores:
    """The cores that run the query's tasks: ``count`` and where it came from (``--cores``,
    ``os.cpu_count() on this machine``); ``count`` None when unknown."""

    count: int | None
    source: str


@dataclass(frozen=True, slots=True)
class BatchDuration:
    """How long micro-batch ``batch_id`` took, in ms, and how it was measured (``source``)."""

    batch_id: int
    ms: int
    source: str


def checkpoint_durations(cp: Checkpoint, commit_mtimes_ms: Mapping[int, int]) -> tuple[BatchDuration, ...]:
    """Per committed batch: ``commits/N``'s modification time (epoch ms, as the storage
    reports it) minus ``offsets/N``'s ``batchTimestampMs`` — the time from planning the batch
    to committing it. Batches written by offline repartition (they read no input) are left out.

    Spark plans batch N+1 (and stamps its ``batchTimestampMs``) only after committing batch N,
    so a commit modified later than the next batch's plan (beyond :data:`MTIME_SLACK_MS`), or
    before its own, means the modification times are not Spark's (a copied or restored
    checkpoint): then none is used and the result is empty."""
    skip = {r.batch_id for r in cp.repartitions}
    planned = {e.batch_id: e.timestamp_ms for e in cp.offsets if e.timestamp_ms is not None}
    out = []
    for b, start in sorted(planned.items()):
        done = commit_mtimes_ms.get(b)
        if done is None:
            continue
        after = planned.get(b + 1)
        if done < start or (after is not None and done > after + MTIME_SLACK_MS):
            return ()
        if b not in skip:
            out.append(BatchDuration(b, done - start, "commits/N mtime − offsets/N batchTimestampMs"))
    return tuple(out)


def progress_durations(progress: Sequence[QueryProgress]) -> tuple[BatchDuration, ...]:
    """Per progress event: ``durationMs.triggerExecution`` (ms), Spark's own batch time."""
    return tuple(BatchDuration(p.batch_id, p.duration_ms["triggerExecution"], "progress durationMs.triggerExecution")
                 for p in progress if "triggerExecution" in p.duration_ms)


@dataclass(frozen=True, slots=True)
class _Partitions:
    """The stateful query's partition count as the checkpoint and the progress tell it."""

    conf: Evidence | None
    state: Evidence | None
    reported: Evidence | None
    provider: str

    @property
    def count(self) -> int | None:
        for e in (self.state, self.reported, self.conf):
            if e is not None:
                return int(e.value)
        return None


def _partitions(cp: Checkpoint | None, progress: Sequence[QueryProgress]) -> _Partitions:
    conf = state = reported = None
    provider = "unknown"
    if cp is not None and cp.offsets:
        last = cp.offsets[-1]
        raw = last.conf.get(SHUFFLE_CONF)
        if raw is not None and raw.isdecimal():
            conf = Evidence(SHUFFLE_CONF, int(raw), "partitions", f"offsets/{last.batch_id} conf")
        provider = _provider_name(last.conf.get(PROVIDER_CONF))
    if cp is not None and cp.state:
        op = max(cp.state, key=lambda o: o.num_partitions)
        n = cp.repartitions[-1].to_partitions if cp.repartitions else op.num_partitions
        if n:
            state = Evidence("state partitions", n, "partitions", f"state/{op.operator_id} partition folders")
        provider = op.provider if op.provider != "unknown" else provider
    ops = next((p.state_operators for p in reversed(progress) if p.state_operators), ())
    if ops:
        n = max(o.num_shuffle_partitions for o in ops)
        reported = Evidence("numShufflePartitions", n, "partitions", "progress stateOperators")
    return _Partitions(conf, state, reported, provider)


def _provider_name(cls: str | None) -> str:
    if not cls:
        return "unknown"
    low = cls.lower()
    return "rocksdb" if "rocksdb" in low else "hdfs" if "hdfsbacked" in low else "unknown"


def shuffle_partitions(cp: Checkpoint | None, progress: Sequence[QueryProgress], cores: Cores,
                       durations: Sequence[BatchDuration]) -> Advice:
    """``advise-shuffle-partitions`` (see the module docstring). ``cp`` and ``progress`` may
    each be missing; ``durations`` are the batch times measured (:func:`checkpoint_durations`,
    :func:`progress_durations`). Verdict change when the state partitions exceed
    :data:`OVER_PER_CORE` per core, advising :data:`TARGET_PER_CORE` per core."""
    code, setting = "advise-shuffle-partitions", SHUFFLE_CONF
    parts = _partitions(cp, progress)
    stateful = parts.state is not None or parts.reported is not None
    evidence = tuple(e for e in (parts.conf, parts.state, parts.reported) if e is not None)
    if not stateful:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      "no state operator found: the rule judges stateful queries only", evidence,
                      needs="a stateful query: state/ folders in the checkpoint or stateOperators in the "
                            "recording's progress (a stateless query's shuffle cost is not measured by this rule)")
    n = parts.count
    assert n is not None
    if cores.count is None:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{n} state partitions; the cores that run them are unknown", evidence,
                      needs="the cores of the executors: pass --cores N")
    evidence += (Evidence("cores", cores.count, "cores", cores.source),)
    if durations:
        med = int(statistics.median(d.ms for d in durations))
        evidence += (Evidence("median batch time", med, "ms", f"{len(durations)} batches, {durations[0].source}"),)
    waves = -(-n // cores.count)
    if n <= OVER_PER_CORE * cores.count:
        return Advice(code, setting, Verdict.KEEP, Confidence.MEASURED if durations else Confidence.LIKELY,
                      f"{n} state partitions on {cores.count} cores ({waves} task waves a stateful stage): in range",
                      evidence)
    target = max(1, TARGET_PER_CORE * cores.count)
    return Advice(code, setting, Verdict.CHANGE, Confidence.MEASURED if durations else Confidence.LIKELY,
                  f"{n} state partitions on {cores.count} cores: {waves} task waves in every stateful stage "
                  f"of every micro-batch", evidence, _action(cp, parts.provider, target),
                  f"{n} → {target} state store tasks a stateful stage per batch ({waves} → "
                  f"{-(-target // cores.count)} waves); each task loads and commits a state store version, "
                  "rows or not, so the batch time falls (measured gain: docs/advise.md)"
                  + ("" if durations else "; this job's batch time is not known here (no commit times or "
                     "progress): the gain on it is not measured"),
                  target=target)


def _action(cp: Checkpoint | None, provider: str, target: int) -> str:
    where = cp.path if cp is not None else "<checkpoint>"
    fixed = (f"setting {SHUFFLE_CONF} in the session does nothing for this checkpoint: Spark restores the "
             "value from its offsets log on every restart. ")
    repartition = (f"Stop the query, then (Spark 4.2+, RocksDB state store only) "
                   f"spark._streamingCheckpointManager.repartition({where!r}, {target}) and restart it")
    fresh = (f"or start the query on a new checkpoint with {SHUFFLE_CONF}={target} "
             "(its state starts empty and its sources start from their starting options)")
    if provider == "hdfs":
        return (fixed + "Offline repartition does not support the HDFS-backed state store "
                f"(StateRepartitionUnsupportedProviderError): start the query on a new checkpoint with "
                f"{SHUFFLE_CONF}={target} (its state starts empty and its sources start from their "
                "starting options)")
    return fixed + repartition + "; " + fresh


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
                               (lags or {}).get(log.name), _interval_ms(cp)) for log in cp.sources)


def _interval_ms(cp: Checkpoint) -> int | None:
    """The median time between consecutive batch plans (``batchTimestampMs``) over the recent
    offsets, ms; None with fewer than two planned batches."""
    ts = [e.timestamp_ms for e in cp.offsets[-(LIMIT_BATCHES + 8):] if e.timestamp_ms is not None]
    gaps = [b - a for a, b in zip(ts, ts[1:]) if b > a]
    return int(statistics.median(gaps)) if gaps else None


def _files_advice(code: str, log: SourceLog, sb: _SourceBatchFiles, ms: Mapping[int, int],
                  lag: SourceLag | None, interval_ms: int | None) -> Advice:
    where = f"sources/{log.name} log"
    setting = f"{MAX_FILES} (source {log.name})"
    if not log.entries_loaded or len(sb.log_ids) < 2:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{len(sb.log_ids)} micro-batch(es) read files from source {log.name}: nothing to compare",
                      tuple(Evidence(f"files read by log batch {i}", n, "files", where)
                            for i, n in zip(sb.log_ids, sb.files)),
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
