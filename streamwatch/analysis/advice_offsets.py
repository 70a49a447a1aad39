"""The rule ``advise-max-offsets-per-trigger`` of :mod:`streamwatch.analysis.advice` (pure over
model objects, no Spark): a Kafka source's ``maxOffsetsPerTrigger`` against its records per
micro-batch — the offsets each batch advanced over all partitions, ``offsets/N`` minus
``offsets/N-1`` (``KafkaSourceOffset``; batch 0 from the initial offsets Spark keeps in
``sources/<id>/0``, ``KafkaSourceInitialOffsetWriter``), which is what Spark reports as the
batch's ``numInputRows`` — and its backlog on the broker (:class:`KafkaBacklog`, measured by
the adapter only when the user names the broker). The Kafka twin of
:mod:`streamwatch.analysis.advice_files`, with its verdicts: (a) one huge first batch (at
least :data:`FIRST_BATCH_FACTOR` times the later batches' median records, or their median
batch time, and more records than the limit it would advise) advises a limit of
:data:`OFFSETS_HEADROOM` × what the later batches read; (b) a backlog not draining while each
of the last :data:`LIMIT_BATCHES` batches read the same count (a limit that binds) advises
raising it. The source options are not in the checkpoint, so whether a limit is set is
inferred: a change is ``likely`` at most. ``target`` is a record count.

:func:`read_kafka_batches` reads the checkpoint (point look-ups), as
:func:`~streamwatch.analysis.advice_cleanup.read_files_present` does for its rule.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import orjson

from streamwatch.analysis.advice import Advice, BatchDuration, Confidence, Evidence, Verdict, start_spacing_ms
from streamwatch.model.checkpoint import Checkpoint

OFFSETS_CODE = "advise-max-offsets-per-trigger"
MAX_OFFSETS = "maxOffsetsPerTrigger"
#: A first batch reading this many times the later batches' median records (or taking this
#: many times their median batch time) is judged unbounded.
FIRST_BATCH_FACTOR = 10
#: The limit advised: this many times what the later batches read (room to drain a backlog
#: while records keep arriving; a limit equal to the arrival per batch would never drain it).
OFFSETS_HEADROOM = 2
#: Recent batches judged for a binding limit (each must read the same count).
LIMIT_BATCHES = 3


@dataclass(frozen=True, slots=True)
class KafkaBatch:
    """One micro-batch of a Kafka source: ``batch_id`` and ``records`` it read (offsets
    advanced over all its topic-partitions), ``end`` its end offsets (topic → partition →
    next offset to read) and ``planned_ms`` (``offsets/N`` ``batchTimestampMs``, epoch ms)."""

    batch_id: int
    records: int
    end: Mapping[str, Mapping[str, int]]
    planned_ms: int | None


@dataclass(frozen=True, slots=True)
class KafkaReads:
    """One Kafka source of a checkpoint (``source``: its id in ``offsets/N``) and its
    committed batches whose records are known, ascending (``batches``)."""

    source: str
    batches: tuple[KafkaBatch, ...]


@dataclass(frozen=True, slots=True)
class KafkaBacklog:
    """One Kafka source's backlog measured on the broker at ``at_ms`` (epoch ms): ``behind``
    = the broker's latest offsets − the last committed batch's end offsets (records, over
    all partitions); ``behind_then`` = the records behind when batch ``window_batch`` was
    planned (the broker's offsets at its ``batchTimestampMs``, Kafka ``ListOffsets`` by
    timestamp, − that batch's start offsets; None when the broker could not say), and
    ``landed`` the records that arrived since then. ``error``: one line when the broker
    did not answer (the rest then unknown)."""

    source: str
    at_ms: int
    behind: int | None = None
    window_batch: int | None = None
    window_from_ms: int | None = None
    behind_then: int | None = None
    landed: int | None = None
    error: str | None = None


def _records(end: Mapping[str, Mapping[str, int]], start: Mapping[str, Mapping[str, int]]) -> int:
    """Offsets advanced from ``start`` to ``end`` over every partition (a partition new in
    ``end`` from offset 0, as :class:`~streamwatch.analysis.batchio.SourceReader` counts)."""
    return sum(o - int(start.get(t, {}).get(p, 0)) for t, parts in end.items() for p, o in parts.items())


def parse_initial_offsets(body: bytes) -> dict[str, dict[str, int]] | None:
    """The Kafka source's ``sources/<id>/0``: a zero byte, ``v1`` and a JSON line of topic →
    partition → offset (``KafkaSourceInitialOffsetWriter``); None when it is not that."""
    text = body.lstrip(b"\x00")
    head, _, rest = text.partition(b"\n")
    if not head.startswith(b"v"):
        return None
    try:
        doc = orjson.loads(rest.strip() or b"null")
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    return {t: {str(p): o for p, o in parts.items() if isinstance(o, int)}
            for t, parts in doc.items() if isinstance(parts, dict)}


def read_kafka_batches(path: str, cp: Checkpoint) -> tuple[KafkaReads, ...]:
    """Every Kafka source of ``cp`` (read at ``path``) and the records each committed batch
    read: ``offsets/N`` minus ``offsets/N-1`` (batch 0 minus the source's ``sources/<id>/0``
    initial offsets). A batch whose start is unknown (``offsets/N-1`` purged or not read) is
    left out.
    Reads the checkpoint's storage (point look-ups); () when it cannot be opened."""
    from streamwatch.analysis.probe import Probe, ProbeError

    committed = set(cp.commit_batch_ids)
    try:
        probe = Probe(path)
    except ProbeError:
        return ()
    out: dict[str, list[KafkaBatch]] = {}
    # source id → (the batch id, its end offsets): batch N's start is batch N-1's end
    ends: dict[str, tuple[int, Mapping[str, Mapping[str, int]]]] = {}
    for entry in cp.offsets:
        for i, p in enumerate(entry.parsed):
            if p is None or p.kind != "kafka":
                continue
            sid = entry.source_id(i)
            end = {t: {k: v for k, v in parts.items() if isinstance(v, int)} for t, parts in p.kafka_partitions.items()}
            start: Mapping[str, Mapping[str, int]] | None = None
            if entry.batch_id == 0:  # only batch 0 starts at the initial offsets (a purged log's first does not)
                body = probe.read(probe.join(probe.root, "sources", sid, "0"))
                start = parse_initial_offsets(body) if body is not None else None
            elif sid in ends and ends[sid][0] == entry.batch_id - 1:
                start = ends[sid][1]
            if start is not None and entry.batch_id in committed:
                out.setdefault(sid, []).append(KafkaBatch(entry.batch_id, _records(end, start), end, entry.timestamp_ms))
            ends[sid] = (entry.batch_id, end)
    return tuple(KafkaReads(sid, tuple(bs)) for sid, bs in out.items())


def max_offsets_per_trigger(reads: Sequence[KafkaReads], durations: Sequence[BatchDuration],
                            backlogs: Mapping[str, KafkaBacklog] | None = None,
                            cp: Checkpoint | None = None) -> tuple[Advice, ...]:
    """``advise-max-offsets-per-trigger`` (see the module docstring): one :class:`Advice` per
    Kafka source in ``reads`` (:func:`read_kafka_batches`), or none when the query reads no
    Kafka source (the rule does not apply). ``durations``: batch times (ms) by batch id;
    ``backlogs``: each source's :class:`KafkaBacklog` by source id (absent: no broker given);
    ``cp`` the checkpoint (the spacing of batch starts)."""
    ms = {d.batch_id: d.ms for d in durations}
    interval = start_spacing_ms(cp) if cp is not None else None
    return tuple(_offsets_advice(r, ms, (backlogs or {}).get(r.source), interval) for r in reads)


def _offsets_advice(r: KafkaReads, ms: Mapping[int, int], backlog: KafkaBacklog | None,
                    interval_ms: int | None) -> Advice:
    setting = f"{MAX_OFFSETS} (source {r.source})"
    where = "offsets/N − offsets/N-1"
    b = [x for x in r.batches if x.records > 0]
    if len(b) < 2:
        return Advice(OFFSETS_CODE, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{len(b)} committed micro-batch(es) read records from Kafka source {r.source}: nothing to compare",
                      tuple(Evidence(f"records read by batch {x.batch_id}", x.records, "records", where) for x in b),
                      needs="at least two committed micro-batches that read records from the source")
    first, later = b[0], [x.records for x in b[1:]]
    med = statistics.median(later)
    first_src = f"offsets/{first.batch_id} − " + (f"offsets/{first.batch_id - 1}" if first.batch_id > 0
                                                   else f"sources/{r.source}/0 initial offsets")
    ev: tuple[Evidence, ...] = (Evidence("records read by the first batch", first.records, "records", first_src),
                                Evidence("median records of the later batches", med, "records",
                                         f"{len(later)} batches, {where}"))
    first_ms = ms.get(first.batch_id)
    later_ms = [t for x in b[1:] if (t := ms.get(x.batch_id)) is not None]
    if first_ms is not None and later_ms:
        ev += (Evidence("first batch time", first_ms, "ms", f"batch {first.batch_id}"),
               Evidence("median batch time of the later batches", int(statistics.median(later_ms)), "ms",
                        f"{len(later_ms)} batches"))
    slow = first_ms is not None and bool(later_ms) and first_ms >= FIRST_BATCH_FACTOR * statistics.median(later_ms)
    target = max(1, math.ceil(OFFSETS_HEADROOM * med))
    # a limit at or above what the first batch read changes nothing (a first batch slow for its
    # JVM warm-up alone is not judged huge)
    if first.records > target and (first.records >= FIRST_BATCH_FACTOR * med or slow):
        return Advice(OFFSETS_CODE, setting, Verdict.CHANGE, Confidence.LIKELY,
                      f"the first batch read {first.records:,} records, the later ones {med:,.0f} (median): likely no "
                      f"{MAX_OFFSETS} on Kafka source {r.source} (the source options are not in the checkpoint)", ev,
                      f"set .option(\"{MAX_OFFSETS}\", {target}) on the source ({OFFSETS_HEADROOM}× what the later "
                      "batches read: room to drain a backlog while records keep arriving); it applies on restart, "
                      "the checkpoint kept",
                      f"a backlog is read {target:,} records a batch instead of all at once: first results after one "
                      "batch of that size, every batch bounded to about that; the whole backlog takes more batches, "
                      "each with its fixed cost, so it drains later (measured: docs/advise.md)",
                      target=target)
    return _backlog_advice(setting, b, ev, backlog, interval_ms)


def _backlog_advice(setting: str, b: Sequence[KafkaBatch], ev: tuple[Evidence, ...],
                    backlog: KafkaBacklog | None, interval_ms: int | None) -> Advice:
    """Verdict (b): the broker's backlog against the recent batches' counts (the first batch was not huge)."""
    if backlog is None or backlog.behind is None:
        why = backlog.error if backlog is not None and backlog.error else "no broker given"
        return Advice(OFFSETS_CODE, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"the first batch was not huge; the backlog is unknown ({why})", ev,
                      needs="the broker's latest offsets: pass --bootstrap HOST:PORT")
    ev += (Evidence("backlog", backlog.behind, "records", "broker latest offsets − the last committed batch's end offsets"),)
    if backlog.behind_then is not None and backlog.window_batch is not None:
        ev += (Evidence(f"backlog when batch {backlog.window_batch} was planned", backlog.behind_then, "records",
                        "broker offsets at its batchTimestampMs (ListOffsets by timestamp) − its start offsets"),)
    if backlog.behind == 0 or (backlog.behind_then is not None and backlog.behind < backlog.behind_then):
        return Advice(OFFSETS_CODE, setting, Verdict.KEEP, Confidence.MEASURED,
                      f"the first batch was not huge and the backlog ({backlog.behind:,} records) drains", ev)
    recent = [x.records for x in b[-LIMIT_BATCHES:]]
    bound = len(b) > LIMIT_BATCHES and len(set(recent)) == 1 and backlog.behind >= recent[0]
    if not bound or backlog.landed is None or backlog.window_from_ms is None or interval_ms is None:
        return Advice(OFFSETS_CODE, setting, Verdict.KEEP, Confidence.LIKELY,
                      f"the backlog ({backlog.behind:,} records) is not draining, but the recent batches read "
                      f"{', '.join(f'{n:,}' for n in recent)} records: no offset limit binds them (look at the batch time)",
                      ev)
    limit = recent[0]
    span_ms = max(1, backlog.at_ms - backlog.window_from_ms)
    per_batch = backlog.landed * interval_ms / span_ms
    target = max(limit + 1, math.ceil(OFFSETS_HEADROOM * per_batch))
    ev += (Evidence("records landed", backlog.landed, "records",
                    f"in the {span_ms / 1000:,.0f} s since batch {backlog.window_batch} was planned (broker offsets)"),
           Evidence("batch interval", interval_ms, "ms", "median gap of offsets/N batchTimestampMs"))
    return Advice(OFFSETS_CODE, setting, Verdict.CHANGE, Confidence.LIKELY,
                  f"the backlog ({backlog.behind:,} records) is not draining while each of the last {LIMIT_BATCHES} "
                  f"batches read exactly {limit:,} records: likely {MAX_OFFSETS}={limit}", ev,
                  f"raise .option(\"{MAX_OFFSETS}\", {target}) on the source ({OFFSETS_HEADROOM}× the "
                  f"{per_batch:,.0f} records arriving a batch interval); it applies on restart, the checkpoint kept",
                  f"each batch reads up to {target:,} records, more than arrive in a batch interval: the backlog "
                  "drains (bigger batches take longer: watch the batch time)",
                  target=target)
