"""Click events produced to a Kafka topic (``clicks``, 3 partitions), keyed by user id.

Each event is JSON ``{"click_id": str, "user_id": str, "page": str, "ts": ISO-8601 UTC}``; event
time advances 5 s per click from 2026-01-01T00:00:00Z. ``late_ratio`` of the events carry a
time 2 h in the past (behind gold's 10-minute watermark, so gold drops them); ``bad_ratio`` of
them are not JSON (silver filters them out; bronze keeps them).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

from sample_pipelines.common import check_ratios

TOPIC = "clicks"
PARTITIONS = 3
PAGES = ("/", "/search", "/product", "/cart", "/checkout")
START = datetime(2026, 1, 1, tzinfo=timezone.utc)


def ensure_topic(bootstrap: str, topic: str = TOPIC, partitions: int = PARTITIONS, timeout_s: float = 60.0) -> None:
    """Create ``topic`` with ``partitions`` partitions (replication 1) unless it exists.
    Raises ``confluent_kafka.KafkaException`` when the broker refuses or times out."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    if topic in admin.list_topics(timeout=timeout_s).topics:
        return
    for fut in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        fut.result(timeout_s)


class ClicksProducer:
    """Produces click events to ``topic`` on ``bootstrap`` (``HOST:PORT``); ``seed`` makes the
    sequence reproducible. Raises ``ValueError`` for a ratio outside [0, 1]."""

    def __init__(self, bootstrap: str, *, topic: str = TOPIC, late_ratio: float = 0.0,
                 bad_ratio: float = 0.0, seed: int = 7) -> None:
        check_ratios(late_ratio=late_ratio, bad_ratio=bad_ratio)
        self.bootstrap, self.topic = bootstrap, topic
        self.late_ratio, self.bad_ratio = late_ratio, bad_ratio
        self._rng = random.Random(seed)
        self.produced = 0
        self.bad = 0
        self.late = 0

    def produce(self, n: int = 100, timeout_s: float = 60.0) -> int:
        """Produce ``n`` events and wait until the broker acknowledged all of them; returns
        ``n``. Raises ``RuntimeError`` when some were not delivered within ``timeout_s`` s."""
        from confluent_kafka import Producer

        ensure_topic(self.bootstrap, self.topic)
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})
        failed: list[str] = []

        def on_delivery(err, _msg) -> None:
            if err is not None:
                failed.append(str(err))

        for _ in range(n):
            i = self.produced
            self.produced += 1
            user = f"u{self._rng.randrange(20):02d}"
            ts = START + timedelta(seconds=5 * i)
            roll = self._rng.random()
            if roll < self.bad_ratio:
                self.bad += 1
                value = f"not json #{i}"
            else:
                if roll < self.bad_ratio + self.late_ratio:
                    self.late += 1
                    ts -= timedelta(hours=2)
                value = json.dumps({"click_id": f"c{i:07d}", "user_id": user,
                                    "page": self._rng.choice(PAGES), "ts": ts.strftime("%Y-%m-%dT%H:%M:%SZ")})
            producer.produce(self.topic, key=user.encode(), value=value.encode(), on_delivery=on_delivery)
            producer.poll(0)
        left = producer.flush(timeout_s)
        if left or failed:
            raise RuntimeError(f"{left} click events not delivered to {self.bootstrap}: {failed[:1]}")
        return n
