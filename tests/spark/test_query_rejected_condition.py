"""``QueryRejected.condition`` is Spark's error condition: the one Spark itself names, in
brackets at the start of its message, when the same query is started with plain pyspark."""

from __future__ import annotations

import re

import pytest

from streamwatch.pipeline import Layer, Pipeline, Workspace

pytestmark = pytest.mark.spark


def _counts(spark):
    # an aggregation without watermark: Spark refuses it in append mode
    return spark.readStream.format("rate").option("rowsPerSecond", 5).load().groupBy("value").count()


def test_a_rejected_query_carries_the_condition_spark_names(spark, tmp_path):
    from pyspark.errors import AnalysisException

    from streamwatch.spark.runner import PipelineRunner, QueryRejected

    pipeline = Pipeline("cond", "a shape Spark refuses", (),
                        (Layer("gold", "gold", "x", lambda ctx: _counts(ctx.spark), "append", "table", "rate"),))
    runner = PipelineRunner(spark, pipeline, Workspace(tmp_path), "parquet")
    with pytest.raises(QueryRejected) as rejected:
        runner.start("default")
    assert runner.queries == []

    with pytest.raises(AnalysisException) as direct:  # Spark's own answer for the same query
        (_counts(spark).writeStream.outputMode("append").format("memory").queryName("cond_direct")
         .option("checkpointLocation", str(tmp_path / "direct")).start())
    named = re.match(r"\[([A-Z0-9_.]+)\]", str(direct.value).strip())
    assert named is not None, str(direct.value)
    assert rejected.value.condition == named.group(1)
    assert not [q for q in spark.streams.active if q.name in ("cond_gold", "cond_direct")]
