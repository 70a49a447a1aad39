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
* ``advise-trigger-interval`` — the trigger the query runs with (given by the user: neither the
  checkpoint nor ``QueryStartedEvent`` records it; without it the verdict is ``unknown``, the
  spacing of batch starts given as evidence only) against its recent batches (the last
  :data:`RECENT_BATCHES`; batch 0, the JVM's warm-up, left out of the median batch time when
  later ones were measured). (b) **idle polling**: a processing-time interval of at most
  :data:`IDLE_MAX_INTERVAL_MS` (or the default trigger, which polls every
  :data:`POLLING_DELAY_MS`, Spark's ``spark.sql.streaming.pollingDelay``, while no data
  arrives) on a query that waits for the next batch at least its median batch time and
  :data:`IDLE_GAP_FACTOR` polls (it waits for data half of the time or more): every idle
  trigger asks each source for its latest offset (a file source lists its folder) — measured
  at 100 ms on an idle file source: 3.5% of a core of driver CPU above the idle JVM, the
  default trigger 11% (``bench/advise_trigger_bench.py``, docs/advise.md); the cost goes with
  the trigger rate, so 1 s and above costs ≲ 0.5%. Advises the spacing of
  batch starts, within :data:`IDLE_TARGET_MIN_MS`–:data:`IDLE_TARGET_MAX_MS`; ``measured``
  when the recording holds Spark's ``QueryIdleEvent``s (the query ran through the wait),
  else ``likely`` (the wait may be time the query was stopped). (a) **overrun**: the median
  batch time (``triggerExecution`` or commit time) above the processing-time interval while
  the query does not wait between batches: batches run back to back, the interval is not in
  effect; advises :data:`BEHIND_HEADROOM` × the median batch time (rounded up to
  :data:`INTERVAL_LADDER_MS`). ``target`` is an interval in ms.
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
from streamwatch.analysis.triggers import Trigger
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
TRIGGER_CODE = "advise-trigger-interval"
#: Batches judged by the trigger rule: the most recent this many.
RECENT_BATCHES = 10
#: An interval (or the default trigger's polling delay) at or below this is judged for idle polling (ms).
IDLE_MAX_INTERVAL_MS = 1_000
#: A query is judged idle when its batches start at least this many times their median batch
#: time (and interval) apart: it waits for data at least half of the time.
IDLE_GAP_FACTOR = 2
#: Spark's ``spark.sql.streaming.pollingDelay`` default: the default trigger's wait between idle triggers (ms).
POLLING_DELAY_MS = 10
#: The interval advised after batches overran theirs: this many times the median batch time.
BEHIND_HEADROOM = 1.5
#: The advised idle interval is the spacing of batch starts, kept within these bounds (ms).
IDLE_TARGET_MIN_MS = 2_000
IDLE_TARGET_MAX_MS = 60_000
#: Intervals advised (ms): round numbers a user would write.
INTERVAL_LADDER_MS = (500, 1_000, 2_000, 5_000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000)
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"


class Confidence(enum.StrEnum):
    """How sure an :class:`Advice` is (see the module docstring)."""

    MEASURED = "measured"
    LIKELY = "likely"
    UNKNOWN = "unknown"


class Verdict(enum.StrEnum):
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
    gaps = [b - a for a, b in zip(ts, ts[1:], strict=False) if b > a]
    return int(statistics.median(gaps)) if gaps else None


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


def _ladder_up(ms: float) -> int:
    """The smallest interval of :data:`INTERVAL_LADDER_MS` at or above ``ms`` (its last above it)."""
    return next((x for x in INTERVAL_LADDER_MS if x >= ms), INTERVAL_LADDER_MS[-1])


def _ladder_down(ms: float) -> int:
    """The largest interval of :data:`INTERVAL_LADDER_MS` at or below ``ms`` (its first below it)."""
    return next((x for x in reversed(INTERVAL_LADDER_MS) if x <= ms), INTERVAL_LADDER_MS[0])


