"""`streamwatch watch` against Spark as the oracle: the flights pipeline runs with its
listener recording while a checkpoint watch follows its workspace; every committed batch is
derived from the files alone with the listener's batch ids, the input files Spark read and
durations close to the listener's triggerExecution."""

from __future__ import annotations

import json
import shutil
import threading
import time

import pytest

from streamwatch.analysis.diagnosis import stuck_limit_ms
from streamwatch.analysis.merge import ListenerNumbers, MergedRecords
from streamwatch.analysis.records import CheckpointBatch, PipelineEdge
from streamwatch.analysis.session import CheckpointWatch
from streamwatch.analysis.watch import IDLE_FACTOR, CheckpointWatcher
from streamwatch.events.reader import ReadReport, read_recording
from streamwatch.model.events import QueryProgress

pytestmark = pytest.mark.spark
LAYERS = ("bronze", "silver", "gold")  # the chain; quarantine, weather and enriched are not run


@pytest.fixture(scope="module")
def watched_run(spark, tmp_path_factory):
    """Flights' bronze → silver → gold (4 landed files, 2 per trigger) run with
    ``availableNow`` while a recording listens and a watch polls the workspace in a thread,
    merging the recording as it is written (``watch --recording``)."""
    import streamwatch
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.flights.factory import FlightsFactory

    root = tmp_path_factory.mktemp("watch-ws")
    ws = Workspace(root)
    FlightsFactory(ws.landing("flights", "flights")).land(4)
    runner = PipelineRunner(spark, get_pipeline("flights"), ws, "parquet", {"max_files_per_trigger": 2})
    watch = CheckpointWatch([str(root)], poll_s=0.25, rediscover_s=0, allow_empty=True)
    records = list(watch.open())
    stop = threading.Event()
    polls = [0]
    # `watch --recording`: the recording followed as it is written, merged into the watch's
    # records (a grace no batch outlasts: a batch goes out unmerged only if Spark never reported it)
    numbers = ListenerNumbers(root / "events.jsonl")
    merger = MergedRecords(numbers, grace_s=600)
    merged = merger.take(list(records))

    def follow() -> None:
        while not stop.wait(0.25):
            new = watch.poll()
            records.extend(new)
            merged.extend(merger.take(new))
            polls[0] += 1

    t = threading.Thread(target=follow, daemon=True)
    rec = streamwatch.record(spark, root / "events.jsonl")
    numbers.follow(poll_s=0.1)
    t.start()
    try:
        for layer in LAYERS:  # upstream first, each to the end of its input (availableNow)
            q = runner.start_layer(layer, "availableNow")
            q.awaitTermination(300)
            assert not q.isActive and q.exception() is None, (layer, q.exception())
    finally:
        rec.stop()
        stop.set()
        t.join(30)
    last = watch.poll()  # the last commits (the thread may have stopped just before)
    records.extend(last)
    merged.extend(merger.take(last))
    progress = [e for e in read_recording(root / "events.jsonl", ReadReport()) if isinstance(e, QueryProgress)]
    deadline = time.monotonic() + 60  # the follower reaches the end of the finished recording
    while len(numbers.progress) < len(progress) and time.monotonic() < deadline:
        numbers._stop.wait(0.05)
    merged.extend(merger.take([]) + merger.flush())
    numbers.close()
    return spark, root, watch, records, progress, polls[0], merged


def _by_key(records):
    out: dict[tuple[str, int], CheckpointBatch] = {}
    for r in records:
        if isinstance(r, CheckpointBatch):
            assert (r.id, r.batch_id) not in out, f"batch {r.query}/{r.batch_id} derived twice"
            out[(r.id, r.batch_id)] = r
    return out


def test_every_committed_batch_is_derived_with_the_listeners_ids(watched_run):
    _spark, root, watch, records, progress, polls, _merged = watched_run
    assert polls > 5, "the watch ran alongside the pipeline"
    derived = _by_key(records)
    listened = {(p.id, p.batch_id): p for p in progress}
    assert sorted(w.name for w in watch.watchers) == [f"flights_{layer}" for layer in sorted(LAYERS)]
    assert set(derived) == set(listened), (set(derived) ^ set(listened))
    for w in watch.watchers:  # and the checkpoint's commit log agrees
        commits = {int(n.name) for n in (root / w.url[len(str(root)) + 1:] / "commits").iterdir() if n.name.isdigit()}
        assert {b for (qid, b) in derived if qid == w.query_id} == commits, w.name
    names = {p.id: p.name for p in progress}
    assert all(names[k[0]] == r.query for k, r in derived.items())  # flights_bronze … as Spark names them


