"""The rule ``advise-real-time-mode`` of :mod:`streamwatch.analysis.advice` (pure over model objects, no
I/O, no Spark): should a micro-batch query run in real-time mode (``trigger(realTime=…)``,
Spark 4.1+), and where it does not apply, why.

In a micro-batch a record waits for the next trigger (on average half the spacing of batch
starts, at most all of it), then for the whole batch to run before the sink writes it. In
real-time mode (:mod:`streamwatch.analysis.realtime`) long-running tasks read and write each
record as it arrives. What Spark 4.2 admits (``RealTimeModeAllowlist``; a query outside it fails
at start with ``STREAMING_REAL_TIME_MODE``): sources that implement ``SupportsRealTimeMode``
(Kafka), the sinks Kafka, ``foreach``, console; output mode update; stateless operators only
(projections, filters, map/flatMap, explode, broadcast joins, watermarks — no aggregation, no
deduplication, no shuffle, no Python UDF).

Where each fact comes from, and what is not known:

* the source kinds: the last ``offsets/N`` (a Kafka offset is ``{"topic": {"partition": n}}``),
  else the recording's progress ``sources[].description``;
* the sink: the recording's progress ``sink.description``, else the active sink of a commit log
  v3 entry (``DataStreamWriter.name``, Spark 4.2+); without either it is unknown and so is
  the verdict;
* stateful or not: ``state/`` in the checkpoint or ``stateOperators`` in the progress;
* the trigger: given by the user (the checkpoint does not record it); a progress event read
  past its latest offset proves real-time mode (:func:`~streamwatch.analysis.realtime.looks_real_time`);
* the query's other operators and its output mode are in neither the checkpoint nor the
  progress: a ``change`` is therefore ``likely``, never ``measured`` (Spark checks them at start).

Verdict ``change`` for a micro-batch query (default or processing-time trigger) reading Kafka
only, writing a supported sink, with no state operator, once its batches were measured;
``keep`` saying why where real-time mode does not apply (another source, another sink, a state
operator, a one-shot or continuous trigger, already real-time); ``unknown`` when the trigger,
the sources, the sink or the batch times are not known.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from streamwatch.analysis.advice import Advice, BatchDuration, Confidence, Evidence, Verdict, start_spacing_ms
from streamwatch.analysis.realtime import looks_real_time
from streamwatch.analysis.triggers import Trigger
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.events import QueryProgress

REALTIME_CODE = "advise-real-time-mode"
#: The sinks Spark 4.2's ``RealTimeModeAllowlist`` admits, by the class name their description carries.
SUPPORTED_SINKS = ("KafkaTable", "ForeachWriterTable", "ConsoleTable")
#: The batch duration advised: ``RealTimeTrigger``'s default (5 minutes), a checkpoint interval,
#: not a latency.
ADVISED_INTERVAL = "5 minutes"
#: Measured by bench/advise_realtime_bench.py (docs/advise.md): the median p50 record latency of
#: a stateless Kafka → Kafka query in real-time mode, local[2] on a loaded 2-core machine (ms);
#: processingTime=1s gave 1,066 ms there.
RTM_MEASURED_P50_MS = 22
RECENT_BATCHES = 10


@dataclass(frozen=True, slots=True)
class Shape:
    """What is known of the query: ``sources`` (kind per source: ``kafka``, ``file``, ``delta``,
    ``rate``…, in the order read; empty when unknown) and where from, ``kafka_partitions``
    (partitions in the Kafka offsets), ``sink`` (the sink's class name, None when unknown) and
    where from, ``stateful`` and where from (None: no state seen)."""

    sources: tuple[str, ...]
    sources_from: str
    kafka_partitions: int
    sink: str | None
    sink_from: str
    stateful: str | None


def query_shape(cp: Checkpoint | None, progress: Sequence[QueryProgress]) -> Shape:
    """The :class:`Shape` of the query from its last offsets entry and commit, and its progress."""
    sources: tuple[str, ...] = ()
    sources_from, parts = "", 0
    if cp is not None and cp.offsets and cp.offsets[-1].parsed:
        last = cp.offsets[-1]
        sources = tuple(p.kind if p is not None else "unknown" for p in last.parsed)
        sources_from = f"offsets/{last.batch_id}"
        parts = sum(len(p.fields.get(t) or {}) for p in last.parsed if p is not None and p.kind == "kafka"
                    for t in p.fields)
    elif progress and progress[-1].sources:
        sources = tuple(_kind_of(s.description) for s in progress[-1].sources)
        sources_from = "progress sources[].description"
    sink, sink_from = None, ""
    described = next((p.sink.description for p in reversed(progress) if p.sink is not None and p.sink.description), None)
    active = [s for c in (cp.commits[-1:] if cp is not None else ()) for s in c.sinks if s.active]
    if described:
        sink, sink_from = _class_of(described), "progress sink.description"
    elif active and active[0].provider_short:
        sink, sink_from = active[0].provider_short, f"commits/{cp.commits[-1].batch_id if cp else 0} sinkMetadataMap"
    stateful = ("state/ in the checkpoint" if cp is not None and cp.state else
                "progress stateOperators" if any(p.state_operators for p in progress) else None)
    return Shape(sources, sources_from, parts, sink, sink_from, stateful)


def _kind_of(description: str) -> str:
    low = description.lower()
    for kind in ("kafka", "delta", "rate", "file"):
        if kind in low:
            return kind
    return description.split("[", 1)[0] or "unknown"


def _class_of(description: str) -> str:
    """``org.apache.….KafkaSourceProvider$KafkaTable@1a2b`` → ``KafkaTable``."""
    return description.split("@", 1)[0].rsplit(".", 1)[-1].rstrip("$").rsplit("$", 1)[-1]


def _pace(cp: Checkpoint | None, progress: Sequence[QueryProgress],
          durations: Sequence[BatchDuration]) -> tuple[Evidence, ...]:
    """The median batch time and the median spacing of batch starts of the recent batches
    (batch 0, the JVM's warm-up, left out when later ones were measured)."""
    out = []
    recent = [d for d in durations[-RECENT_BATCHES:] if d.batch_id > 0] or list(durations[-RECENT_BATCHES:])
    if recent:
        out.append(Evidence("median batch time", int(statistics.median(d.ms for d in recent)), "ms",
                            f"{len(recent)} batches, {recent[0].source}"))
    starts = [t for t in (p.timestamp_ms for p in progress[-RECENT_BATCHES - 1:]) if t is not None]
    gaps = [b - a for a, b in pairwise(starts) if b > a]
    if gaps:
        out.append(Evidence("spacing of batch starts", int(statistics.median(gaps)), "ms", "progress timestamp"))
    elif cp is not None and (spacing := start_spacing_ms(cp)) is not None:
        out.append(Evidence("spacing of batch starts", spacing, "ms", "offsets/N batchTimestampMs"))
    return tuple(out)


def real_time_mode(trigger: Trigger | None, cp: Checkpoint | None, progress: Sequence[QueryProgress],
                   durations: Sequence[BatchDuration], trigger_source: str = "--trigger") -> Advice:
    """``advise-real-time-mode`` (see the module docstring). ``trigger`` is the one the query
    runs with (None: unknown), named in the evidence as ``trigger_source``; ``durations`` the
    batch times measured (ms). ``target`` is None: the advice is a trigger kind, its interval
    (:data:`ADVISED_INTERVAL`) a checkpoint interval."""
    code, setting = REALTIME_CODE, "trigger(realTime=…)"
    shape = query_shape(cp, progress)
    ev: list[Evidence] = []
    if shape.sources:
        ev.append(Evidence("sources", len(shape.sources), "sources",
                           f"{shape.sources_from}: {', '.join(shape.sources)}"))
    if shape.kafka_partitions:
        ev.append(Evidence("Kafka partitions", shape.kafka_partitions, "partitions", shape.sources_from))
    if (trigger is not None and trigger.real_time) or looks_real_time(progress):
        why = f"{trigger_source} {trigger.spec}" if trigger is not None and trigger.real_time else \
            "a progress event read past its source's latest offset, which no micro-batch does"
        return _keep(code, setting, f"already runs in real-time mode ({why})", ev)
    if trigger is not None and trigger.kind in ("availableNow", "once", "continuous"):
        what = ("continuous processing already handles records as they arrive" if trigger.kind == "continuous"
                else "a one-shot trigger: its latency is its schedule's, not the trigger's")
        return _keep(code, setting, f"trigger {trigger.spec}: {what}", ev)
    if shape.stateful is not None:
        return _keep(code, setting, f"a stateful query ({shape.stateful}): real-time mode in Spark 4.2 runs "
                     "stateless operators only (RealTimeModeAllowlist)", ev)
    if not shape.sources:
        return _unknown(code, setting, "the query's sources are not known", ev,
                        "the checkpoint's offsets log, or a recording with the query's progress")
    other = sorted({k for k in shape.sources if k != "kafka"})
    if other:
        return _keep(code, setting, f"reads a {', '.join(other)} source ({shape.sources_from}): real-time mode "
                     "reads Kafka only (SupportsRealTimeMode); a micro-batch trigger stays", ev)
    return _sink_and_latency(code, setting, shape, ev, trigger, trigger_source, _pace(cp, progress, durations))


def _sink_and_latency(code: str, setting: str, shape: Shape, ev: list[Evidence], trigger: Trigger | None,
                      trigger_source: str, pace: tuple[Evidence, ...]) -> Advice:
    """A stateless Kafka query: judged by its sink, its trigger and its batches."""
    if shape.sink is None:
        return _unknown(code, setting, "a stateless query reading Kafka; its sink is not known", ev,
                        "the sink: a recording or event log (progress sink.description), or a commit log v3 "
                        "(DataStreamWriter.name, Spark 4.2+)")
    if shape.sink not in SUPPORTED_SINKS:
        return _keep(code, setting, f"writes to {shape.sink} ({shape.sink_from}): real-time mode writes to Kafka, "
                     "foreach or console only", ev)
    if trigger is None:
        return _unknown(code, setting, f"a stateless Kafka → {shape.sink} query; its trigger is not known", ev + list(pace),
                        "the trigger the query runs with (--trigger): the checkpoint does not record it")
    ev = [*ev, Evidence("trigger interval", trigger.interval_ms or 0, "ms", f"{trigger_source} {trigger.spec}"), *pace]
    known = {e.what: int(e.value) for e in pace}
    batch, spacing = known.get("median batch time"), known.get("spacing of batch starts")
    if batch is None or spacing is None:
        return _unknown(code, setting, f"a stateless Kafka → {shape.sink} query; its batches were not measured",
                        ev, "at least two committed batches (or --recording with the query's progress)")
    mean, worst = spacing // 2 + batch, spacing + batch
    return Advice(code, setting, Verdict.CHANGE, Confidence.LIKELY,
                  f"a stateless Kafka → {shape.sink} query in micro-batches: a record waits for its trigger, then "
                  f"for its batch: about {mean:,} ms (up to {worst:,} ms) from arrival to the sink", tuple(ev),
                  "if its records must reach the sink faster than that (a need neither the checkpoint nor the "
                  f'progress records): trigger(realTime="{ADVISED_INTERVAL}") with .outputMode("update") (a stateless query writes '
                  "the same rows as in append); it applies on restart, the checkpoint kept. It holds one core per "
                  f"Kafka partition ({shape.kafka_partitions or 'unknown'}) for the whole interval; Spark checks "
                  "the query's operators at start (no aggregation, shuffle or Python UDF: "
                  "STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST), which neither the checkpoint nor "
                  "the progress shows",
                  f"records are written as they arrive instead of once a batch: about {mean:,} ms → "
                  f"~{RTM_MEASURED_P50_MS:,} ms median record latency, as measured on a Kafka → Kafka query "
                  "(docs/advise.md); records arriving while one interval closes and the next starts wait for "
                  "it (the p99 measured with a 10 s interval: about 1 s)")


def _keep(code: str, setting: str, summary: str, ev: list[Evidence]) -> Advice:
    return Advice(code, setting, Verdict.KEEP, Confidence.MEASURED, summary, tuple(ev))


def _unknown(code: str, setting: str, summary: str, ev: list[Evidence], needs: str) -> Advice:
    return Advice(code, setting, Verdict.UNKNOWN, Confidence.UNKNOWN, summary, tuple(ev), needs=needs)
