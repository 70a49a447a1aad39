"""Benchmark: is ``advise-real-time-mode``'s advice worth taking? A Kafka → stateless map → Kafka
query on the loopback broker (``LocalKafka``), one local[2] Spark, run as a latency-sensitive
user configures it badly (``processingTime=1s``), with the default trigger (micro-batches back
to back: the best a micro-batch does) and as streamwatch advises (real-time mode), the arms
alternated (``bench.rounds``) for ``ADVISE_BENCH_ROUNDS`` rounds (default 5); per arm the
median and the min over rounds.

streamwatch's rule (:func:`streamwatch.analysis.advice_realtime.real_time_mode`) runs first on a
``processingTime=1s`` run's checkpoint and progress; it must say ``change``. Per run: each of
``RECORDS`` records is produced ``RATE`` a second (after a warm-up record went through), the
query adds its input ``timestamp`` (the producer's CreateTime, epoch ms) to the value, the
output topic stamps ``LogAppendTime`` (the broker's clock when the sink's record was appended):
a record's latency is the two subtracted, both read off Kafka, not off streamwatch or Spark.
p50 and p99 per run. The real-time arm runs ``realTime=RTM_INTERVAL`` (its checkpoint interval;
shorter than the advised 5 minutes so that an interval boundary falls inside every run). Not
run in CI.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, alternate, print_ratio  # noqa: E402

ROUNDS = int(os.environ.get("ADVISE_BENCH_ROUNDS", "5"))
RECORDS, RATE = int(os.environ.get("ADVISE_BENCH_RECORDS", "200")), 20.0
BAD, DEFAULT, RTM_INTERVAL = "processingTime=1s", "default", "realTime=10s"


def create_topics(bootstrap: str, run: str) -> tuple[str, str]:
    """A 1-partition input topic and a 1-partition output topic stamping LogAppendTime."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    src, dst = f"rtb_in_{run}", f"rtb_out_{run}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futs = admin.create_topics([NewTopic(src, 1, 1),
                                NewTopic(dst, 1, 1, config={"message.timestamp.type": "LogAppendTime"})])
    for f in futs.values():
        f.result(60)
    return src, dst


def start(spark: Any, bootstrap: str, src: str, dst: str, cp: Path, arm: str) -> Any:
    from streamwatch.analysis.triggers import parse_trigger

    w = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", src)
         .option("startingOffsets", "earliest").load()
         .selectExpr("key", "concat(upper(CAST(value AS STRING)), '|', CAST(unix_millis(timestamp) AS STRING)) AS value")
         .writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", dst)
         .option("checkpointLocation", str(cp)).outputMode("update"))
    kwargs = parse_trigger(arm).kwargs()
    return (w.trigger(**kwargs) if kwargs else w).start()


