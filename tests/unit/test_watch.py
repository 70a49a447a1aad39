"""The checkpoint watch (streamwatch.analysis): timing, stuck/idle, incremental cost,
pipeline backlog — on checkpoints written in Spark's format with exact times."""

from __future__ import annotations

import json

import pytest

from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, PipelineEdge
from streamwatch.analysis.session import CheckpointWatch
from streamwatch.analysis.watch import CheckpointWatcher, WatchError
from tests.helpers.fake_checkpoint import QUERY_ID, FakeCheckpoint

T0 = 1_790_000_000_000
EVERY, TAKES = 2_000, 500


def _land(folder, name, size=10):
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_bytes(b"x" * size)
    return p


def _batches(records):
    return [r for r in records if isinstance(r, CheckpointBatch)]


def _steady(tmp_path, n=4, planned_extra=True):
    cp = FakeCheckpoint(tmp_path / "cp")
    for b in range(n):
        f = _land(tmp_path / "landing", f"f{b}.csv", 100 + b)
        cp.plan(b, T0 + b * EVERY, [f"file://{f}"])
        cp.commit(b, T0 + b * EVERY + TAKES)
    if planned_extra:
        cp.plan(n, T0 + n * EVERY)
    return cp


def test_batch_timing_inputs_and_stuck(tmp_path, unchanged):
    _steady(tmp_path)
    unchanged(tmp_path / "cp")
    now = [T0 / 1000]
    w = CheckpointWatcher(str(tmp_path / "cp"), "q", clock=lambda: now[0], poll_s=0.1)
    recs = w.open()
    batches = _batches(recs)
    assert [b.batch_id for b in batches] == [0, 1, 2, 3]
    assert all(b.id == QUERY_ID for b in batches)
    assert [b.duration_ms for b in batches] == [TAKES] * 4
    assert [b.trigger_interval_ms for b in batches[1:]] == [EVERY] * 3
    assert [b.idle_gap_ms for b in batches[1:]] == [EVERY - TAKES] * 3
    assert [(b.input_files, b.input_bytes) for b in batches] == [(1, 100), (1, 101), (1, 102), (1, 103)]
    planned4 = T0 + 4 * EVERY
    assert w.cadence_ms() == EVERY
    s = w.judge(planned4 + 5 * EVERY - 1)
    assert (s.in_flight_batch_id, s.stuck, s.idle) == (4, False, False)
    s = w.judge(planned4 + 5 * EVERY + 1)
    assert s.stuck and s.in_flight_s == pytest.approx(10.001)


def test_stuck_status_record_and_recovery(tmp_path):
    cp = _steady(tmp_path)
    now = [(T0 + 4 * EVERY + 60_000) / 1000]  # batch 4 planned a minute ago, no commit
    w = CheckpointWatcher(str(tmp_path / "cp"), "q", clock=lambda: now[0], poll_s=0.1)
    status = [r for r in w.open() if isinstance(r, CheckpointStatus)]
    assert status[-1].stuck and status[-1].in_flight_batch_id == 4
    cp.commit(4, T0 + 4 * EVERY + 61_000)
    recs = w.poll()
    assert [b.batch_id for b in _batches(recs)] == [4]
    status = [r for r in recs if isinstance(r, CheckpointStatus)]
    assert status and not status[-1].stuck and status[-1].in_flight_batch_id is None
    now[0] = (T0 + 4 * EVERY + 61_000 + 2 * EVERY + 1) / 1000
    s = w.poll()
    assert s and s[-1].idle and not s[-1].stuck


def test_idle_poll_costs_two_lookups_whatever_the_size(tmp_path):
    cp = FakeCheckpoint(tmp_path / "cp")
    for b in range(300):
        cp.plan(b, T0 + b * EVERY)
        cp.commit(b, T0 + b * EVERY + TAKES)
    w = CheckpointWatcher(str(tmp_path / "cp"), "q", history=10)
    assert len(_batches(w.open())) == 10
    before = w.probe.requests
    assert _batches(w.poll()) == []
    assert w.probe.requests - before == 2  # offsets/300, commits/300
    f = _land(tmp_path / "landing", "new.csv", 7)
    cp.plan(300, T0 + 300 * EVERY, [f"file://{f}"])
    cp.commit(300, T0 + 300 * EVERY + TAKES)
    before = w.probe.requests
    got = _batches(w.poll())
    assert [(b.batch_id, b.input_files, b.input_bytes) for b in got] == [(300, 1, 7)]
    assert w.probe.requests - before <= 10  # stat+read offsets, stat commit, source log, file size, misses


