"""Kafka lag in seconds, held against the broker and Spark: records produced with known
timestamps, an availableNow query that reads what is there (Spark's own progress says how
many rows and which end offsets), more records after it; the lag per partition is since the
broker timestamp of the first record the query has not read. Skipped, saying why, without the
jars of `make jars` (the loopback broker and Spark's Kafka connector)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
EXE = str(Path(sys.executable).with_name("streamwatch"))


def _produce(bootstrap: str, topic: str, partition: int, stamps: list[int]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i, ts in enumerate(stamps):
        p.produce(topic, value=f"r{partition}-{i}", partition=partition, timestamp=ts)
    assert p.flush(60) == 0


def test_seconds_behind_is_since_the_first_unread_records_timestamp(spark, kafka_broker, tmp_path):
    from streamwatch.sample_pipelines.clicks.factory import ensure_topic
    from streamwatch.spark.kafka_lag import kafka_lag

    topic = f"lag_{uuid.uuid4().hex[:8]}"
    ensure_topic(kafka_broker, topic, 2)
    t0 = int(time.time() * 1000) - 3_600_000
    _produce(kafka_broker, topic, 0, [t0 + 1000 * i for i in range(5)])
    _produce(kafka_broker, topic, 1, [t0 + 500 * i for i in range(3)])
    cp = tmp_path / "cp"
    q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker)
         .option("subscribe", topic).option("startingOffsets", "earliest").load()
         .writeStream.format("noop").option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination()
    progress = [json.loads(p.json()) for p in q._jsq.recentProgress()]
    assert sum(p["numInputRows"] for p in progress) == 8
    assert progress[-1]["sources"][0]["endOffset"] == {topic: {"0": 5, "1": 3}}

    t1 = t0 + 1_800_000
    _produce(kafka_broker, topic, 0, [t1 + 1000 * i for i in range(3)])
    before = int(time.time() * 1000)
    lags, findings = kafka_lag(cp, kafka_broker)
    after = int(time.time() * 1000)
    assert findings == []
    assert [(x.partition, x.committed, x.latest, x.lag, x.oldest_unread_ms) for x in lags] == [
        (0, 5, 8, 3, t1), (1, 3, 3, 0, None)]

    out = subprocess.run([EXE, "inspect", str(cp), "--kafka-bootstrap", kafka_broker, "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)["kafkaLag"]
    assert doc["total"] == 3
    assert doc["lagSeconds"] == (doc["atMs"] - t1) / 1000
    assert before <= doc["atMs"] and doc["lagSeconds"] >= (after - t1) / 1000 - 120
    assert [(p["partition"], p["oldestUnreadMs"], p["lagSeconds"]) for p in doc["partitions"]] == [
        (0, t1, (doc["atMs"] - t1) / 1000), (1, None, 0.0)]
