"""The clicks pipeline on a real Kafka broker: events produced to a 3-partition topic, bronze
through Spark's Kafka source (keeping topic/partition/offset/timestamp), silver filtering bad
records, gold counting per page per window — every stage checked against the broker's own
offsets and a batch recomputation; `streamwatch inspect` reads the Kafka offsets Spark wrote,
and consumer lag is computed from the checkpoint and the broker, without a consumer group."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def clicks_run(spark, table_format, kafka_broker, tmp_path_factory):
    """600 click events (5 % not JSON) on the session's broker, then the clicks pipeline with
    availableNow (200 offsets per micro-batch). Returns (runner, workspace, producer, the
    broker's latest offsets per partition)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from streamwatch.pipeline import Workspace
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines import clicks
    from sample_pipelines.clicks.factory import ClicksProducer

    producer = ClicksProducer(kafka_broker, bad_ratio=0.05)
    assert producer.produce(600) == 600
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    futures = admin.list_offsets({TopicPartition("clicks", p): OffsetSpec.latest() for p in range(3)})
    latest = {tp.partition: f.result(30).offset for tp, f in futures.items()}
    ws = Workspace(tmp_path_factory.mktemp("clicks-ws"))
    runner = PipelineRunner(spark, clicks.pipeline(), ws, table_format,
                            {"kafka_bootstrap": kafka_broker, "max_offsets_per_trigger": 200})
    runner.run_available_now(timeout_s=400)
    return runner, ws, producer, latest


def test_clicks_from_kafka_through_bronze_silver_gold(clicks_run, unchanged):
    from pyspark.sql import functions as F

    from streamwatch.cli import main

    from sample_pipelines.clicks import parse, per_page

    runner, ws, producer, latest = clicks_run
    assert sum(latest.values()) == 600 and len(latest) == 3
    bronze = runner.tables.read("bronze")
    assert bronze.count() == 600
    per_partition = {r.partition: r.n for r in bronze.groupBy("partition").agg(F.count(F.lit(1)).alias("n")).collect()}
    assert per_partition == latest  # every offset of every partition, once
    assert bronze.select("partition", "offset").distinct().count() == 600
    assert bronze.where("topic <> 'clicks' OR timestamp IS NULL").count() == 0

    silver = runner.tables.read("silver")
    assert silver.count() == 600 - producer.bad == parse(bronze).count()

    max_ts = silver.agg(F.max("ts")).first()[0]
    expected = per_page(silver).where(F.col("window_end") <= F.lit(max_ts) - F.expr("INTERVAL 10 MINUTES"))
    assert expected.count() > 10
    gold = runner.tables.read("gold")
    assert sorted(map(tuple, gold.collect())) == sorted(map(tuple, expected.collect()))

    cp = unchanged(ws.checkpoint("clicks", "bronze"))
    doc = json.loads(CliRunner().invoke(main, ["inspect", str(cp), "--json"]).output)
    src = doc["sources"][0]
    assert src["kind"] == "kafka", src
    assert {int(p): o for p, o in json.loads(src["offset"])["clicks"].items()} == latest


def test_consumer_lag_without_a_consumer_group_and_data_loss_finding(clicks_run, kafka_broker, unchanged):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    from streamwatch.spark.kafka_lag import kafka_lag

    from sample_pipelines.clicks.factory import ClicksProducer

    _runner, ws, _producer, _latest = clicks_run
    cp = unchanged(ws.checkpoint("clicks", "bronze"))
    lags, findings = kafka_lag(cp, kafka_broker)
    assert [(x.partition, x.lag) for x in lags] == [(p, 0) for p in range(3)] and not findings
    ClicksProducer(kafka_broker, seed=11).produce(90)
    lags, findings = kafka_lag(cp, kafka_broker)
    assert sum(x.lag for x in lags) == 90 and not findings  # the query is down: checkpoint + broker
    # retention deletes records the checkpoint has not read yet (what failOnDataLoss fails on)
    target = next(x for x in lags if x.lag)
    admin = AdminClient({"bootstrap.servers": kafka_broker})
    for f in admin.delete_records([TopicPartition("clicks", target.partition, target.latest)]).values():
        f.result(30)
    lags, findings = kafka_lag(cp, kafka_broker)
    assert [f.code for f in findings] == ["kafka-data-lost"]
    assert f"clicks-{target.partition}" in findings[0].message


def _broker_latest(bootstrap: str) -> dict[int, int]:
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_offsets({TopicPartition("clicks", p): OffsetSpec.latest() for p in range(3)})
    return {tp.partition: f.result(30).offset for tp, f in futures.items()}


def test_inspect_kafka_bootstrap_and_the_live_lag_poller_measure_the_same_lag(clicks_run, kafka_broker, unchanged):
    """`inspect --kafka-bootstrap` (query down: checkpoint + broker) and the dashboard's
    LagPoller report broker latest − the run's committed offsets, per partition; more events
    produced raise both by exactly that many."""
    from streamwatch.cli import main
    from streamwatch.spark.kafka_lag import LagPoller

    from sample_pipelines.clicks.factory import ClicksProducer

    _runner, ws, _producer, committed = clicks_run  # the run read up to the broker's latest
    cp = unchanged(ws.checkpoint("clicks", "bronze"))
    ClicksProducer(kafka_broker, seed=23).produce(45)
    latest = _broker_latest(kafka_broker)
    expected = {p: latest[p] - committed[p] for p in range(3)}
    assert sum(expected.values()) >= 45

    out = CliRunner().invoke(main, ["inspect", str(cp), "--json", "--kafka-bootstrap", kafka_broker])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)["kafkaLag"]
    assert {x["partition"]: x["lag"] for x in doc["partitions"]} == expected
    assert {x["partition"]: x["committed"] for x in doc["partitions"]} == committed
    assert doc["total"] == sum(expected.values()) and doc["bootstrap"] == kafka_broker
    text = CliRunner().invoke(main, ["inspect", str(cp), "--kafka-bootstrap", kafka_broker])
    assert text.exit_code == 0 and "Kafka consumer lag" in text.stdout

    seen = []
    poller = LagPoller({"clicks_bronze": str(cp)}, kafka_broker, seen.append)
    lag = poller.measure("clicks_bronze")
    assert lag.error is None and lag.query_name == "clicks_bronze"
    assert {x.partition: x.lag for x in lag.partitions} == expected and lag.total == sum(expected.values())
    down = LagPoller({"clicks_bronze": str(cp)}, "127.0.0.1:1", seen.append, timeout_s=2).measure("clicks_bronze")
    assert down.error and not down.partitions  # a broker away is a measurement error, never a crash


