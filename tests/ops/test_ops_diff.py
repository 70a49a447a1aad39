"""`streamwatch diff` on checkpoints Spark writes in this run, against what the folders hold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from tests.conftest import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "diff"


def _invoke(*args: str):
    return CliRunner().invoke(main, ["diff", *args])


def _offsets(cp: Path) -> dict[int, list[str]]:
    """Batch id → lines of offsets/<id>, read straight from disk (the test's own truth)."""
    return {int(p.name): p.read_text().splitlines() for p in (cp / "offsets").iterdir() if p.name.isdigit()}


def _sink_files(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if p.suffix == ".parquet"}


@pytest.mark.spark
def test_diff_two_snapshots_of_a_stateful_query(mini_query, unchanged, tmp_path):
    q = mini_query(stateful=True)
    q.land(4)
    q.run()
    shutil.copytree(q.out, tmp_path / "old-out")
    old = tmp_path / "old-out" / "_checkpoint"
    sink_before = _sink_files(q.out)
    offs_before = _offsets(q.cp)
    new_files = q.land(3)
    q.run()
    offs_after = _offsets(q.cp)
    unchanged(old.parent)
    unchanged(q.out)

    r = _invoke(str(old), str(q.cp), "--json")
    assert r.exit_code == 1, r.output  # 1: changes found
    doc = json.loads(r.stdout)
    assert doc["schema"] == "streamwatch.diff/1"
    assert doc["same_query"] is True
    assert doc["batches"]["planned"] == [max(offs_before) + 1, max(offs_after)]
    src = doc["sources"][0]
    assert src["kind"] == "file"
    assert {Path(p).name for p in src["files"]} == {p.name for p in new_files}
    assert src["files_added"] == 3
    # watermark: batchWatermarkMs of the latest offsets file before and after
    wm = [json.loads(offs[max(offs)][1])["batchWatermarkMs"] for offs in (offs_before, offs_after)]
    assert doc["watermark"]["moved_ms"] == wm[1] - wm[0] > 0
    assert {Path(p).name for p in doc["sink"]["files_added"]} == _sink_files(q.out) - sink_before
    st = doc["state"][0]
    assert st["versions"]["new"][1] == max(offs_after) + 1
    parts = {(p["partition"], p["store"]) for p in st["partitions"]}
    assert parts == {(0, "default"), (1, "default")}  # shuffle partitions 2: both grew
    assert not doc["conf"]["changed"]

    text = _invoke(str(old), str(q.cp))
    assert text.exit_code == 1
    assert f"planned {max(offs_before) + 1}" in text.output and "files added" in text.output

    same = _invoke(str(q.cp), str(q.cp))
    assert same.exit_code == 0, same.output


@pytest.mark.spark
def test_diff_from_a_saved_inspect_json_and_findings(mini_query, unchanged, tmp_path):
    q = mini_query(stateful=False)
    q.land(3)
    q.run()
    saved = tmp_path / "before.json"
    r = CliRunner().invoke(main, ["inspect", str(q.cp), "--json"])
    assert r.exit_code == 0
    saved.write_text(r.stdout)
    q.land(2)
    q.run()
    # a copy whose last commit is gone: an in-flight batch appears
    shutil.copytree(q.out, tmp_path / "broken-out")
    broken = tmp_path / "broken-out" / "_checkpoint"
    last = max(int(p.name) for p in (broken / "commits").iterdir() if p.name.isdigit())
    (broken / "commits" / str(last)).unlink()
    unchanged(q.out)
    unchanged(broken.parent)

    doc = json.loads(_invoke(str(saved), str(q.cp), "--json").stdout)
    assert doc["old"]["origin"] == "inspect-json"
    assert doc["batches"]["planned"] == [3, 4]
    assert doc["sources"][0]["log_offset"] == {"old": 2, "new": 4}
    assert doc["sources"][0]["files_added"] == 2

    doc = json.loads(_invoke(str(q.cp), str(broken), "--json").stdout)
    assert [f["code"] for f in doc["findings"]["appeared"]] == ["in-flight-batch"]
    assert doc["batches"]["committed"] is None
    back = json.loads(_invoke(str(broken), str(q.cp), "--json").stdout)
    assert [f["code"] for f in back["findings"]["cleared"]] == ["in-flight-batch"]


@pytest.mark.spark
def test_diff_from_batch_to_batch(mini_query, unchanged):
    q = mini_query(stateful=False)
    q.land(5)
    q.run()
    unchanged(q.out)
    offs = _offsets(q.cp)
    lo = {b: json.loads(lines[2])["logOffset"] for b, lines in offs.items()}
    r = _invoke(str(q.cp), "--from-batch", "1", "--to-batch", "4", "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["sources"][0]["log_offset"] == {"old": lo[1], "new": lo[4]}
    assert doc["sources"][0]["files_added"] == lo[4] - lo[1] == 3
    assert doc["batches"]["planned"] == [2, 4]
    assert len(doc["sink"]["files_added"]) >= 3  # one Parquet file per partition written


def test_diff_usage_errors(tmp_path, unchanged):
    cp = tmp_path / "cp"
    cp.mkdir()
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "other"}')
    unchanged(cp)
    r = _invoke(str(tmp_path / "nope"), str(tmp_path / "nope2"))
    assert r.exit_code == 4 and "no such file or directory" in r.output
    r = _invoke(str(cp))
    assert r.exit_code == 2 and "NEW is missing" in r.output
    r = _invoke(str(bad), str(cp))
    assert r.exit_code == 4 and "not a streamwatch inspect --json document" in r.output
    assert "Traceback" not in r.output
    assert "Examples:" in CliRunner().invoke(main, ["diff", "--help"]).output


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_diff_golden_on_the_corpus(corpus, unchanged, fmt):
    cp = unchanged(corpus / "spark" / "checkpoint-version-4.0.0" / "hdfs" / "join2")
    args = [str(cp), "--from-batch", "0", "--to-batch", "4"] + (["--json"] if fmt == "json" else [])
    r = _invoke(*args)
    assert r.exit_code == 1, r.output
    assert_golden({GOLDEN / f"join2-0-4.{fmt}": r.stdout.replace(str(cp), "<PATH>")})


def _run_once(writer_df, cp: Path, out: Path, **trigger) -> None:
    q = writer_df.writeStream.option("checkpointLocation", str(cp)).format("parquet").trigger(**trigger).start(str(out))
    q.awaitTermination(180)
    assert q.exception() is None, q.exception()


def _latest_offsets_line(cp: Path, source: int = 0) -> str:
    offs = _offsets(cp)
    return offs[max(offs)][2 + source]


@pytest.mark.spark
def test_diff_rate_source_offsets(spark, unchanged, tmp_path):
    """A `rate-micro-batch` source (10 rows and 1,000 ms of event time per batch), one batch
    per start: diff's offset and timestamp deltas are the offsets files' and the sink's rows."""
    out = tmp_path / "rate-out"
    cp = out / "_checkpoint"
    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).option("startTimestamp", 0).load()
    for _ in range(2):
        _run_once(df, cp, out, once=True)
    shutil.copytree(out, tmp_path / "old-out")
    old_line = _latest_offsets_line(cp)
    rows_before = spark.read.parquet(str(out)).count()
    for _ in range(3):
        _run_once(df, cp, out, once=True)
    new_line = _latest_offsets_line(cp)
    rows_after = spark.read.parquet(str(out)).count()
    unchanged(out)
    unchanged(tmp_path / "old-out")

    r = _invoke(str(tmp_path / "old-out" / "_checkpoint"), str(cp), "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    [src] = doc["sources"]
    assert src["kind"] == "rate" and src["old"] == old_line and src["new"] == new_line
    o, n = json.loads(old_line), json.loads(new_line)
    assert src["fields"]["offset"] == {"old": o["offset"], "new": n["offset"], "delta": n["offset"] - o["offset"]}
    assert src["fields"]["offset"]["delta"] == rows_after - rows_before == 30  # Spark's sink agrees
    assert src["fields"]["timestamp"]["delta"] == 3 * 1000
    assert doc["batches"]["planned"] == [2, 4]
    text = _invoke(str(tmp_path / "old-out" / "_checkpoint"), str(cp))
    assert text.exit_code == 1 and "offset" in text.output


@pytest.mark.spark
def test_diff_kafka_offsets_per_partition(spark, kafka_broker, unchanged, tmp_path):
    """Spark's Kafka source on the session's broker (a fresh 3-partition topic): diff's
    per-partition offset deltas are the broker's end offsets moving, and their sum is the rows
    Spark's sink gained."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    from sample_pipelines.clicks.factory import ensure_topic

    topic = f"diff-{tmp_path.name}"
    ensure_topic(kafka_broker, topic, 3)
    admin = AdminClient({"bootstrap.servers": kafka_broker})

    def produce(n: int) -> dict[str, int]:
        p = Producer({"bootstrap.servers": kafka_broker})
        for i in range(n):
            p.produce(topic, value=str(i).encode(), partition=i % 3)
        assert p.flush(60) == 0
        fut = admin.list_offsets({TopicPartition(topic, i): OffsetSpec.latest() for i in range(3)})
        return {str(tp.partition): f.result(30).offset for tp, f in fut.items()}

    try:
        df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka_broker)
              .option("subscribe", topic).option("startingOffsets", "earliest").load()
              .selectExpr("CAST(value AS STRING) AS v", "partition", "offset"))
    except Exception as e:  # noqa: BLE001 - the connector's jars are optional
        pytest.skip(f"Spark's Kafka connector is not loaded here ({type(e).__name__}); `make jars` resolves it")
    out = tmp_path / "kafka-out"
    cp = out / "_checkpoint"
    end_old = produce(30)
    _run_once(df, cp, out, availableNow=True)
    shutil.copytree(out, tmp_path / "old-out")
    end_new = produce(45)
    _run_once(df, cp, out, availableNow=True)
    unchanged(out)
    unchanged(tmp_path / "old-out")

    r = _invoke(str(tmp_path / "old-out" / "_checkpoint"), str(cp), "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    [src] = doc["sources"]
    assert src["kind"] == "kafka"
    rows = {row["partition"]: row for row in src["partitions"]}
    assert {p: (row["old"], row["new"]) for p, row in rows.items()} == {p: (end_old[p], end_new[p]) for p in end_old}
    assert src["records"] == 45 == sum(end_new[p] - end_old[p] for p in end_old)
    assert spark.read.parquet(str(out)).count() == 75  # Spark's sink: every record once
    text = _invoke(str(tmp_path / "old-out" / "_checkpoint"), str(cp))
    assert text.exit_code == 1 and topic in text.output
