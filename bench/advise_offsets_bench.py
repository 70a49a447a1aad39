"""Benchmark: is ``advise-max-offsets-per-trigger``'s advice worth taking? A Kafka source with a
backlog, read as a new user configures it (``startingOffsets=earliest``, no
``maxOffsetsPerTrigger``: the first micro-batch reads the whole topic) and as streamwatch
advises, on the same machine in the same run.

The job: a Kafka topic (``PARTITIONS`` partitions) pre-filled with ``BACKLOG`` small records on
a loopback broker (:class:`~streamwatch.spark.kafka_broker.LocalKafka`, ``make jars``) →
``groupBy(window(timestamp, 10 s), key).count()`` → the ``noop`` sink, 4 shuffle partitions.

1. ``derive``: the job without a limit (processing-time trigger) reads the backlog in its first
   batch, then ``LATER`` batches of ``ARRIVING`` records produced one batch at a time.
   streamwatch's rule (:func:`streamwatch.analysis.advice_offsets.max_offsets_per_trigger` over
   the checkpoint's offsets log) must say ``change``; its ``target`` is the advised limit.
2. ``no limit`` and ``advised`` (``maxOffsetsPerTrigger`` = target) alternate for
   ``ADVISE_BENCH_ROUNDS`` rounds (default 5), each on a fresh checkpoint over the same topic
   from ``earliest``, ``availableNow`` (to the end of the topic, then stop).

Per run: time to the first committed batch (the first progress event's ``timestamp`` +
``durationMs.triggerExecution`` − the wall clock at ``start()``), the longest batch
(``triggerExecution``) and the time to drain the topic (``start()`` to the query's end).
Prints per arm the median and the min over rounds, the ratios, and the load average.

Verdict (b), a limit that keeps a backlog from draining (``ADVISE_BENCH_PART=backlog``; both
parts by default): the job with ``maxOffsetsPerTrigger`` = ``FLOW_LIMIT`` and a 2 s trigger
over a fresh topic holding ``FLOW_START`` records where ``FLOW_RATE`` records arrive a second
for ``FLOW_SECONDS`` s; ``streamwatch advise --bootstrap`` (the CLI: the broker's offsets for
the backlog) on that checkpoint must say ``change``; then the low limit and the advised one
alternate, each run producing the same records into a fresh topic. Per run: the backlog when
the producing stops (records produced − records Spark read, progress ``numInputRows``).
Not run in CI.

    .venv/bin/python bench/advise_offsets_bench.py      # ADVISE_BENCH_ROUNDS=2 to shorten
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
BACKLOG = int(os.environ.get("ADVISE_BENCH_BACKLOG", "200000"))
PARTITIONS = 2
ARRIVING = 2_000
LATER = 3
KEYS = 20
#: Verdict (b)'s job: records at start, records produced a second, seconds of producing, the too-low limit.
FLOW_START, FLOW_RATE, FLOW_SECONDS, FLOW_LIMIT = 2_000, 400, 45, 200
PART = os.environ.get("ADVISE_BENCH_PART", "both")  # first | backlog | both


@dataclass
class Run:
    """One query run: ms to the first committed batch, its batch times, ms to drain, rows read."""

    first_ms: int
    batch_ms: list[int]
    drain_ms: int
    rows: list[int]


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    """``count`` records (keys ``k0``…, CreateTime one ms apart ending now) over the partitions."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    t0 = int(time.time() * 1000) - count
    for i in range(start, start + count):
        while True:
            try:
                p.produce(topic, key=f"k{i % KEYS}", value=b"x" * 20, partition=i % PARTITIONS,
                          timestamp=t0 + i - start)
                break
            except BufferError:  # the producer's local queue is full: let it deliver
                p.poll(0.5)
    assert p.flush(120) == 0


def query(spark, bootstrap: str, topic: str, cp: Path, limit: int | None, available_now: bool):
    from pyspark.sql import functions as F

    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    if limit is not None:
        reader = reader.option("maxOffsetsPerTrigger", limit)
    df = reader.load().groupBy(F.window("timestamp", "10 seconds"), "key").count()
    w = df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
    w = w.trigger(availableNow=True) if available_now else w.trigger(processingTime="500 milliseconds")
    return w.start()


def _end_ms(p: dict) -> int:
    ts = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
    return int(ts * 1000) + int(p["durationMs"]["triggerExecution"])