def test_durations_agree_with_trigger_execution(watched_run):
    *_, records, progress, _polls, _merged = watched_run
    derived = _by_key(records)
    for p in progress:
        d = derived[(p.id, p.batch_id)]
        te = p.duration_ms["triggerExecution"]
        assert abs(d.duration_ms - te) <= max(1000, 0.2 * te), (p.name, p.batch_id, d.duration_ms, te)


def test_input_files_are_the_files_spark_read(watched_run):
    spark, root, watch, records, progress, _, _merged = watched_run
    derived = _by_key(records)
    rows = {(p.id, p.batch_id): p.num_input_rows for p in progress}
    for key, d in derived.items():
        if d.query in ("flights_silver", "flights_gold"):  # read bronze/silver Parquet files
            (src,) = d.inputs
            count = spark.read.parquet(*[p for p in src.paths]).count() if src.paths else 0
            assert count == rows[key], (d.query, d.batch_id, src.files, count, rows[key])
    bronze = [d for d in derived.values() if d.query == "flights_bronze"]
    read = [p.rsplit("/", 1)[1] for d in bronze for s in d.inputs for p in s.paths]
    landed = sorted(p.name for p in (root / "landing/flights/flights").iterdir() if p.suffix == ".csv")
    assert sorted(read) == landed  # each landed file read exactly once
    assert all(d.input_files <= 2 for d in bronze) and len(bronze) == 2  # maxFilesPerTrigger=2
    assert all(d.input_bytes == sum((root / "landing/flights/flights" / p.rsplit("/", 1)[1]).stat().st_size
                                    for s in d.inputs for p in s.paths) for d in bronze)


def test_pipeline_edges_backlog_drained_and_end_to_end(watched_run):
    *_, watch, records, _progress, _, _merged = watched_run
    edges = {(e.upstream, e.downstream): e for e in watch.edges}
    assert ("flights_bronze", "flights_silver") in edges and ("flights_silver", "flights_gold") in edges
    assert all(e.backlog_files == 0 for e in edges.values())  # availableNow read everything
    assert sum(e.slowest for e in {e.downstream: e for e in edges.values()}.values()) <= 1
    gold = [r for r in records if isinstance(r, CheckpointBatch) and r.query == "flights_gold" and r.origin_ms]
    bronze_in = min(m for r in records if isinstance(r, CheckpointBatch) and r.query == "flights_bronze"
                    for s in r.inputs for m in s.file_mtimes_ms)
    assert gold and min(r.origin_ms for r in gold) == bronze_in  # lineage reaches the landed files
    assert all(r.end_to_end_ms >= r.duration_ms for r in gold)
    assert any(isinstance(r, PipelineEdge) for r in records)


def test_a_killed_batch_is_stuck_and_a_finished_query_idle(watched_run, tmp_path, unchanged):
    _spark, root, watch, *_ = watched_run
    bronze = next(w for w in watch.watchers if w.name == "flights_bronze")
    copy = tmp_path / "bronze-killed"
    shutil.copytree(bronze.url, copy)
    last = max(int(n.name) for n in (copy / "commits").iterdir() if n.name.isdigit())
    (copy / "commits" / str(last)).unlink()  # offsets N, no commit N: as a kill mid-batch leaves it
    unchanged(copy)
    w = CheckpointWatcher(str(copy), "killed", poll_s=0.05)
    w.open()
    planned = w.offsets[last].timestamp_ms
    cadence = w.cadence_ms()
    durations = [b.duration_ms for b in w.batches if b.duration_ms is not None]
    threshold = max(stuck_limit_ms(durations, cadence), 100)  # its own batches, not a fixed factor
    assert not w.judge(planned + threshold - 1).stuck
    s = w.judge(planned + threshold + 1)
    assert s.stuck and s.in_flight_batch_id == last and not s.idle
    # idle past max(IDLE_FACTOR × cadence, two polls): the watcher's own floor (this watch polls
    # every 0.25 s), which a fast machine's short cadence falls under
    idle_after = max(IDLE_FACTOR * bronze.cadence_ms(), int(2 * bronze.poll_s * 1000))
    done = bronze.judge(bronze.commit_at[bronze.last_commit_id] + idle_after + 1)
    assert done.idle and not done.stuck and done.in_flight_batch_id is None