def interval_text(ms: int) -> str:
    """``ms`` as a trigger interval spec: ``500ms``, ``2s``, ``1m`` (the grammar of
    :mod:`streamwatch.analysis.triggers`)."""
    if ms % 60_000 == 0:
        return f"{ms // 60_000}m"
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


@dataclass(frozen=True, slots=True)
class _Pace:
    """How the recent batches ran (ms, None when not measured): ``batch_ms`` the median batch
    time (batch 0 left out when later ones were measured: it carries the JVM's warm-up),
    ``spacing_ms`` the median spacing of batch starts, ``wait_ms`` the median wait from a
    batch's end to the next batch's start (``offsets/N+1`` ``batchTimestampMs`` − ``offsets/N``
    ``batchTimestampMs`` − batch N's time), and the ``evidence`` for each."""

    batch_ms: int | None
    spacing_ms: int | None
    wait_ms: int | None
    evidence: tuple[Evidence, ...]


def _pace(cp: Checkpoint | None, durations: Sequence[BatchDuration]) -> _Pace:
    by_id = {d.batch_id: d for d in durations}
    ids = sorted(by_id)
    judged = (ids[1:] if len(ids) > 1 and ids[0] == 0 else ids)[-RECENT_BATCHES:]
    ev: tuple[Evidence, ...] = ()
    med = int(statistics.median(by_id[b].ms for b in judged)) if judged else None
    if med is not None:
        ev += (Evidence("median batch time", med, "ms", f"last {len(judged)} batches, {by_id[judged[0]].source}"),)
    spacing = _interval_ms(cp) if cp is not None else None
    if spacing is not None:
        ev += (Evidence("observed spacing of batch starts", spacing, "ms",
                        "median gap of offsets/N batchTimestampMs, recent batches"),)
    planned = {e.batch_id: e.timestamp_ms for e in cp.offsets if e.timestamp_ms is not None} if cp is not None else {}
    waits = [max(0, nxt - planned[b] - by_id[b].ms) for b in ids[-RECENT_BATCHES:]
             if b in planned and (nxt := planned.get(b + 1)) is not None]
    wait = int(statistics.median(waits)) if waits else None
    if wait is not None:
        ev += (Evidence("median wait for the next batch", wait, "ms",
                        f"{len(waits)} batches: offsets/N+1 batchTimestampMs − offsets/N batchTimestampMs − batch time"),)
    return _Pace(med, spacing, wait, ev)


def trigger_interval(trigger: Trigger | None, cp: Checkpoint | None, durations: Sequence[BatchDuration],
                     idle_events: int | None = None) -> Advice:
    """``advise-trigger-interval`` (see the module docstring). ``trigger`` is the one the query
    runs with (``--trigger``: neither the checkpoint nor the listener's events record it; None:
    unknown); ``durations`` the batch times measured (the last :data:`RECENT_BATCHES` are
    judged); ``idle_events`` the ``QueryIdleEvent``s of the recording (None without one).
    ``target`` is the advised interval in ms."""
    code, setting = TRIGGER_CODE, "trigger (DataStreamWriter.trigger)"
    pace = _pace(cp, durations)
    ev = pace.evidence
    if idle_events is not None:
        ev += (Evidence("idle triggers reported", idle_events, "QueryIdleEvents",
                        "the recording (Spark posts at most one per spark.sql.streaming.noDataProgressEventInterval, "
                        "10 s by default)"),)
    if trigger is None:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      "the trigger is unknown: neither the checkpoint nor the listener's events record it", ev,
                      needs="the trigger the query runs with: pass --trigger (e.g. --trigger 5s)")
    if trigger.kind not in ("processingTime", "default"):
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"trigger {trigger.spec}: the rule judges processing-time and default triggers only", ev,
                      needs="a query run with a processing-time trigger or the default one")
    interval = trigger.interval_ms or 0
    poll = interval or POLLING_DELAY_MS
    ev = (Evidence("trigger interval", interval, "ms", f"--trigger {trigger.spec}"), *ev)
    med, wait = pace.batch_ms, pace.wait_ms
    # waiting for data at least half of the time, polled at least every IDLE_MAX_INTERVAL_MS
    waiting = wait is not None and wait >= max(med or 0, IDLE_GAP_FACTOR * poll)
    if waiting and poll <= IDLE_MAX_INTERVAL_MS and pace.spacing_ms is not None:
        assert wait is not None
        return _idle(code, setting, ev, poll, pace.spacing_ms, wait, trigger, idle_events)
    if med is not None and interval and med > interval and (wait is None or wait < med):
        return _behind(code, setting, ev, interval, med)
    if med is None and wait is None:
        return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"trigger {trigger.spec}; no batch time nor batch spacing measured", ev,
                      needs="at least two committed batches (or --recording with the query's progress)")
    return Advice(code, setting, Verdict.KEEP, Confidence.MEASURED if med is not None else Confidence.LIKELY,
                  f"trigger {trigger.spec}: the batches do not overrun the interval back to back, and no interval "
                  f"of {interval_text(IDLE_MAX_INTERVAL_MS)} or less polls an idle source", ev)


