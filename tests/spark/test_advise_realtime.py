"""``advise-real-time-mode`` on real queries (the shared ``spark`` session, the loopback
``kafka_broker``): the facts the rule states are checked against Spark's own account (the
``offsets/N`` and ``commits/N`` files Spark wrote, its ``recentProgress``), and its verdicts
against what Spark does when the query is started in real-time mode: a query the rule keeps
(stateful, a file source) is refused by Spark, the one it advises runs in real-time mode on
its checkpoint and writes the records produced."""

from __future__ import annotations

import json
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def _topic(bootstrap: str, prefix: str) -> str:
    from sample_pipelines.clicks.factory import ensure_topic

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    ensure_topic(bootstrap, name, 1)
    return name


def _produce(bootstrap: str, topic: str, start: int, n: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(start, start + n):
        p.produce(topic, key=str(i), value=f"r{i}")
    assert p.flush(60) == 0


def _kafka(spark, bootstrap: str, topic: str) -> Any:
    return (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())


def _to_kafka(df, bootstrap: str, topic: str, cp: Path) -> Any:
    return (df.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
            .option("checkpointLocation", str(cp)).outputMode("update"))


def _refusal(writer) -> str:
    """Starts ``writer`` in real-time mode; Spark's error, raised at start or by the query's
    thread (``awaitTermination`` raises it once the query failed)."""
    try:
        q = writer.trigger(realTime="5 minutes").start()
        try:
            q.awaitTermination(180)
        finally:
            q.stop()
    except Exception as e:  # noqa: BLE001 - Spark's refusal is what is asserted
        return str(e)
    return "Spark ran the query in real-time mode"


def _judge(cp: Path, progress: list[dict[str, Any]], trigger: str):
    from streamwatch.analysis.advice import progress_durations
    from streamwatch.analysis.advice_realtime import real_time_mode
    from streamwatch.analysis.triggers import parse_trigger
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.model.events import QueryProgress

    events = [QueryProgress.from_dict(p) for p in progress]
    return real_time_mode(parse_trigger(trigger), read_checkpoint(str(cp)), events, progress_durations(events))


def _ev(a) -> dict[str, Any]:
    return {e.what: e for e in a.evidence}


def test_a_stateless_kafka_query_is_advised_real_time_mode_and_runs_in_it(spark, kafka_broker, tmp_path):
    from confluent_kafka import Consumer

    from streamwatch.analysis.advice import Confidence, Verdict

    src, dst, cp = _topic(kafka_broker, "adv_rt_in"), _topic(kafka_broker, "adv_rt_out"), tmp_path / "cp"
    df = _kafka(spark, kafka_broker, src).selectExpr("key", "upper(CAST(value AS STRING)) AS value")
    q = _to_kafka(df, kafka_broker, dst, cp).trigger(processingTime="1 second").start()
    try:
        for start in (0, 20):
            _produce(kafka_broker, src, start, 20)
            q.processAllAvailable()
        progress = [json.loads(p.json) for p in q.recentProgress]
    finally:
        q.stop()
    a = _judge(cp, progress, "processingTime=1s")
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY), a
    ev = _ev(a)
    # Spark's account: the offsets file names one Kafka source and its partitions, the progress the sink
    last = max(int(p.name) for p in (cp / "offsets").iterdir() if p.name.isdigit())
    offsets = json.loads((cp / "offsets" / str(last)).read_text().splitlines()[2])
    assert ev["Kafka partitions"].value == len(offsets[src]) == 1
    assert ev["sources"].value == 1 and ev["sources"].source == f"offsets/{last}: kafka"
    assert "KafkaTable" in progress[-1]["sink"]["description"] and "Kafka → KafkaTable" in a.summary
    timed = [p["durationMs"]["triggerExecution"] for p in progress if p["batchId"] > 0]
    assert ev["median batch time"].value == int(statistics.median(timed))
    assert a.action is not None and 'trigger(realTime="5 minutes")' in a.action

    # the checkpoint alone: Spark's commit log (v1, no sink names) does not say the sink
    assert (cp / "commits" / str(last)).read_text().startswith("v1\n")
    alone = _judge(cp, [], "processingTime=1s")
    assert alone.verdict.value == "unknown" and alone.needs is not None and "sink" in alone.needs

    # Spark's verdict on the advice: the same query on the same checkpoint in real-time mode writes new records
    q = _to_kafka(df, kafka_broker, dst, cp).trigger(realTime="5 minutes").start()
    c = Consumer({"bootstrap.servers": kafka_broker, "group.id": f"t-{uuid.uuid4()}", "auto.offset.reset": "earliest"})
    c.subscribe([dst])
    try:
        _produce(kafka_broker, src, 40, 5)
        seen: set[str] = set()
        deadline = time.monotonic() + 180
        while not {f"R{i}" for i in range(40, 45)} <= seen:
            assert q.exception() is None, q.exception()
            assert time.monotonic() < deadline, f"real-time mode wrote {sorted(seen)[-5:]}"
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                seen.add(m.value().decode())
        assert q.isActive and q.exception() is None
    finally:
        c.close()
        q.stop()


def test_a_stateful_query_is_kept_and_spark_refuses_it_in_real_time_mode(spark, kafka_broker, tmp_path):
    from streamwatch.analysis.advice import Verdict

    src, dst = _topic(kafka_broker, "adv_rts_in"), _topic(kafka_broker, "adv_rts_out")
    _produce(kafka_broker, src, 0, 10)
    counts = (_kafka(spark, kafka_broker, src).groupBy("key").count()
              .selectExpr("CAST(key AS STRING) AS key", "CAST(count AS STRING) AS value"))
    q = _to_kafka(counts, kafka_broker, dst, tmp_path / "cp").trigger(availableNow=True).start()
    q.awaitTermination(300)
    progress = [json.loads(p.json) for p in q.recentProgress]
    assert progress and progress[-1]["stateOperators"], "Spark reported no state operator"
    a = _judge(tmp_path / "cp", progress, "availableNow")
    assert a.verdict is Verdict.KEEP and "one-shot" in a.summary
    a = _judge(tmp_path / "cp", progress, "processingTime=1s")
    assert a.verdict is Verdict.KEEP and "stateful" in a.summary and (tmp_path / "cp" / "state" / "0").is_dir()
    why = _refusal(_to_kafka(counts, kafka_broker, dst, tmp_path / "cp-rt"))
    assert "STREAMING_REAL_TIME_MODE" in why, why


def test_a_file_source_is_kept_and_spark_refuses_it_in_real_time_mode(spark, kafka_broker, tmp_path):
    from streamwatch.analysis.advice import Verdict

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text('{"key": "a", "value": "1"}\n')
    dst = _topic(kafka_broker, "adv_rtf_out")
    df = spark.readStream.schema("key STRING, value STRING").json(str(tmp_path / "in"))
    q = _to_kafka(df, kafka_broker, dst, tmp_path / "cp").trigger(availableNow=True).start()
    q.awaitTermination(300)
    progress = [json.loads(p.json) for p in q.recentProgress]
    a = _judge(tmp_path / "cp", progress, "processingTime=1s")
    assert a.verdict is Verdict.KEEP and "file source" in a.summary, a
    offsets = (tmp_path / "cp" / "offsets" / "0").read_text().splitlines()[2]
    assert json.loads(offsets) == {"logOffset": 0}  # Spark's file-source offset: the kind the rule read
    why = _refusal(_to_kafka(df, kafka_broker, dst, tmp_path / "cp-rt"))
    assert "STREAMING_REAL_TIME_MODE" in why, why