def _wait_batches(q, n: int, deadline_s: float = 900) -> None:
    end = time.time() + deadline_s
    while sum(1 for p in q.recentProgress if p["numInputRows"] > 0) < n:
        assert time.time() < end and q.exception() is None, "the query stalled"
        time.sleep(0.2)


def derive_target(spark, bootstrap: str, topic: str, base: Path) -> tuple[int, int]:
    """The bad job as it runs in production: the backlog, then a few small arrivals; then
    streamwatch's rule on its checkpoint → the advised limit, and the records now in the topic."""
    from streamwatch.analysis.advice import Verdict, progress_durations
    from streamwatch.analysis.advice_offsets import max_offsets_per_trigger, read_kafka_batches
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.model.events import QueryProgress

    cp = base / "derive-cp"
    q = query(spark, bootstrap, topic, cp, None, available_now=False)
    try:
        _wait_batches(q, 1)
        for k in range(LATER):
            produce(bootstrap, topic, BACKLOG + k * ARRIVING, ARRIVING)
            _wait_batches(q, k + 2)
        progress = [QueryProgress.from_dict(p) for p in q.recentProgress]
        spark_rows = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"] > 0]
    finally:
        q.stop()
    c = read_checkpoint(str(cp))
    reads = read_kafka_batches(str(cp), c)
    print(f"  Spark numInputRows per batch: {spark_rows}; streamwatch records per batch: "
          f"{[b.records for r in reads for b in r.batches if b.records]}", flush=True)
    (a,) = max_offsets_per_trigger(reads, progress_durations(progress), None, c)
    print(f"  streamwatch advises: {a.summary}; target {a.target}", flush=True)
    for e in a.evidence:
        print(f"    evidence: {e.text}", flush=True)
    assert a.verdict is Verdict.CHANGE and a.target is not None, a
    return a.target, BACKLOG + LATER * ARRIVING


def run_job(spark, bootstrap: str, topic: str, cp: Path, limit: int | None, total: int) -> Run:
    t0 = time.time()
    q = query(spark, bootstrap, topic, cp, limit, available_now=True)
    q.awaitTermination()
    drain = int((time.time() - t0) * 1000)
    assert q.exception() is None, q.exception()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert sum(p["numInputRows"] for p in progress) == total, "the topic was not all read"
    return Run(_end_ms(progress[0]) - int(t0 * 1000), [int(p["durationMs"]["triggerExecution"]) for p in progress],
               drain, [p["numInputRows"] for p in progress])


def report(runs: dict[str, list[Run]], total: int) -> None:
    print(f"\n{ROUNDS} alternated rounds; topic of {total:,} records ({PARTITIONS} partitions) from earliest; "
          f"availableNow; load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; "
          "times from Spark's progress (first batch end) and the wall clock (drain)")
    for arm, rs in runs.items():
        first, drain = Spread.of(r.first_ms for r in rs), Spread.of(r.drain_ms for r in rs)
        print(f"  {arm:10s} records/batch {rs[0].rows[0]:>7,} × {len(rs[0].batch_ms):>3}"
              f"  first batch committed ms median {first.median:>8,.0f} min {first.min:>8,.0f}"
              f"  longest batch ms median {statistics.median(max(r.batch_ms) for r in rs):>8,.0f}"
              f"  drain ms median {drain.median:>8,.0f} min {drain.min:>8,.0f}")
    measures: tuple[tuple[str, Callable[[Run], int]], ...] = (
        ("time to first committed batch", lambda r: r.first_ms),
        ("longest batch", lambda r: max(r.batch_ms)),
        ("time to drain", lambda r: r.drain_ms))
    bad, good = runs["no limit"], runs["advised"]
    for what, measure in measures:
        print_ratio(f"no limit / advised {what}", map(measure, bad), map(measure, good), digits=2)


@dataclass
class Flow:
    """One run of the steady-arrival job: records produced and read, and the backlog at the end."""

    produced: int
    read: int
    batches: int

    @property
    def backlog(self) -> int:
        return self.produced - self.read


