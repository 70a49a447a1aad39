"""The advice rules (streamwatch.analysis.advice) on checkpoints written here in Spark's
on-disk format (``offsets/N`` with its conf, ``commits/N`` with a chosen modification time,
``state/0/<partition>/<version>.delta`` or ``.zip``) and on progress dicts in the shape of
``StreamingQueryProgress.json``: every number asserted is one this file wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

from streamwatch.analysis.advice import (
    BatchDuration,
    Confidence,
    Cores,
    Verdict,
    checkpoint_durations,
    progress_durations,
    shuffle_partitions,
)
from streamwatch.checkpoint import read_checkpoint
from streamwatch.model.events import QueryProgress

T0 = 1_790_000_000_000
QID = "0a0d0v15-0000-4000-8000-000000000039"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def write_cp(root: Path, partitions: int, *, state_parts: int | None = None, provider: str = HDFS,
             batches: int = 3, took_ms: tuple[int, ...] = (900, 1100, 1000)) -> Path:
    """A checkpoint of ``batches`` batches planned 10 s apart, batch N committed ``took_ms[N]``
    ms after planning, with ``spark.sql.shuffle.partitions`` = ``partitions`` in its offsets
    conf and ``state_parts`` state partition folders (none: a stateless query)."""
    cp = root / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    conf = {"spark.sql.shuffle.partitions": str(partitions), "spark.sql.streaming.stateStore.providerClass": provider}
    for b in range(batches):
        planned = T0 + b * 10_000
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": planned, "conf": conf}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + str(b))
        commit = cp / "commits" / str(b)
        commit.write_text('v1\n{"nextBatchWatermarkMs":0}')
        done = planned + took_ms[b]
        os.utime(commit, ns=(done * 1_000_000, done * 1_000_000))
    suffix = ".zip" if provider == ROCKSDB else ".delta"
    for p in range(state_parts or 0):
        d = cp / "state" / "0" / str(p)
        d.mkdir(parents=True)
        for v in range(1, batches + 1):
            (d / f"{v}{suffix}").write_bytes(b"")
    return cp


def _mtimes(cp: Path) -> dict[int, int]:
    return {int(p.name): p.stat().st_mtime_ns // 1_000_000 for p in (cp / "commits").iterdir()}


def _progress(batch: int, took: int, shuffle: int | None) -> QueryProgress:
    ops = [] if shuffle is None else [{"operatorName": "stateStoreSave", "numShufflePartitions": shuffle,
                                       "numStateStoreInstances": shuffle}]
    return QueryProgress.from_dict({"id": QID, "runId": "r", "batchId": batch, "timestamp": "2026-11-27T19:00:00.000Z",
                                    "durationMs": {"triggerExecution": took}, "stateOperators": ops})


def test_checkpoint_durations_are_commit_mtime_minus_batch_timestamp(tmp_path):
    cp = write_cp(tmp_path, 4, state_parts=4)
    got = checkpoint_durations(read_checkpoint(cp), _mtimes(cp))
    assert [(d.batch_id, d.ms) for d in got] == [(0, 900), (1, 1100), (2, 1000)]


def test_commit_times_that_are_not_sparks_give_no_durations(tmp_path):
    cp = write_cp(tmp_path, 4, state_parts=4)
    c, mt = read_checkpoint(cp), _mtimes(cp)
    assert checkpoint_durations(c, {**mt, 1: T0}) == ()  # committed before it was planned
    # committed after batch 2 was planned (T0 + 20 s): Spark plans N+1 only after commit N,
    # so these are not Spark's times (a copied checkpoint)
    assert checkpoint_durations(c, {**mt, 1: T0 + 25_000}) == ()
    assert len(checkpoint_durations(c, {**mt, 2: T0 + 99_000})) == 3  # the last batch has no next plan


def test_progress_durations_are_trigger_execution():
    got = progress_durations([_progress(0, 12_584, 200), _progress(1, 1_024, 200)])
    assert [(d.batch_id, d.ms) for d in got] == [(0, 12_584), (1, 1_024)]


def test_200_state_partitions_on_2_cores_advise_4_measured(tmp_path):
    cp = write_cp(tmp_path, 200, state_parts=200)
    c = read_checkpoint(cp)
    a = shuffle_partitions(c, (), Cores(2, "--cores"), checkpoint_durations(c, _mtimes(cp)))
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, Confidence.MEASURED, 4)
    ev = {e.what: (e.value, e.unit, e.source) for e in a.evidence}
    assert ev["spark.sql.shuffle.partitions"] == (200, "partitions", "offsets/2 conf")
    assert ev["state partitions"] == (200, "partitions", "state/0 partition folders")
    assert ev["cores"] == (2, "cores", "--cores")
    assert ev["median batch time"][:2] == (1000, "ms")
    assert "100 task waves" in a.summary
    assert a.action is not None and "new checkpoint" in a.action and "spark.sql.shuffle.partitions=4" in a.action
    assert "restores" in a.action  # the session's value does not apply: said plainly


def test_hdfs_state_is_not_offered_offline_repartition(tmp_path):
    cp = write_cp(tmp_path, 40, state_parts=40, provider=HDFS)
    a = shuffle_partitions(read_checkpoint(cp), (), Cores(2, "--cores"), ())
    assert a.action is not None and "repartition(" not in a.action and "HDFS-backed" in a.action


def test_rocksdb_state_is_offered_offline_repartition_to_the_target(tmp_path):
    cp = write_cp(tmp_path, 40, state_parts=40, provider=ROCKSDB)
    a = shuffle_partitions(read_checkpoint(cp), (), Cores(3, "--cores"), ())
    assert a.target == 6
    assert a.action is not None and f"repartition({str(cp)!r}, 6)" in a.action and "Spark 4.2+" in a.action


def test_without_batch_times_the_verdict_is_likely_and_says_so(tmp_path):
    cp = write_cp(tmp_path, 200, state_parts=200)
    a = shuffle_partitions(read_checkpoint(cp), (), Cores(2, "--cores"), ())
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY)
    assert a.effect is not None and "not measured" in a.effect
    assert "median batch time" not in {e.what for e in a.evidence}


def test_partitions_within_four_per_core_are_kept(tmp_path):
    cp = write_cp(tmp_path, 8, state_parts=8)
    a = shuffle_partitions(read_checkpoint(cp), (), Cores(2, "--cores"), ())
    assert (a.verdict, a.target, a.action) == (Verdict.KEEP, None, None)
    b = shuffle_partitions(read_checkpoint(cp), (), Cores(1, "--cores"), ())
    assert (b.verdict, b.target) == (Verdict.CHANGE, 2)  # 8 > 4 × 1


def test_a_stateless_checkpoint_gets_no_verdict_and_says_what_it_needs(tmp_path):
    cp = write_cp(tmp_path, 200)
    a = shuffle_partitions(read_checkpoint(cp), (), Cores(2, "--cores"), ())
    assert (a.verdict, a.confidence, a.target) == (Verdict.UNKNOWN, Confidence.UNKNOWN, None)
    assert a.needs is not None and "stateful" in a.needs
    assert [e.value for e in a.evidence] == [200]


def test_unknown_cores_give_no_verdict():
    a = shuffle_partitions(None, [_progress(0, 500, 200)], Cores(None, "os.cpu_count() on this machine"), ())
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)
    assert a.needs is not None and "--cores" in a.needs


def test_a_recording_alone_judges_from_num_shuffle_partitions():
    prog = [_progress(0, 3_000, 50), _progress(1, 2_000, 50)]
    a = shuffle_partitions(None, prog, Cores(2, "--cores"), progress_durations(prog))
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, Confidence.MEASURED, 4)
    ev = {e.what: e.value for e in a.evidence}
    assert ev == {"numShufflePartitions": 50, "cores": 2, "median batch time": 2_500}


def test_advice_json_shape():
    a = shuffle_partitions(None, [_progress(0, 100, 16)], Cores(2, "--cores"), [BatchDuration(0, 100, "x")])
    d = a.to_dict()
    assert (d["code"], d["verdict"], d["confidence"], d["target"]) == ("advise-shuffle-partitions", "change", "measured", 4)
    assert d["evidence"][0] == {"what": "numShufflePartitions", "value": 16, "unit": "partitions",
                                "source": "progress stateOperators"}