class Output:
    """A consumer of the output topic: (value, LogAppendTime ms) per record read."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"b-{uuid.uuid4()}",
                           "auto.offset.reset": "earliest"})
        self.c.subscribe([topic])
        self.got: list[tuple[str, int]] = []

    def until(self, n: int, q: Any, deadline_s: float) -> None:
        end = time.monotonic() + deadline_s
        while len(self.got) < n:
            if time.monotonic() > end or q.exception() is not None:
                raise TimeoutError(f"{len(self.got)} of {n} records out; {q.exception()}")
            m = self.c.poll(0.2)
            if m is not None and m.error() is None:
                self.got.append((m.value().decode(), m.timestamp()[1]))


@dataclass
class Run:
    """One run: its record latencies' p50 and p99 (ms), and the query's progress (Spark's JSON)."""

    p50: float
    p99: float
    progress: list[dict[str, Any]]


def run_once(spark: Any, bootstrap: str, base: Path, arm: str, r: int) -> Run:
    from confluent_kafka import Producer

    tag = f"{arm.split('=')[0]}_{r}_{uuid.uuid4().hex[:6]}"
    src, dst = create_topics(bootstrap, tag)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    out = Output(bootstrap, dst)
    q = start(spark, bootstrap, src, dst, base / f"cp-{tag}", arm)
    try:
        producer.produce(src, key="warm", value="warm")
        producer.flush(30)
        out.until(1, q, 300)
        t0 = time.monotonic()
        for i in range(RECORDS):
            time.sleep(max(0.0, t0 + i / RATE - time.monotonic()))  # the producer's pace, not a wait for Spark
            producer.produce(src, key=str(i), value=f"r{i}")
            producer.poll(0)
        assert producer.flush(30) == 0
        out.until(RECORDS + 1, q, 300)
        import json

        progress = [json.loads(p.json) for p in q.recentProgress]
    finally:
        q.stop()
        out.c.close()
    lat = sorted(ts - int(v.rsplit("|", 1)[1]) for v, ts in out.got if not v.startswith("WARM"))
    assert len(lat) == RECORDS, len(lat)
    return Run(statistics.median(lat), lat[int(0.99 * (len(lat) - 1))], progress)


def advised(spark: Any, bootstrap: str, base: Path) -> str:
    """A processingTime=1s run; streamwatch's rule on its checkpoint and progress → the advised trigger."""
    from streamwatch.analysis.advice import Verdict, progress_durations
    from streamwatch.analysis.advice_realtime import real_time_mode
    from streamwatch.analysis.triggers import parse_trigger
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.model.events import QueryProgress

    run = run_once(spark, bootstrap, base / "derive", BAD, 0)
    cp = read_checkpoint(str(next((base / "derive").glob("cp-*"))))
    progress = [QueryProgress.from_dict(p) for p in run.progress]
    a = real_time_mode(parse_trigger(BAD), cp, progress, progress_durations(progress))
    assert a.verdict is Verdict.CHANGE, a
    print(f"  streamwatch advises: {a.summary}\n  action: {a.action}", flush=True)
    return RTM_INTERVAL


def main() -> None:
    from streamwatch.spark.kafka_broker import LocalKafka
    from streamwatch.spark.session import SessionConfig, create_session

    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f} "
          f"on {os.cpu_count()} cores", flush=True)
    with tempfile.TemporaryDirectory(prefix="advise-realtime-bench-") as tmp, LocalKafka.start() as broker:
        base = Path(tmp)
        print("starting Spark (local[2]) …", flush=True)
        # no table format given: the session loads the jars `make jars` resolved, the Kafka connector among them
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False, shuffle_partitions=2))
        try:
            rtm = advised(spark, broker.bootstrap, base)
            arms = (BAD, DEFAULT, rtm)
            runs = alternate(arms, ROUNDS, lambda arm, r: run_once(spark, broker.bootstrap, base, arm, r))
        finally:
            spark.stop()
    print(f"\nKafka → stateless map → Kafka, {ROUNDS} alternated rounds, {RECORDS} records at {RATE:.0f}/s; record "
          "latency = output LogAppendTime − input CreateTime (ms)")
    for arm, rs in runs.items():
        p50, p99 = Spread.of(x.p50 for x in rs), Spread.of(x.p99 for x in rs)
        print(f"  {arm:20s} p50 median {p50.median:7,.0f} min {p50.min:7,.0f}   p99 median {p99.median:7,.0f} "
              f"min {p99.min:7,.0f}")
    for slow in (BAD, DEFAULT):
        print_ratio(f"{slow} / {rtm} p50 latency", [x.p50 for x in runs[slow]], [x.p50 for x in runs[rtm]])
        print_ratio(f"{slow} / {rtm} p99 latency", [x.p99 for x in runs[slow]], [x.p99 for x in runs[rtm]])
    print(f"load average {os.getloadavg()[0]:.1f} {os.getloadavg()[1]:.1f} {os.getloadavg()[2]:.1f}")


if __name__ == "__main__":
    main()
