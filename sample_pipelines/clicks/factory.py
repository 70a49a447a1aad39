"""Click events produced to a Kafka topic (``clicks``, 3 partitions), keyed by user id.

Each event is JSON ``{"click_id": str, "user_id": str, "page": str, "ts": ISO-8601 UTC}``; event
time advances 5 s per click from 2026-01-01T00:00:00Z. ``late_ratio`` of the events carry a
time 2 h in the past (behind gold's 10-minute watermark, so gold drops them); ``bad_ratio`` of
them are not JSON (silver filters them out; bronze keeps them).
"""

from __future__ import annotations

import json
import logging
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from streamwatch.pipeline import KAFKA_BOOTSTRAP_FILE

from ..common import check_ratios

if TYPE_CHECKING:
    from confluent_kafka import KafkaError, Message

TOPIC = "clicks"
PARTITIONS = 3
PAGES = ("/", "/search", "/product", "/cart", "/checkout")
START = datetime(2026, 1, 1, tzinfo=UTC)
#: How long ``land`` tries to reach the broker before it gives up (s)
CONNECT_TIMEOUT_S = 5.0

#: librdkafka's own log lines (``%3|…|FAIL|rdkafka#producer-1| … Connection refused``, one
#: per reconnect) go to this logger instead of stderr; it has no handler and does not
#: propagate, so a broker that is down is reported once, by the caller, as one line.
_QUIET = logging.getLogger("sample_pipelines.clicks.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class KafkaUnreachable(OSError):
    """The broker did not answer a metadata request within the connect timeout (one line)."""


def _client_conf(bootstrap: str) -> dict[str, object]:
    return {"bootstrap.servers": bootstrap, "logger": _QUIET}


def ensure_topic(bootstrap: str, topic: str = TOPIC, partitions: int = PARTITIONS, timeout_s: float = 60.0,
                 connect_timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Create ``topic`` with ``partitions`` partitions (replication 1) unless it exists.
    Raises :class:`KafkaUnreachable` when the broker does not answer a metadata request
    within ``connect_timeout_s`` s, ``confluent_kafka.KafkaException`` when it refuses or
    the topic is not created within ``timeout_s`` s."""
    from confluent_kafka import KafkaException

    # confluent_kafka.admin is NewTopic's documented home; its stub imports it from cimpl without re-exporting
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    # the stub types conf values as str/int/float/bool; the client also takes a logging.Logger as 'logger'
    admin = AdminClient(_client_conf(bootstrap))  # type: ignore[arg-type]
    try:
        topics = admin.list_topics(timeout=min(timeout_s, connect_timeout_s)).topics
    except KafkaException as e:
        why = e.args[0].str() if e.args and hasattr(e.args[0], "str") else str(e)
        raise KafkaUnreachable(f"cannot reach Kafka at {bootstrap}: {why} "
                               f"(no answer within {min(timeout_s, connect_timeout_s):g} s)") from None
    if topic in topics:
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
        ``n``. Raises :class:`KafkaUnreachable` when the broker does not answer within
        :data:`CONNECT_TIMEOUT_S` s, ``RuntimeError`` when some were not delivered within
        ``timeout_s`` s, ``confluent_kafka.KafkaException`` when the broker refuses."""
        from confluent_kafka import Producer

        ensure_topic(self.bootstrap, self.topic, timeout_s=timeout_s)
        producer = Producer({**_client_conf(self.bootstrap), "acks": "all", "linger.ms": 5})
        failed: list[str] = []
        #: partition → (first, last) offset acknowledged by the broker in this call
        self.last_offsets: dict[int, tuple[int, int]] = {}

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                failed.append(str(err))
                return
            partition, offset = msg.partition(), msg.offset()
            assert partition is not None and offset is not None, "a delivered message has both"
            first, _last = self.last_offsets.get(partition, (offset, offset))
            self.last_offsets[partition] = (min(first, offset), max(_last, offset))

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


class ClicksLanding:
    """The clicks pipeline's data factory (:class:`streamwatch.pipeline.DataFactory`): each
    "file" landed is a batch of ``events_per_file`` click events produced to the Kafka topic,
    recorded as a small JSON manifest ``batch-NNNNNN.json`` in ``directory`` (events, bad,
    late, and the partition → [first, last] offsets the broker acknowledged); the manifests
    are what ``land`` returns, and numbering resumes after the ones already there.

    The broker is ``bootstrap`` (``HOST:PORT``) or, when None, the one recorded in
    ``directory/.kafka-bootstrap`` by the ``streamwatch run``/``log`` that started it.
    Raises ``ValueError`` (one line) for a ratio outside [0, 1] or when no broker is known;
    ``land`` raises :class:`KafkaUnreachable` when the broker does not answer within
    :data:`CONNECT_TIMEOUT_S` s, ``confluent_kafka.KafkaException`` / ``RuntimeError`` when
    it does not take the events within ``timeout_s`` s. Never exhausted."""

    exhausted = False

    def __init__(self, directory: str | os.PathLike[str], *, bootstrap: str | None = None,
                 late_ratio: float = 0.0, bad_ratio: float = 0.0, events_per_file: int = 100,
                 timeout_s: float = 30.0) -> None:
        check_ratios(late_ratio=late_ratio, bad_ratio=bad_ratio)
        self.directory = Path(directory)
        known = bootstrap or recorded_bootstrap(self.directory)
        if not known:
            raise ValueError(f"no Kafka broker known for {self.directory}: pass --kafka-bootstrap HOST:PORT, "
                             "or run `streamwatch run/log --pipeline clicks` on this workspace")
        self.bootstrap: str = known
        self.late_ratio, self.bad_ratio = late_ratio, bad_ratio
        self.events_per_file, self.timeout_s = events_per_file, timeout_s

    def _next_number(self) -> int:
        numbers = [int(p.stem.split("-")[1]) for p in self.directory.glob("batch-*.json")
                   if p.stem.split("-")[1].isdigit()]
        return max(numbers, default=0) + 1

    def land(self, n_files: int = 1) -> list[Path]:
        """Produce ``n_files`` batches; returns their manifests' paths."""
        self.directory.mkdir(parents=True, exist_ok=True)
        out = []
        for _ in range(n_files):
            number = self._next_number()
            producer = ClicksProducer(self.bootstrap, late_ratio=self.late_ratio, bad_ratio=self.bad_ratio,
                                      seed=number)
            producer.produced = (number - 1) * self.events_per_file  # event time continues
            producer.produce(self.events_per_file, timeout_s=self.timeout_s)
            manifest = {"topic": producer.topic, "bootstrap": self.bootstrap, "events": self.events_per_file,
                        "bad": producer.bad, "late": producer.late,
                        "offsets": {str(p): list(r) for p, r in sorted(producer.last_offsets.items())}}
            final = self.directory / f"batch-{number:06d}.json"
            tmp = self.directory / f".{final.name}.tmp"
            tmp.write_text(json.dumps(manifest) + "\n")
            os.replace(tmp, final)
            out.append(final)
        return out


def recorded_bootstrap(directory: Path) -> str | None:
    """The broker address a running ``streamwatch run``/``log`` recorded in ``directory``
    (``.kafka-bootstrap``), or None."""
    try:
        return (directory / KAFKA_BOOTSTRAP_FILE).read_text().strip() or None
    except OSError:
        return None
