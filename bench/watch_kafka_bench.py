"""Benchmark: the broker requests ``streamwatch watch --bootstrap`` makes per poll for the Kafka
sources of many watched checkpoints, against the naive way (per checkpoint and partition, one
end-offset lookup and one fetch of the first unread record, every poll).

Starts a single-node broker on loopback (``make jars``: the ``kafka-broker`` set), creates a
topic of ``--partitions`` partitions with ``--records`` records each (CreateTime one second
apart, ending now), and writes ``--checkpoints`` checkpoints in Spark's layout (``metadata``,
``offsets/N`` with a ``KafkaSourceOffset``, ``commits/N``) whose committed offsets are spread
over the topic (checkpoint i at 100 + 5·i on every partition). Every poll a writer advances
one checkpoint in ``--commit-every`` by a new batch (3 records further on every partition),
the same for both sides. Rounds alternate: ``--polls`` polls of a
:class:`~streamwatch.analysis.session.CheckpointWatch` with ``--bootstrap`` (lags measured
every poll: ``--poll 5``, the default lag cadence), then ``--naive-polls`` polls of the naive
way.

Requests are counted at the client: librdkafka's statistics (``brokers.*.req``, every request
type: ListOffsets, Fetch, Metadata, FindCoordinator, ApiVersion…) of each side's clients,
read after each block; the calls into the adapter (:class:`BrokerOffsets`) are counted too by
wrapping its two broker methods. Prints requests per partition per poll for both; target
≤ 1 for streamwatch.

    .venv/bin/python bench/watch_kafka_bench.py [--checkpoints 200] [--partitions 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # sample_pipelines, from a checkout

QID = "00000000-0000-4000-8000-{:012d}"


class Requests:
    """Cumulative librdkafka request counts of one side's clients (by client name)."""

    def __init__(self) -> None:
        self.by_client: dict[str, Counter[str]] = {}

    def __call__(self, stats: str) -> None:
        doc = json.loads(stats)
        total: Counter[str] = Counter()
        for broker in doc["brokers"].values():
            total.update({k: v for k, v in broker["req"].items() if v})
        self.by_client[doc["name"]] = total

    def total(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for c in self.by_client.values():
            out.update(c)
        return out


class Checkpoints:
    """``n`` checkpoints under ``root`` reading ``topic``'s ``partitions``."""

    def __init__(self, root: Path, n: int, topic: str, partitions: int) -> None:
        self.root, self.topic, self.partitions = root, topic, partitions
        self.batch = [0] * n
        self.offset = [100 + 5 * i for i in range(n)]
        for i in range(n):
            cp = root / f"cp{i:03d}"
            (cp / "offsets").mkdir(parents=True)
            (cp / "commits").mkdir()
            (cp / "metadata").write_text(json.dumps({"id": QID.format(i)}))
            self._write(i)

    def _write(self, i: int) -> None:
        cp, b = self.root / f"cp{i:03d}", self.batch[i]
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": {}}
        src = {self.topic: {str(p): self.offset[i] for p in range(self.partitions)}}
        (cp / "offsets" / str(b)).write_text(f"v1\n{json.dumps(meta)}\n{json.dumps(src)}")
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')

    def advance(self, poll: int, every: int) -> None:
        """A new committed batch, 3 records on, for every ``every``-th checkpoint (by ``poll``)."""
        for i in range(poll % every, len(self.batch), every):
            self.batch[i] += 1
            self.offset[i] += 3
            self._write(i)

    def committed(self) -> list[dict[tuple[str, int], int]]:
        return [{(self.topic, p): off for p in range(self.partitions)} for off in self.offset]


def _settle(*clients) -> None:
    """Let librdkafka emit its statistics (every 100 ms) and serve them."""
    time.sleep(0.35)
    for c in clients:
        c.serve_stats()


def _counted(broker, calls: Counter[str]):
    """Wrap the adapter's two broker methods to count calls and partitions asked."""
    end, first = broker.end_offsets, broker.first_record_ms

    def end_offsets(partitions):
        calls["end_offsets calls"] += 1
        calls["end_offsets partitions"] += len(partitions)
        return end(partitions)

    def first_record_ms(positions):
        calls["first_record calls"] += 1
        calls["first_record partitions"] += len(positions)
        return first(positions)

    broker.end_offsets, broker.first_record_ms = end_offsets, first_record_ms
    return broker


def _naive_poll(broker, cps: Checkpoints) -> None:
    """Per checkpoint, per partition: one end-offset lookup, one fetch when behind."""
    for committed in cps.committed():
        for tp, off in committed.items():
            end = broker.end_offsets([tp]).offsets.get(tp)
            if end is not None and off < end:
                broker.first_record_ms({tp: off})


def _produce(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    # recent CreateTimes: the broker's time retention (7 days) would delete older ones while the bench runs
    t0 = int(time.time() * 1000) - 1000 * records
    for part in range(partitions):
        for i in range(records):
            p.produce(topic, value=b"x" * 100, partition=part, timestamp=t0 + 1000 * i)
    assert p.flush(120) == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoints", type=int, default=200)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--records", type=int, default=3000, help="records per partition")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--polls", type=int, default=10, help="streamwatch polls per round")
    ap.add_argument("--naive-polls", type=int, default=1, help="naive polls per round")
    ap.add_argument("--commit-every", type=int, default=10, help="each checkpoint commits a batch every N polls")
    a = ap.parse_args()

    from streamwatch.analysis.session import CheckpointWatch
    from streamwatch.analysis.watch_kafka import KafkaOffsets
    from streamwatch.spark.kafka_broker import LocalKafka
    from streamwatch.spark.kafka_lag import BrokerOffsets

    from sample_pipelines.clicks.factory import ensure_topic

    broker = LocalKafka.start()
    try:
        topic = f"bench_{uuid.uuid4().hex[:8]}"
        ensure_topic(broker.bootstrap, topic, a.partitions)
        _produce(broker.bootstrap, topic, a.partitions, a.records)
        with tempfile.TemporaryDirectory() as tmp:
            cps = Checkpoints(Path(tmp), a.checkpoints, topic, a.partitions)
            ours, naive = Requests(), Requests()
            ours_calls, naive_calls = Counter[str](), Counter[str]()
            mine = BrokerOffsets(broker.bootstrap, stats_cb=ours)
            theirs = BrokerOffsets(broker.bootstrap, stats_cb=naive)
            _counted(mine, ours_calls)
            _counted(theirs, naive_calls)
            watch = CheckpointWatch([tmp], poll_s=5.0, rediscover_s=None, kafka=KafkaOffsets(mine))
            t = time.perf_counter()
            records = watch.open()
            lags = [r for r in records if r.kind == "source-lag"]
            _settle(mine)
            opened = ours.total()
            print(f"{a.checkpoints} checkpoints × {a.partitions} partitions of one topic; open(): "
                  f"{sum(opened.values())} requests {dict(opened)} in {time.perf_counter() - t:.1f} s; "
                  f"{len(lags)} source-lag records, {sum(1 for x in lags if x.lag_s is not None)} with a lag")
            rows: list[tuple[str, int, float, float]] = []
            poll = 0
            for r in range(a.rounds):
                for side in ("streamwatch", "naive"):
                    counts, client = (ours, mine) if side == "streamwatch" else (naive, theirs)
                    before = sum(counts.total().values())
                    n = a.polls if side == "streamwatch" else a.naive_polls
                    t = time.perf_counter()
                    for _ in range(n):
                        cps.advance(poll, a.commit_every)
                        poll += 1
                        watch.poll() if side == "streamwatch" else _naive_poll(client, cps)
                    secs = time.perf_counter() - t
                    _settle(client)
                    made = sum(counts.total().values()) - before
                    rows.append((side, n, made / n / a.partitions, secs / n))
                    print(f"round {r + 1} {side:<11} {n:>3} polls: {made:>6} requests = "
                          f"{made / n / a.partitions:8.3f} per partition per poll ({secs / n:.2f} s/poll)")
            for side in ("streamwatch", "naive"):
                mine_rows = [x for x in rows if x[0] == side]
                per = sum(x[2] * x[1] for x in mine_rows) / sum(x[1] for x in mine_rows)
                print(f"{side:<11}: {per:.3f} requests per partition per poll (mean over rounds)")
            print(f"streamwatch by type since open: {dict(ours.total() - opened)}")
            print(f"naive by type: {dict(naive.total())}")
            print(f"adapter calls, streamwatch (open + polls): {dict(ours_calls)}")
            print(f"adapter calls, naive: {dict(naive_calls)}")
            mine.close()
            theirs.close()
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