def flow_job(spark, bootstrap: str, base: Path, name: str, limit: int) -> tuple[Flow, Path]:
    """The job with ``maxOffsetsPerTrigger`` = ``limit``, a 2 s processing-time trigger, over a
    fresh topic holding ``FLOW_START`` records where ``FLOW_RATE`` records arrive a second for
    ``FLOW_SECONDS`` s. Stops when the producing does; returns the run and its checkpoint."""
    from pyspark.sql import functions as F

    from sample_pipelines.clicks.factory import ensure_topic

    topic, cp = f"flow_{uuid.uuid4().hex[:8]}", base / f"{name}-cp"
    ensure_topic(bootstrap, topic, PARTITIONS)
    produce(bootstrap, topic, 0, FLOW_START)
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", limit).load()
          .groupBy(F.window("timestamp", "10 seconds"), "key").count())
    q = (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
         .trigger(processingTime="2 seconds").start())
    n = FLOW_START
    try:
        for _ in range(FLOW_SECONDS):
            tick = time.time()
            produce(bootstrap, topic, n, FLOW_RATE)
            n += FLOW_RATE
            time.sleep(max(0.0, 1 - (time.time() - tick)))  # a bench paces its arrivals; not a test
    finally:
        q.stop()
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    return Flow(n, sum(p["numInputRows"] for p in progress), len(progress)), cp


def backlog_part(spark, bootstrap: str, base: Path) -> None:
    """Verdict (b): a limit below the arrival rate; streamwatch's advice (the CLI with
    ``--bootstrap``) on that checkpoint must say raise it; then both alternate."""
    import json

    from click.testing import CliRunner

    from streamwatch.cli import main as cli

    _, cp = flow_job(spark, bootstrap, base, "flow-derive", FLOW_LIMIT)
    r = CliRunner().invoke(cli, ["advise", str(cp), "--bootstrap", bootstrap, "--json"])
    (a,) = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-max-offsets-per-trigger"]
    print(f"  streamwatch advises: {a['summary']}; target {a['target']}", flush=True)
    for e in a["evidence"]:
        print(f"    evidence: {e['what']}: {e['value']} {e['unit']} ({e['source']})", flush=True)
    assert a["verdict"] == "change" and a["target"] is not None, a
    limits: dict[str, int] = {f"limit {FLOW_LIMIT}": FLOW_LIMIT, f"advised {a['target']}": a["target"]}
    runs = alternate(list(limits), ROUNDS,
                     lambda arm, r: flow_job(spark, bootstrap, base, f"flow-{limits[arm]}-{r}", limits[arm])[0])
    print(f"\n{ROUNDS} alternated rounds; {FLOW_START:,} records, then {FLOW_RATE} records/s for {FLOW_SECONDS} s; "
          f"load average {os.getloadavg()[0]:.1f} (1 min); backlog at the end = records produced − records Spark "
          "read (progress numInputRows)")
    for arm, fs in runs.items():
        backlog = Spread.of(f.backlog for f in fs)
        print(f"  {arm:14s} backlog at end median {backlog.median:>7,.0f} min {backlog.min:>7,.0f}"
              f"  records read median {statistics.median(f.read for f in fs):>7,.0f} of {fs[0].produced:,}"
              f"  batches median {statistics.median(f.batches for f in fs):>4,.0f}")
    bad_b, good_b = (statistics.median(f.backlog for f in fs) for fs in runs.values())
    print(f"  backlog at end: {bad_b:,.0f} → {good_b:,.0f} records")


def main() -> None:
    from streamwatch.spark.kafka_broker import LocalKafka
    from streamwatch.spark.session import SessionConfig, create_session

    from sample_pipelines.clicks.factory import ensure_topic

    print(f"load average {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores; starting the broker …", flush=True)
    broker = LocalKafka.start(partitions=PARTITIONS)
    try:
        with tempfile.TemporaryDirectory(prefix="advise-offsets-bench-") as tmp:
            base = Path(tmp)
            topic = f"bench_{uuid.uuid4().hex[:8]}"
            ensure_topic(broker.bootstrap, topic, PARTITIONS)
            produce(broker.bootstrap, topic, 0, BACKLOG)
            print("starting Spark (local[2]) …", flush=True)
            spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False,
                                                    shuffle_partitions=4))
            try:
                if PART in ("backlog", "both"):
                    backlog_part(spark, broker.bootstrap, base)
                if PART == "backlog":
                    return
                target, total = derive_target(spark, broker.bootstrap, topic, base)
                limits: dict[str, int | None] = {"no limit": None, "advised": target}
                report(alternate(list(limits), ROUNDS,
                                 lambda arm, r: run_job(spark, broker.bootstrap, topic,
                                                        base / f"{arm.replace(' ', '-')}-{r}", limits[arm], total)),
                       total)
            finally:
                spark.stop()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
