"""`streamwatch watch --log --bootstrap` gives each Kafka source a `source-lag` record and
gauges, held against a real broker on loopback and Spark's own checkpoint: records produced
with known broker timestamps (CreateTime) after an availableNow query stopped; the query's
committed offsets read from the offsets log Spark wrote (parsed here, not by streamwatch); the
broker's end offsets asked with confluent-kafka's own consumer. Skipped, saying why, without
the jars of `make jars` (the loopback broker and Spark's Kafka connector)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark
EXE = str(Path(sys.executable).parent / "streamwatch")


def _produce(bootstrap: str, topic: str, partition: int, stamps: list[int]) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i, ts in enumerate(stamps):
        p.produce(topic, value=f"r{partition}-{i}", partition=partition, timestamp=ts)
    assert p.flush(60) == 0


def _spark_committed(cp: Path) -> dict[tuple[str, int], int]:
    """The Kafka offsets the newest committed batch ends at, parsed from Spark's
    ``offsets/<N>`` (line 3: KafkaSourceOffset JSON) for the highest N in ``commits/``."""
    last = max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdecimal())
    source = json.loads((cp / "offsets" / str(last)).read_text().splitlines()[2])
    return {(t, int(p)): off for t, parts in source.items() for p, off in parts.items()}


def _broker_ends(bootstrap: str, partitions) -> dict[tuple[str, int], int]:
    """The broker's high watermark per partition, by confluent-kafka's consumer."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-watermarks"})
    try:
        return {(t, p): c.get_watermark_offsets(TopicPartition(t, p), timeout=30)[1] for t, p in partitions}
    finally:
        c.close()


@pytest.fixture(scope="module")
def stopped_query(spark, kafka_broker, tmp_path_factory):
    """A 2-partition topic read to its end by an availableNow query (Spark's progress says 8
    rows, end offsets 5 and 3), then 3 records produced on partition 0 with CreateTime ``t1``,
    ``t1``+1 s, ``t1``+2 s and 2 on partition 1 from ``t1``+5 s while it is stopped. Returns
    (checkpoint, topic, t1)."""
    from sample_pipelines.clicks.factory import ensure_topic

    topic = f"wlag_{uuid.uuid4().hex[:8]}"
    ensure_topic(kafka_broker, topic, 2)
    t0 = int(time.time() * 1000) - 3_600_000
    _produce(kafka_broker, topic, 0, [t0 + 1000 * i for i in range(5)])
    _produce(kafka_broker, topic, 1, [t0 + 500 * i for i in range(3)])
    cp = tmp_path_factory.mktemp("wlag") / "cp"
    q = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker)
         .option("subscribe", topic).option("startingOffsets", "earliest").load()
         .writeStream.format("noop").option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination()
    progress = [json.loads(p.json()) for p in q._jsq.recentProgress()]
    assert sum(p["numInputRows"] for p in progress) == 8
    assert progress[-1]["sources"][0]["endOffset"] == {topic: {"0": 5, "1": 3}}
    t1 = int(time.time() * 1000) - 90_000  # stopped for 90 s before the first unread record
    _produce(kafka_broker, topic, 0, [t1 + 1000 * i for i in range(3)])
    _produce(kafka_broker, topic, 1, [t1 + 5000 + 1000 * i for i in range(2)])
    return cp, topic, t1


def test_once_writes_the_kafka_sources_lag_in_seconds(stopped_query, kafka_broker):
    cp, topic, t1 = stopped_query
    committed = _spark_committed(cp)
    assert committed == {(topic, 0): 5, (topic, 1): 3}
    ends = _broker_ends(kafka_broker, committed)
    before = int(time.time() * 1000)
    r = subprocess.run([EXE, "watch", str(cp), "--log", "--once", "--bootstrap", kafka_broker],
                       capture_output=True, text=True, timeout=120)
    after = int(time.time() * 1000)
    assert r.returncode in (0, 1), r.stderr  # 1: the stopped query judged stuck is not this test's question
    records = [json.loads(line) for line in r.stdout.splitlines()]
    (lag,) = [x for x in records if x["kind"] == "source-lag"]
    assert (lag["source"], lag["sourceKind"], lag["reason"]) == ("0", "kafka", None)
    assert lag["backlog"] == sum(ends[tp] - off for tp, off in committed.items()) == 5
    assert lag["oldestUnreadMs"] == t1  # partition 0's first unread record: the oldest over partitions
    assert lag["lagSeconds"] == (lag["atMs"] - t1) / 1000  # the max over partitions
    assert before <= lag["atMs"] <= after
    # the health window judged on the same backlog
    (health,) = [x for x in records if x["kind"] == "query-health"]
    assert health["backlog"] == 5
    assert health["lagSeconds"] == lag["lagSeconds"]


