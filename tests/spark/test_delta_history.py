"""A Delta table's history read from ``_delta_log`` without a JVM (the results tab's
history) is what Delta's own ``DeltaTable.history()`` says: version, operation, rows written
(``operationMetrics.numOutputRows``) and time, newest first — for a batch write, a streaming
append and a MERGE."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def test_table_history_matches_delta_describe_history(spark, delta, tmp_path):
    from delta.tables import DeltaTable

    from streamwatch.checkpoint.delta import table_history

    up, table = str(tmp_path / "up"), str(tmp_path / "t")
    spark.range(0, 10).write.format("delta").save(table)
    spark.range(100, 125).write.format("delta").save(up)
    q = (spark.readStream.format("delta").load(up).writeStream.format("delta")
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start(table))
    q.awaitTermination()
    updates = spark.range(5, 15).selectExpr("id")
    (DeltaTable.forPath(spark, table).alias("t").merge(updates.alias("u"), "t.id = u.id")
     .whenNotMatchedInsertAll().execute())

    history = DeltaTable.forPath(spark, table).history().selectExpr(
        "version", "operation", "operationMetrics", "unix_millis(timestamp) AS ms")
    oracle = [(r.version, r.operation, int(r.operationMetrics["numOutputRows"]), r.ms) for r in history.collect()]
    ours = [(c.version, c.operation, c.rows_written, c.timestamp_ms) for c in table_history(table)]
    assert [o[:3] for o in ours] == [o[:3] for o in oracle]
    # time: ours is commitInfo.timestamp (the commit being written); Delta's history shows the
    # commit file's modification time, a moment later
    assert all(0 <= b[3] - a[3] < 60_000 for a, b in zip(ours, oracle, strict=True)), (ours, oracle)
    assert [o[1] for o in ours] == ["MERGE", "STREAMING UPDATE", "WRITE"]
    assert [o[2] for o in ours] == [5, 25, 10]
    assert [c.version for c in table_history(table, limit=2)] == [2, 1]
    assert table_history(str(tmp_path / "cp")) == []  # not a Delta table