def test_pipeline_tab_draws_the_watched_workspace(watched_run):
    """Pilot: `streamwatch watch WORKSPACE`'s pipeline tab (key 7) draws bronze → silver →
    gold with the backlog per edge the watch derived (0: availableNow read everything), the
    slowest layer marked and the end-to-end latency of gold's last batch."""
    import asyncio

    from streamwatch.backends.checkpoints import CheckpointBackend
    from streamwatch.tui.app import StreamwatchApp
    from tests.tui.conftest import wait_for

    _spark, root, watch, records, *_ = watched_run
    backend = CheckpointBackend([str(root)], poll_s=0.2)
    app = StreamwatchApp(backend, watch_landing=False, checkpoint_refresh_s=0)

    async def scenario() -> tuple[object, str]:
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_for(pilot, lambda: app.model.pipeline is not None and len(app.model.pipeline.links) >= 2,
                           "the pipeline graph with its learnt edges")
            await pilot.press("7")
            await wait_for(pilot, lambda: app.active_tab == "pipeline"
                           and "flights_gold" in str(app.query_one("#pipe-graph").content), "the pipeline tab drawn")
            drawn = str(app.query_one("#pipe-graph").content)
            head = str(app.query_one("#pipe-head").content)
            graph = app.model.pipeline
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, "the app to exit")
            return graph, drawn + "\n" + head

    graph, drawn = asyncio.run(scenario())
    print(drawn)
    cols = {lay.name: lay.column for lay in graph.layers}
    assert cols == {"flights_bronze": 0, "flights_silver": 1, "flights_gold": 2}
    assert {(e.upstream, e.downstream): e.backlog_files for e in graph.links} == {
        (e.upstream, e.downstream): e.backlog_files for e in watch.edges} == {
        ("flights_bronze", "flights_silver"): 0, ("flights_silver", "flights_gold"): 0}
    slowest = next(e.slowest_layer for e in watch.edges)
    assert graph.slowest == slowest and graph.layer(slowest).slowest
    last_gold = max((r for r in records if isinstance(r, CheckpointBatch) and r.query == "flights_gold"),
                    key=lambda r: r.batch_id)
    assert graph.layer("flights_gold").batch_id == last_gold.batch_id
    assert graph.end_to_end_ms == graph.layer("flights_gold").end_to_end_ms is not None
    for name in cols:
        assert f" {name} " in drawn
    assert drawn.count("▶") == 2 and "← bronze: 0 file(s)" in drawn and "← silver: 0 file(s)" in drawn
    assert f"{slowest} ◆ slowest" in drawn


def test_recording_merged_while_watched_listener_numbers_win(watched_run):
    """`watch --recording` followed while the pipeline ran: every committed batch carries the
    listener's numbers (duration = triggerExecution exactly, rows), once each."""
    *_, progress, _polls, merged = watched_run
    batches = _by_key(merged)
    listened = {(p.id, p.batch_id): p for p in progress}
    assert set(batches) == set(listened)
    for key, b in batches.items():
        p = listened[key]
        assert b.listener is not None, (b.query, b.batch_id)
        assert b.duration_ms == p.duration_ms["triggerExecution"]
        assert b.listener.input_rows == p.num_input_rows and b.listener.run_id == p.run_id
        assert b.listener.output_rows == p.num_output_rows
        assert b.input_files is not None  # the checkpoint's own numbers stay
    assert any(isinstance(r, PipelineEdge) for r in merged)


def test_watch_cli_once_with_recording(watched_run, unchanged):
    """`streamwatch watch WS --log --once --recording FILE` after the run: the JSONL's batches
    carry the listener's numbers; a missing recording is exit 4."""
    from click.testing import CliRunner

    from streamwatch.cli import main

    _spark, root, _watch, _records, progress, *_ = watched_run
    unchanged(root / "checkpoints")
    run = CliRunner().invoke(main, ["watch", str(root), "--log", "--once", "--recording", str(root / "events.jsonl")])
    assert run.exit_code == 0, run.output
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
    batches = {(d["id"], d["batchId"]): d for d in lines if d["kind"] == "checkpoint-batch"}
    listened = {(p.id, p.batch_id): p for p in progress}
    assert set(batches) == set(listened)
    for key, d in batches.items():
        assert d["listener"]["inputRows"] == listened[key].num_input_rows
        assert d["durationMs"] == listened[key].duration_ms["triggerExecution"]
    assert f"{len(listened)} batch(es) merged" in run.stderr
    bad = CliRunner().invoke(main, ["watch", str(root), "--log", "--once", "--recording", str(root / "nope.jsonl")])
    assert bad.exit_code == 4 and "nope.jsonl" in bad.stderr