def test_inspect_kafka_bootstrap_errors_are_one_line(clicks_run, unchanged):
    from streamwatch.cli import main

    _runner, ws, _producer, _committed = clicks_run
    cp = unchanged(ws.checkpoint("clicks", "bronze"))
    away = CliRunner().invoke(main, ["inspect", str(cp), "--kafka-bootstrap", "127.0.0.1:1"])
    assert away.exit_code == 4 and "did not answer" in away.stderr
    no_kafka = CliRunner().invoke(main, ["inspect", str(unchanged(ws.checkpoint("clicks", "silver"))),
                                         "--kafka-bootstrap", "127.0.0.1:1"])
    assert no_kafka.exit_code == 2 and "no committed batch of a Kafka source" in no_kafka.stderr


def test_offsets_behind_latest_metrics_of_the_live_kafka_source_are_typed(clicks_run):
    """Spark's Kafka source metrics min/avg/maxOffsetsBehindLatest, parsed into the typed
    event model, are the broker's latest offsets the batch saw (``latestOffset``) minus the
    batch's end offsets, per partition; 600 records at 200 per trigger leave the first batches
    behind and the last one caught up."""
    from streamwatch.model.events import QueryProgress

    runner = clicks_run[0]
    bronze = next(q for q in runner.queries if q.name == "clicks_bronze")
    progress = [QueryProgress.from_dict(json.loads(p.json)) for p in bronze.recentProgress]
    kafka = [(p.sources[0], p.sources[0].offsets_behind_latest) for p in progress if p.num_input_rows]
    assert len(kafka) >= 3, "600 records at 200 per trigger: at least 3 batches read Kafka"
    for src, behind in kafka:
        assert behind is not None, src.metrics
        latest, end = json.loads(src.latest_offset)["clicks"], json.loads(src.end_offset)["clicks"]
        each = [latest[p] - end[p] for p in sorted(end)]
        assert (behind.min, behind.max) == (min(each), max(each))
        assert behind.avg == pytest.approx(sum(each) / len(each), abs=0.05)  # Spark rounds it to 0.1
    assert kafka[0][1].max > 0 and kafka[-1][1].max == 0
