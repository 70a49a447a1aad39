"""``advise-max-offsets-per-trigger`` against Spark and a real broker (shared local[2] session,
the loopback broker of ``make jars``; skipped, saying why, without them):

* (a) a Kafka query from ``earliest`` with no ``maxOffsetsPerTrigger`` over a pre-filled topic
  (one huge first micro-batch), restarted (``availableNow``) after each of two small landings:
  the records per batch the rule cites are Spark's ``numInputRows`` per batch, and the limit it
  advises is derived from them;
* (b) a query with ``maxOffsetsPerTrigger`` = ``LIMIT`` over a one-partition topic, then more
  records produced than it read: ``streamwatch advise --bootstrap`` reads the backlog on the
  broker — the records produced after the query stopped — and says raise the limit."""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark

BACKLOG, LATER = 400, (20, 30)
LIMIT, FILLED, EXTRA = 20, 100, 200


def _produce(bootstrap: str, topic: str, n: int, partitions: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(n):
        p.produce(topic, value=f"v{i}", partition=i % partitions)
    assert p.flush(60) == 0


def _topic(bootstrap: str, partitions: int) -> str:
    from sample_pipelines.clicks.factory import ensure_topic

    topic = f"adv_{uuid.uuid4().hex[:8]}"
    ensure_topic(bootstrap, topic, partitions)
    return topic


def _run(spark, bootstrap: str, topic: str, cp: Path, limit: int | None = None) -> list[dict]:
    """One availableNow run from ``earliest``; Spark's progress of its batches that read input."""
    reader = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest"))
    if limit is not None:
        reader = reader.option("maxOffsetsPerTrigger", limit)
    q = (reader.load().writeStream.format("noop").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def _finding(args: list[str]) -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["advise", *args, "--cores", "2", "--json"])
    (a,) = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-max-offsets-per-trigger"]
    return r.exit_code, a


def test_the_records_per_batch_and_the_advised_limit_are_sparks(spark, kafka_broker, tmp_path):
    topic = _topic(kafka_broker, 2)
    _produce(kafka_broker, topic, BACKLOG, 2)
    cp = tmp_path / "cp"
    progress = _run(spark, kafka_broker, topic, cp)
    for n in LATER:
        _produce(kafka_broker, topic, n, 2)
        progress += _run(spark, kafka_broker, topic, cp)
    rows = [p["numInputRows"] for p in progress]
    assert rows == [BACKLOG, *LATER]  # Spark read the topic at once, then each landing

    code, a = _finding([str(cp)])
    assert code == 1
    ev = {e["what"]: e for e in a["evidence"]}
    assert ev["records read by the first batch"]["value"] == rows[0]
    assert ev["records read by the first batch"]["source"] == f"offsets/{progress[0]['batchId']} − sources/0/0 initial offsets"
    assert ev["median records of the later batches"]["value"] == (rows[1] + rows[2]) / 2
    target = math.ceil(2 * (rows[1] + rows[2]) / 2)
    assert (a["verdict"], a["confidence"], a["target"]) == ("change", "likely", target)
    assert f'.option("maxOffsetsPerTrigger", {target})' in a["action"]


def test_a_binding_limit_and_the_brokers_backlog_advise_raising_it(spark, kafka_broker, tmp_path):
    topic = _topic(kafka_broker, 1)
    _produce(kafka_broker, topic, FILLED, 1)
    cp = tmp_path / "cp"
    progress = _run(spark, kafka_broker, topic, cp, LIMIT)
    assert [p["numInputRows"] for p in progress] == [LIMIT] * (FILLED // LIMIT)
    _, unknown = _finding([str(cp)])
    assert unknown["verdict"] == "unknown" and "--bootstrap" in unknown["needs"]

    _produce(kafka_broker, topic, EXTRA, 1)  # after the query stopped: a backlog it never read
    code, a = _finding([str(cp), "--bootstrap", kafka_broker])
    assert code == 1
    ev = {e["what"]: e["value"] for e in a["evidence"]}
    assert ev["backlog"] == EXTRA  # the broker's end − Spark's last endOffset
    window = progress[-3]["batchId"]
    # when batch N-2 was planned the topic held FILLED records; it started at batch N-3's endOffset
    start = progress[-4]["sources"][0]["endOffset"]  # pyspark gives Spark's JSON text
    assert ev[f"backlog when batch {window} was planned"] == FILLED - json.loads(start)[topic]["0"]
    assert ev["records landed"] == EXTRA
    assert (a["verdict"], a["confidence"]) == ("change", "likely")
    assert a["target"] > LIMIT
