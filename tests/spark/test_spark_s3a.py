"""Spark itself on object storage: a streaming query whose source table, checkpoint and sink
table all live on ``s3a://`` (hadoop-aws from ``make jars-s3``) in the loopback moto S3 server
(path-style access), run twice; then ``streamwatch inspect s3://…`` (fsspec, no JVM) reads
what Spark wrote there. Skips, saying why, without the s3 jar set."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]

BUCKET = "sparkws"


@pytest.fixture(scope="module")
def s3a(spark, s3_server):
    """The shared session's S3A filesystem pointed at the module's moto server (bucket
    ``sparkws``); skips when hadoop-aws is not on the session's classpath."""
    from streamwatch.spark.tableformat import decide_table_format

    if not decide_table_format().s3:
        pytest.skip("hadoop-aws is not resolved (`make jars-s3`): Spark cannot use s3a://")
    s3_server.client.create_bucket(Bucket=BUCKET)
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - the session's Hadoop conf
    for k, v in {"fs.s3a.endpoint": s3_server.endpoint, "fs.s3a.path.style.access": "true",
                 "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing",
                 "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.endpoint.region": "us-east-1",
                 "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}.items():
        conf.set(k, v)
    return s3_server


def test_a_stream_with_checkpoint_and_tables_on_s3a_is_read_by_inspect(spark, table_format, s3a):
    from streamwatch.cli import main

    fmt = table_format  # delta where its jars loaded, else Spark's parquet file sink
    upstream, table, cp = (f"s3a://{BUCKET}/ws/{p}" for p in ("tables/up", "tables/out", "checkpoints/out"))
    spark.range(0, 40).write.format(fmt).mode("append").save(upstream)

    def run_once() -> None:
        src = (spark.readStream.format(fmt).load(upstream) if fmt == "delta"
               else spark.readStream.schema("id LONG").parquet(upstream))
        q = (src.selectExpr("id", "id * 2 AS twice").writeStream.format(fmt).option("checkpointLocation", cp)
             .trigger(availableNow=True).start(table))
        q.awaitTermination()
        assert q.exception() is None

    run_once()
    spark.range(40, 100).write.format(fmt).mode("append").save(upstream)
    run_once()
    out = spark.read.format(fmt).load(table)
    assert out.count() == 100 and out.selectExpr("count(DISTINCT id)").first()[0] == 100
    keys = {o["Key"] for o in s3a.client.list_objects_v2(Bucket=BUCKET, Prefix="ws/checkpoints/out/")["Contents"]}
    assert {"ws/checkpoints/out/offsets/0", "ws/checkpoints/out/commits/1"} <= keys

    s3_cp = f"s3://{BUCKET}/ws/checkpoints/out"
    doc = json.loads(CliRunner().invoke(main, ["inspect", s3_cp, "--json", "--sink",
                                               f"s3://{BUCKET}/ws/tables/out"]).stdout)
    latest = doc["batches"]["latest"]
    assert latest >= 1 and doc["batches"]["last_committed"] == latest and doc["batches"]["in_flight"] is None, doc
    assert doc["sources"][0]["kind"] == ("delta" if fmt == "delta" else "file")
    timeline = json.loads(CliRunner().invoke(main, ["inspect", s3_cp, "--batches", "--json"]).stdout)["timeline"]
    assert len(timeline) == latest + 1
