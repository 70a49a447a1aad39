"""A user's job on their own pyspark, with streamwatch installed beside it (run by
test_record_on_other_spark.py inside a venv holding that pyspark and the streamwatch wheel).

``python record_job.py WORK`` lands two JSON files in ``WORK/in``, records with
``streamwatch.record(spark, WORK/events.jsonl)`` while an availableNow aggregation reads them,
and writes Spark's own account of the run to ``WORK/spark.json``: the version, the query's id
and run id, and every progress as the JVM serialised it (``StreamingQuery.recentProgress``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import streamwatch


def main(work: Path) -> None:
    src = work / "in"
    src.mkdir(parents=True)
    for i in range(2):
        (src / f"f{i}.json").write_text("\n".join(json.dumps({"k": j % 3, "v": j}) for j in range(10 * (i + 1))))
    spark = (SparkSession.builder.master("local[1]").appName("record-beside-a-job")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate())
    rec = streamwatch.record(spark, str(work / "events.jsonl"))
    q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(src))
         .groupBy("k").count().writeStream.outputMode("update").format("noop")
         .queryName("beside_a_job").option("checkpointLocation", str(work / "cp"))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    # every posted listener event handed to the listeners (the terminated event included)
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(120_000)
    rec.stop()
    jq = q._jsq
    facts = {"version": spark.version, "id": str(jq.id()), "runId": str(jq.runId()),
             "progress": [json.loads(p.json()) for p in jq.recentProgress()]}
    (work / "spark.json").write_text(json.dumps(facts))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
