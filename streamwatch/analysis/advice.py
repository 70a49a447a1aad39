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
* ``advise-max-files-per-trigger`` — :mod:`streamwatch.analysis.advice_files`.
* ``advise-max-offsets-per-trigger`` — :mod:`streamwatch.analysis.advice_offsets`.
* ``advise-file-source-cleanup`` — :mod:`streamwatch.analysis.advice_cleanup`.
* ``advise-trigger-interval`` — :mod:`streamwatch.analysis.advice_trigger`.
* ``advise-real-time-mode`` — :mod:`streamwatch.analysis.advice_realtime`.
* ``advise-state-store`` — :mod:`streamwatch.analysis.advice_state`.
* ``advise-watermark-delay`` — :mod:`streamwatch.analysis.advice_watermark`.
* ``advise-min-batches-to-retain`` — :mod:`streamwatch.analysis.advice_retain`.
"""

from __future__ import annotations

import enum
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.events import QueryProgress

#: A stateful query is flagged when its state partitions exceed this many per core.
OVER_PER_CORE = 4
#: The partition count advised: this many per core (a task per core in flight, one queued).
TARGET_PER_CORE = 2
#: File modification times are coarser than Spark's clock on some file systems (ms).
MTIME_SLACK_MS = 1_000
SHUFFLE_CONF = "spark.sql.shuffle.partitions"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
#: The spacing of batch starts is the median over this many most recent batch plans.
SPACING_PLANS = 11


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


def start_spacing_ms(cp: Checkpoint) -> int | None:
    """The median time between consecutive batch plans (``batchTimestampMs``) over the recent
    offsets, ms; None with fewer than two planned batches."""
    ts = [e.timestamp_ms for e in cp.offsets[-SPACING_PLANS:] if e.timestamp_ms is not None]
    gaps = [b - a for a, b in pairwise(ts) if b > a]
    return int(statistics.median(gaps)) if gaps else None