def test_prometheus_serves_the_kafka_lag(stopped_query, kafka_broker):
    cp, topic, t1 = stopped_query
    committed = _spark_committed(cp)
    ends = _broker_ends(kafka_broker, committed)
    p = subprocess.Popen([EXE, "watch", str(cp), "--log", "--poll", "0.2", "--prometheus", "0",
                          "--bootstrap", kafka_broker], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = next(line.split("metrics at ", 1)[1].strip() for line in p.stderr if "metrics at " in line)
        assert p.stdout is not None
        first = next(rec for line in p.stdout if (rec := json.loads(line))["kind"] == "source-lag")
        metrics = urllib.request.urlopen(url, timeout=10).read().decode()
        scraped = int(time.time() * 1000)
    finally:
        p.terminate()
        p.wait(30)
    labels = f'id="{first["id"]}",query="cp",source="0"'
    backlog = sum(ends[tp] - off for tp, off in committed.items())
    assert f"streamwatch_checkpoint_source_backlog_records{{{labels}}} {float(backlog)}" in metrics, metrics
    assert "streamwatch_checkpoint_source_backlog_files{" not in metrics
    gauge = next(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
                 if line.startswith(f"streamwatch_checkpoint_source_lag_seconds{{{labels}}}"))
    assert first["lagSeconds"] <= gauge <= (scraped - t1) / 1000  # set at the first or a later poll


def test_one_end_offset_lookup_per_poll_for_every_watched_checkpoint(stopped_query, kafka_broker, tmp_path):
    """Three copies of the checkpoint on the same partitions: each poll asks the broker's end
    offsets once for all of them; the first unread record of each partition is fetched once,
    at the first look, and never again while the committed offsets stay."""
    from streamwatch.analysis.session import CheckpointWatch
    from streamwatch.analysis.watch_kafka import KafkaOffsets
    from streamwatch.spark.kafka_lag import BrokerOffsets

    cp, topic, t1 = stopped_query
    for i in range(3):
        shutil.copytree(cp, tmp_path / f"q{i}")
    calls: list[tuple[str, int]] = []

    class Counted(BrokerOffsets):
        def end_offsets(self, partitions):
            calls.append(("end", len(partitions)))
            return super().end_offsets(partitions)

        def first_record_ms(self, positions):
            calls.append(("first", len(positions)))
            return super().first_record_ms(positions)

    watch = CheckpointWatch([str(tmp_path)], poll_s=5.0, kafka=KafkaOffsets(Counted(kafka_broker)))
    opened = [r for r in watch.open() if r.kind == "source-lag"]
    assert len(opened) == 3 and {(r.backlog, r.oldest_unread_ms) for r in opened} == {(5, t1)}
    assert calls == [("end", 2), ("first", 2)]  # the 2 partitions, asked once for the 3 checkpoints
    for _ in range(2):
        calls.clear()
        watch.poll()
        assert calls == [("end", 2)]
    assert {(lag.backlog, lag.oldest_unread_ms) for lag in watch.lags()} == {(5, t1)}


def test_a_broker_that_does_not_answer_leaves_the_lag_unknown(stopped_query):
    import socket

    cp, _, _ = stopped_query
    with socket.socket() as s:  # a loopback port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = subprocess.run([EXE, "watch", str(cp), "--log", "--once", "--bootstrap", f"127.0.0.1:{port}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode in (0, 1), r.stderr
    (lag,) = [x for x in map(json.loads, r.stdout.splitlines()) if x["kind"] == "source-lag"]
    assert (lag["backlog"], lag["lagSeconds"], lag["sourceKind"]) == (None, None, "kafka")
    assert lag["reason"].startswith(f"the Kafka broker 127.0.0.1:{port} did not answer: ")


def test_bootstrap_needs_log(tmp_path):
    r = subprocess.run([EXE, "watch", str(tmp_path), "--bootstrap", "127.0.0.1:9"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "--notify and --bootstrap need --log" in r.stderr