def test_pipeline_chain_backlog_and_latency(tmp_path):
    ws = tmp_path / "ws"
    a = FakeCheckpoint(ws / "checkpoints/p/bronze", ws / "tables/p/bronze")
    b = FakeCheckpoint(ws / "checkpoints/p/silver", ws / "tables/p/silver", query_id="silver-id")
    landed = _land(ws / "landing/p/src", "in0.csv", 50)
    a.plan(0, T0, [f"file://{landed}"])  # source log timestamp = T0 - 500 (landing time)
    outs = [(f"file://{ws}/tables/p/bronze/part-{i}.parquet", 1000 + i) for i in range(3)]
    for p, s in outs:
        _land(ws / "tables/p/bronze", p.rsplit("/", 1)[1], s)
    a.commit(0, T0 + 400, outs[:2])
    a.plan(1, T0 + 1000)
    a.commit(1, T0 + 1400, outs[2:])
    b.plan(0, T0 + 2000, [outs[0][0], outs[1][0]])
    b.commit(0, T0 + 3000)
    watch = CheckpointWatch([str(ws)], clock=lambda: (T0 + 5000) / 1000)
    recs = watch.open()
    assert sorted(w.name for w in watch.watchers) == ["p_bronze", "p_silver"]
    silver = [r for r in _batches(recs) if r.query == "p_silver"]
    assert silver[0].origin_ms == T0 - 500 and silver[0].end_to_end_ms == 3500
    edges = [r for r in recs if isinstance(r, PipelineEdge)]
    assert len(edges) == 1
    e = edges[0]
    assert (e.upstream, e.downstream, e.backlog_files, e.backlog_bytes) == ("p_bronze", "p_silver", 1, 1002)
    b.plan(1, T0 + 6000, [outs[2][0]])
    b.commit(1, T0 + 6500)
    e = [r for r in watch.poll() if isinstance(r, PipelineEdge)][0]
    assert (e.backlog_files, e.backlog_bytes) == (0, 0)
    assert e.slowest and e.slowest_layer == "p_silver"  # silver waits longer for its input than bronze


def test_nothing_to_watch_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(WatchError, match="no checkpoint found"):
        CheckpointWatch([str(tmp_path / "empty")]).open()
    with pytest.raises(WatchError, match="no such folder"):
        CheckpointWatch([str(tmp_path / "missing")]).open()


def _offsets(cp_root, b, at_ms, *offsets):
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": at_ms, "conf": {}}
    (cp_root / "offsets" / str(b)).write_text("v1\n" + "\n".join([json.dumps(meta), *offsets]))


def test_kafka_rate_and_delta_inputs_and_a_delta_sink(tmp_path):
    ws = tmp_path / "ws"
    up = FakeCheckpoint(ws / "checkpoints/p/bronze", query_id="bronze-id")
    down = FakeCheckpoint(ws / "checkpoints/p/silver", query_id="silver-id")
    log = ws / "tables/p/bronze/_delta_log"
    log.mkdir(parents=True)
    (ws / "tables/p/silver/_delta_log").mkdir(parents=True)

    def delta_commit(v, batch, adds, meta=False):
        rows = [{"metaData": {"id": "table-bronze"}}] if meta else []
        rows += [{"add": {"path": f"part-{v}-{i}.parquet", "size": 10}} for i in range(adds)]
        rows += [{"txn": {"appId": "bronze-id", "version": batch}}]
        (log / f"{v:020d}.json").write_text("\n".join(json.dumps(r) for r in rows))

    kafka = [{"t": {"0": 5, "1": 7}}, {"t": {"0": 9, "1": 7}}]
    rate = [{"0": {"value": 10, "runTimeMs": 1}}, {"0": {"value": 25, "runTimeMs": 2}}]
    for b in range(2):
        _offsets(up.root, b, T0 + b * 1000, json.dumps(kafka[b]), json.dumps(rate[b]))
        delta_commit(b, b, 2 + b, meta=(b == 0))
        up.commit(b, T0 + b * 1000 + 100)
    delta = {"sourceVersion": 1, "reservoirId": "table-bronze", "reservoirVersion": 0, "index": -1,
             "isStartingVersion": False}
    _offsets(down.root, 0, T0 + 3000, json.dumps(delta))
    down.commit(0, T0 + 3500)
    watch = CheckpointWatch([str(ws)], clock=lambda: (T0 + 5000) / 1000)
    recs = watch.open()
    b1 = next(r for r in _batches(recs) if r.query == "p_bronze" and r.batch_id == 1)
    kafka_in, rate_in = b1.inputs
    assert kafka_in.kind == "kafka" and kafka_in.offsets == {"t": {"0": 4, "1": 0}}
    assert (rate_in.kind, rate_in.advanced) == ("rate", 15)
    assert (b1.output.kind, b1.output.versions, b1.output.files) == ("delta", (1,), 3)
    s0 = next(r for r in _batches(recs) if r.query == "p_silver")
    assert s0.inputs[0].kind == "delta" and s0.inputs[0].versions == (0, 0)
    (edge,) = [r for r in recs if isinstance(r, PipelineEdge)]
    # silver's offset (version 0, index -1) is *before* version 0: versions 0 and 1, 2 + 3 files
    # not read yet (Delta moves a source that has read version v to (v + 1, -1))
    assert (edge.upstream, edge.downstream, edge.backlog_versions, edge.backlog_files) == ("p_bronze", "p_silver", 2, 5)


def test_history_zero_derives_only_what_commits_from_now_on(tmp_path):
    cp = _steady(tmp_path, planned_extra=False)
    w = CheckpointWatcher(str(tmp_path / "cp"), "q", history=0)
    assert _batches(w.open()) == []
    assert _batches(w.poll()) == []
    cp.plan(4, T0 + 4 * EVERY)
    cp.commit(4, T0 + 4 * EVERY + TAKES)
    assert [b.batch_id for b in _batches(w.poll())] == [4]


def test_a_checkpoint_created_later_is_picked_up(tmp_path):
    _steady(tmp_path / "one")
    watch = CheckpointWatch([str(tmp_path)], rediscover_s=0)
    watch.open()
    assert [w.name for w in watch.watchers] == ["one/cp"]
    _steady(tmp_path / "two")
    got = _batches(watch.poll())
    assert sorted(w.name for w in watch.watchers) == ["one/cp", "two/cp"]
    assert [b.batch_id for b in got if b.query == "two/cp"] == [0, 1, 2, 3]