def _behind(code: str, setting: str, ev: tuple[Evidence, ...], interval: int, med: int) -> Advice:
    """Verdict (a): the median batch time exceeds the processing-time interval, batches back to back."""
    target = _ladder_up(BEHIND_HEADROOM * med)
    return Advice(code, setting, Verdict.CHANGE, Confidence.MEASURED,
                  f"batches take {med:,} ms (median) against a {interval:,} ms interval: they run back to back, "
                  "the interval is not in effect", ev,
                  f"trigger(processingTime=\"{interval_text(target)}\") ({BEHIND_HEADROOM}× the median batch time), "
                  "or more cores so that a batch fits in the interval; it applies on restart, the checkpoint kept",
                  f"batches start on the {interval_text(target)} interval instead of back to back: the same data "
                  "in fewer, bigger batches, so less CPU for the same rows, and results later (each row waits for "
                  "its trigger); measured both ways in docs/advise.md", target=target)


def _idle(code: str, setting: str, ev: tuple[Evidence, ...], poll: int, spacing: int, wait: int,
          trigger: Trigger, idle_events: int | None) -> Advice:
    """Verdict (b): a tiny interval (or the default trigger's polling) on a mostly idle source."""
    target = min(IDLE_TARGET_MAX_MS, max(IDLE_TARGET_MIN_MS, _ladder_down(spacing)))
    what = ("the default trigger polls the sources every "
            f"{POLLING_DELAY_MS} ms (spark.sql.streaming.pollingDelay) while no data arrives"
            if trigger.kind == "default" else f"a {poll:,} ms interval")
    # the wait is measured between batches; only Spark's idle events say the query ran through it
    sure = Confidence.MEASURED if idle_events else Confidence.LIKELY
    return Advice(code, setting, Verdict.CHANGE, sure,
                  f"{what}; a batch starts every {spacing:,} ms and waits {wait:,} ms for the next (medians): "
                  f"about {wait / poll:,.0f} triggers find no data for every one that does", ev,
                  f"trigger(processingTime=\"{interval_text(target)}\") (the spacing of batch starts, within "
                  f"{interval_text(IDLE_TARGET_MIN_MS)}–{interval_text(IDLE_TARGET_MAX_MS)}), or "
                  "trigger(availableNow=True) run on a schedule when data lands rarely; it applies on restart, "
                  "the checkpoint kept",
                  f"{60_000 // poll:,} → {max(1, 60_000 // target):,} triggers a minute: each idle trigger asks every "
                  "source for its latest offset (a file source lists its folder), so the driver's CPU falls "
                  f"(measured: docs/advise.md); new data waits up to {interval_text(target)} for its trigger",
                  target=target)
