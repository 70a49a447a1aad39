"""A clean stop leaves no planned batch (issue 32 item 4): after streamwatch's stop path on
queries that were busy — a file source with many files and ``maxFilesPerTrigger``, the default
trigger and ``processingTime`` triggers, a ``foreachBatch`` that sleeps, the events pipeline's
bronze/silver layers — every checkpoint's ``commits/`` holds the same last batch as its
``offsets/`` (read with ``os.listdir``, not streamwatch's reader) and neither holds a ``.tmp``,
or the query is named as stopped because the grace ran out."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

#: generous bounds (s) for a loaded 2-core machine: conditions are waited on, never slept on
BUSY_TIMEOUT_S = 240
GRACE_S = 120


def _disk(cp: Path) -> tuple[int | None, int | None, list[str]]:
    """(last offsets/N, last commits/N, .tmp files in both) straight from the folders."""
    def ids(d: Path) -> list[int]:
        return sorted(int(n) for n in os.listdir(d) if n.isdecimal()) if d.is_dir() else []
    offs, coms = ids(cp / "offsets"), ids(cp / "commits")
    tmps = [f"{d}/{n}" for d in ("offsets", "commits") if (cp / d).is_dir() for n in os.listdir(cp / d) if n.endswith(".tmp")]
    return (offs[-1] if offs else None), (coms[-1] if coms else None), tmps


def _wait_busy(queries, batches: int) -> None:
    """Wait until every query has finished ``batches`` batches (its progress says so)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    for q in queries:
        while (q.lastProgress or {}).get("batchId", -1) < batches - 1:
            assert q.isActive, f"{q.name} ended before it was busy: {q.exception()}"
            assert time.monotonic() < deadline, f"{q.name} did not run {batches} batches in {BUSY_TIMEOUT_S} s"
            q.awaitTermination(0.05)  # returns at once if it terminates


def _land(folder: Path, files: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        (folder / f"part-{i:04d}.json").write_text("".join(f'{{"a": {i}, "b": {j}}}\n' for j in range(10)))


def test_graceful_stop_on_busy_file_queries_leaves_every_batch_committed(spark, tmp_path):
    from streamwatch.spark.schedule import graceful_stop

    landing = tmp_path / "landing"
    _land(landing, 600)  # far more than the queries read before the stop: they stay busy
    seen: dict[str, int] = {}

    def slow(df, batch_id):  # a foreachBatch that sleeps: the stop lands inside its batch
        df.count()
        seen["calls"] = seen.get("calls", 0) + 1
        threading.Event().wait(0.3)

    shapes = [("default", True), ("default", False), ("processingTime=100 milliseconds", True),
              ("processingTime=100 milliseconds", False), ("processingTime=1 second", False)]
    queries = []
    for i, (trigger, sleeps) in enumerate(shapes):
        w = (spark.readStream.schema("a INT, b INT").option("maxFilesPerTrigger", 2).json(str(landing))
             .writeStream.queryName(f"truth_stop_{i}").option("checkpointLocation", str(tmp_path / f"cp{i}")))
        w = w.foreachBatch(slow) if sleeps else w.format("parquet").option("path", str(tmp_path / f"out{i}"))
        if trigger != "default":
            w = w.trigger(processingTime=trigger.split("=", 1)[1])
        queries.append(w.start())
    try:
        _wait_busy(queries, 3)
        requested: set[str] = set()
        forced = graceful_stop(queries, requested, GRACE_S)
    finally:
        for q in queries:
            q.stop()
    assert requested == {str(q.runId) for q in queries}
    assert not forced, "a 120 s grace is enough for a batch of two small files"
    for i, q in enumerate(queries):
        assert not q.isActive and q.exception() is None, (shapes[i], q.exception())
        planned, committed, tmps = _disk(tmp_path / f"cp{i}")
        assert planned is not None and planned >= 2, (shapes[i], planned)
        assert (planned, tmps) == (committed, []), f"{shapes[i]}: offsets/{planned}, commits/{committed}, {tmps}"


def test_runner_stop_on_the_busy_events_pipeline(spark, tmp_path):
    """The project's own stop path (``PipelineRunner.stop``, what ``q`` and ``log`` call),
    twice over: every checkpoint ends committed, or its query is named as forced."""
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.events.factory import EventsFactory

    ws = Workspace(tmp_path)
    EventsFactory(ws.landing("events", "events"), interval_minutes=60).land(40)
    runner = PipelineRunner(spark, get_pipeline("events"), ws, "parquet", {"max_files_per_trigger": 1})
    for trigger in ("default", "processingTime=100 milliseconds"):
        queries = [runner.start_layer(name, trigger) for name in ("bronze", "silver")]
        _wait_busy(queries[:1], 2)
        forced = runner.stop(grace_s=GRACE_S)
        assert forced == runner.query_names(runner.forced_stops & {str(q.runId) for q in queries})
        for layer, q in zip(("bronze", "silver"), queries, strict=True):
            assert not q.isActive
            planned, committed, tmps = _disk(Path(str(ws.checkpoint("events", layer))))
            if q.name in forced:
                continue  # said on screen / on stderr; the inspector reports its planned batch
            assert q.exception() is None, q.exception()
            assert (planned, tmps) == (committed, []), f"{trigger} {layer}: offsets/{planned}, commits/{committed}, {tmps}"


def test_a_grace_that_runs_out_is_named(spark, tmp_path):
    """A batch still running when the grace runs out: the query is stopped anyway, its run id
    is returned as forced, and the dashboard/log get one warning notice naming it."""
    from streamwatch.analysis.fmt import grace_ran_out
    from streamwatch.spark.schedule import graceful_stop

    landing = tmp_path / "landing"
    _land(landing, 4)
    inside, release = threading.Event(), threading.Event()

    def held(df, batch_id):
        inside.set()
        release.wait(30)  # the stop below gives it 0 s

    q = (spark.readStream.schema("a INT, b INT").option("maxFilesPerTrigger", 1).json(str(landing))
         .writeStream.queryName("truth_forced").option("checkpointLocation", str(tmp_path / "cp"))
         .foreachBatch(held).start())
    try:
        assert inside.wait(BUSY_TIMEOUT_S), "the first batch never reached foreachBatch"
        timer = threading.Timer(1.0, release.set)  # let the Python side return so stop() can end
        timer.start()
        forced = graceful_stop([q], set(), 0.0)
    finally:
        release.set()
        q.stop()
    assert forced == {str(q.runId)}
    assert not q.isActive
    line = grace_ran_out(["truth_forced"], 10)
    assert line.startswith("truth_forced: its running batch did not commit within the 10 s stop grace")
    assert "planned, not committed: Spark runs it again on restart" in line
