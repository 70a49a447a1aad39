"""A file source's lag in seconds, its backlog and whether it is catching up (``source-lag``
records of the checkpoint watch), held against what Spark itself read: real availableNow
queries in the shared session over files landed with known modification times; which files a
run read is Spark's own account (its progress's ``numInputRows``: file ``i`` holds ``i + 1``
rows), when the window began is ``batchTimestampMs`` of Spark's ``offsets/0``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from streamwatch.analysis.watch import CheckpointWatcher

pytestmark = pytest.mark.spark


def _land(folder: Path, i: int, mtime_ms: int, name: str | None = None, rows: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / (name or f"f{i}.json")
    p.write_text("\n".join(json.dumps({"k": j, "v": j}) for j in range(rows if rows is not None else i + 1)))
    os.utime(p, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return p


def _run(spark, src: Path, cp: Path, max_files: int | None) -> list[int]:
    """An availableNow run; the rows each batch read, as Spark reports them."""
    r = spark.readStream.schema("k INT, v INT")
    if max_files is not None:
        r = r.option("maxFilesPerTrigger", max_files)
    q = (r.json(str(src)).writeStream.format("noop").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    return [json.loads(p.json())["numInputRows"] for p in q._jsq.recentProgress()]


def _planned_ms(cp: Path, batch: int) -> int:
    return json.loads((cp / "offsets" / str(batch)).read_text().splitlines()[1])["batchTimestampMs"]


def _lag(w: CheckpointWatcher, now_ms: int):
    (lag,) = w.measure_lags(now_ms)
    return lag


def test_lag_is_the_oldest_unread_file_and_hidden_files_are_not_backlog(spark, tmp_path):
    src, cp = tmp_path / "in", tmp_path / "cp"
    base = int(time.time() * 1000)
    _land(src, 0, base - 2_000_000)
    _land(src, 1, base - 1_900_000)
    assert _run(spark, src, cp, max_files=1) == [1, 2]  # f0, then f1
    after_run = int(time.time() * 1000)
    landed = {i: _land(src, i, after_run + 1000 * i) for i in range(2, 6)}
    # names Spark's listing leaves out, holding rows it would count if it read them
    for name in ("_SUCCESS", ".f9.json", "f8.json._COPYING_"):
        _land(src, 0, base, name=name, rows=100)
    now = after_run + 3_600_000
    w = CheckpointWatcher(str(cp), "q", poll_s=1.0, clock=lambda: now / 1000)
    w.open()
    lag = _lag(w, now)
    t2 = os.stat(landed[2]).st_mtime_ns // 1_000_000
    assert (lag.source, lag.source_kind, lag.backlog, lag.oldest_unread_ms) == ("0", "file", 4, t2)
    assert lag.lag_s == (now - t2) / 1000
    # nothing planned for an hour with files waiting: not catching up, no estimate
    assert (lag.catching_up, lag.catchup_s) == (False, None)
    start = _planned_ms(cp, 0)
    assert lag.window_from_ms == start
    assert lag.processed_per_s == 2 / ((now - start) / 1000)  # f0 and f1 since batch 0 was planned
    assert lag.arrival_per_s == 4 / ((now - start) / 1000)  # f2…f5 landed since; f0, f1 before

    # Spark reads the four, and only them (the hidden names would add 300 rows)
    assert _run(spark, src, cp, max_files=None) == [3 + 4 + 5 + 6]
    w.poll()  # sees the new batch planned: its source log is read on the next measurement
    after = _lag(w, now)
    assert (after.backlog, after.oldest_unread_ms, after.lag_s, after.catching_up) == (0, None, 0.0, True)
    fresh = CheckpointWatcher(str(cp), "q", poll_s=1.0, clock=lambda: now / 1000)
    fresh.open()
    assert _lag(fresh, now).verdict() == after.verdict()


def test_draining_backlog_is_catching_up_until_no_batch_comes(spark, tmp_path):
    src, cp = tmp_path / "in", tmp_path / "cp"
    base = int(time.time() * 1000)
    for i in range(3):
        _land(src, i, base - 3_000_000 + 1000 * i)
    assert _run(spark, src, cp, max_files=1) == [1, 2, 3]
    # five more that landed earlier than the window (a backlog left before the run's batches)
    for i in range(3, 8):
        _land(src, i, base - 2_000_000 + 1000 * i)
    committed = (cp / "commits" / "2").stat().st_mtime_ns // 1_000_000
    start = _planned_ms(cp, 0)
    # a 30 s poll: two polls' patience (60 s) before a quiet source is judged not catching up
    w = CheckpointWatcher(str(cp), "q", poll_s=30.0, clock=lambda: committed / 1000)
    w.open()
    lag = _lag(w, committed)
    rate = 3 / ((committed - start) / 1000)
    assert (lag.backlog, lag.catching_up) == (5, True)
    assert (lag.processed_per_s, lag.arrival_per_s) == (rate, 0.0)
    assert lag.catchup_s == 5 / rate
    later = _lag(w, committed + 3_600_000)
    assert (later.backlog, later.catching_up, later.catchup_s) == (5, False, None)
    # and Spark, run again, reads exactly those five
    assert _run(spark, src, cp, max_files=None) == [sum(i + 1 for i in range(3, 8))]


def test_pipeline_edge_lag_is_since_the_upstream_commit_of_the_oldest_unread_output(spark, tmp_path):
    """bronze (files → file sink) feeds silver (a file source on bronze's output); bronze runs
    a second time, silver does not. The edge's lag runs from bronze's ``commits/1`` — the
    commit Spark wrote for the batch whose output silver has not read — and silver's own
    source lag is unknown (Spark reads bronze's ``_spark_metadata`` there, not a listing)."""
    from streamwatch.analysis.records import PipelineEdge
    from streamwatch.analysis.session import CheckpointWatch

    ws = tmp_path / "ws"
    src, bronze_cp, silver_cp = tmp_path / "in", ws / "checkpoints/p/bronze", ws / "checkpoints/p/silver"
    bronze_out = ws / "tables/p/bronze"

    def bronze() -> None:
        q = (spark.readStream.schema("k INT, v INT").json(str(src)).writeStream.format("json")
             .option("path", str(bronze_out)).option("checkpointLocation", str(bronze_cp))
             .trigger(availableNow=True).start())
        q.awaitTermination()

    base = int(time.time() * 1000)
    _land(src, 0, base - 10_000)
    bronze()
    q = (spark.readStream.schema("k INT, v INT").json(str(bronze_out)).writeStream.format("noop")
         .option("checkpointLocation", str(silver_cp)).trigger(availableNow=True).start())
    q.awaitTermination()
    assert [json.loads(p.json())["numInputRows"] for p in q._jsq.recentProgress()] == [1]
    _land(src, 1, base - 5_000)
    bronze()
    committed = (bronze_cp / "commits" / "1").stat().st_mtime_ns // 1_000_000
    now = committed + 90_000
    watch = CheckpointWatch([str(ws)], poll_s=1.0, clock=lambda: now / 1000)
    records = watch.open()
    (edge,) = [r for r in records if isinstance(r, PipelineEdge)]
    assert (edge.upstream, edge.downstream) == ("p_bronze", "p_silver")
    assert edge.backlog_files == len(list(bronze_out.glob("part-*"))) - 1  # batch 0's one file was read
    assert edge.lag_s == (now - committed) / 1000
    silver = next(w for w in watch.watchers if w.name == "p_silver")
    (lag,) = silver.measure_lags(now)
    assert lag.backlog is None and lag.reason is not None and "file sink's output" in lag.reason
