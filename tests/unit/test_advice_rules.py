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
from streamwatch.analysis.advice_files import max_files_per_trigger
from streamwatch.analysis.records import SourceLag
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


def write_file_cp(root: Path, files: tuple[int, ...], *, idle_batches: tuple[int, ...] = ()) -> Path:
    """A file-source checkpoint: query batch N planned at T0 + 10 s × N; each batch not in
    ``idle_batches`` reads the next source-log batch, ``files[k]`` files (``sources/0/<k>``:
    FileEntry lines), and ``offsets/N`` carries ``{"logOffset": k}`` as Spark writes it."""
    cp = root / "fcp"
    for d in ("offsets", "commits", "sources/0"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    log, n = -1, 0
    for b in range(len(files) + len(idle_batches)):
        if b not in idle_batches:
            log += 1
            rows = [json.dumps({"path": f"file:///in/f{n + i}.json", "timestamp": T0, "batchId": log})
                    for i in range(files[log])]
            n += files[log]
            (cp / "sources" / "0" / str(log)).write_text("v1\n" + "\n".join(rows))
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + b * 10_000, "conf": {}}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + json.dumps({"logOffset": log}))
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return cp


def _lag(backlog: int | None, catching_up: bool | None, landed: int = 0, read: int = 0, span_s: int = 100) -> SourceLag:
    """A :class:`SourceLag` of source 0 measured ``span_s`` s after the window's start."""
    return SourceLag(QID, "q", "cp", "0", "file", T0 + span_s * 1000, backlog, T0, 1.0,
                     landed / span_s, read / span_s, T0, None, catching_up)


def test_one_huge_first_batch_advises_twice_the_later_batches_files(tmp_path):
    cp = read_checkpoint(write_file_cp(tmp_path, (200, 10, 12, 8)))
    (a,) = max_files_per_trigger(cp, ())
    assert (a.code, a.verdict, a.confidence, a.target) == ("advise-max-files-per-trigger", Verdict.CHANGE,
                                                           Confidence.LIKELY, 20)
    ev = {e.what: (e.value, e.unit, e.source) for e in a.evidence}
    assert ev["files read by the first batch"] == (200, "files", "sources/0 log batch 0")
    assert ev["median files of the later batches"] == (10, "files", "3 batches, sources/0 log")
    assert "likely no maxFilesPerTrigger" in a.summary and "not in the checkpoint" in a.summary
    assert a.action is not None and '.option("maxFilesPerTrigger", 20)' in a.action


def test_files_per_batch_follow_the_log_not_the_query_batch_ids(tmp_path):
    # batches 1 and 3 read no file (no source-log batch): the first batch's time is query batch 0,
    # the later log batches 1, 2 are query batches 2, 4
    cp = read_checkpoint(write_file_cp(tmp_path, (40, 10, 10), idle_batches=(1, 3)))
    times = [BatchDuration(0, 30_000, "x"), BatchDuration(1, 5, "x"), BatchDuration(2, 1_000, "x"),
             BatchDuration(3, 5, "x"), BatchDuration(4, 2_000, "x")]
    (a,) = max_files_per_trigger(cp, times)
    ev = {e.what: (e.value, e.source) for e in a.evidence}
    assert ev["first batch time"] == (30_000, "query batch 0")
    assert ev["median batch time of the later batches"] == (1_500, "2 batches")
    # 40 files is 4× the later 10 (under 10×), but 30 s is 20× their 1.5 s: judged huge
    assert (a.verdict, a.target) == (Verdict.CHANGE, 20)


def test_a_first_batch_slow_for_warm_up_alone_is_not_judged_huge(tmp_path):
    # 20 s against 2 s later (10×), but 3 files against 2: the advised 4 would not cap it
    cp = read_checkpoint(write_file_cp(tmp_path, (3, 2, 2)))
    times = [BatchDuration(0, 20_000, "x"), BatchDuration(1, 2_000, "x"), BatchDuration(2, 2_000, "x")]
    (a,) = max_files_per_trigger(cp, times, {"0": _lag(0, True, landed=7, read=7)})
    assert (a.verdict, a.target) == (Verdict.KEEP, None)


def test_a_first_batch_like_the_others_with_a_draining_backlog_is_kept(tmp_path):
    cp = read_checkpoint(write_file_cp(tmp_path, (12, 10, 11)))
    (a,) = max_files_per_trigger(cp, (), {"0": _lag(4, True, landed=30, read=33)})
    assert (a.verdict, a.confidence, a.target, a.action) == (Verdict.KEEP, Confidence.MEASURED, None, None)
    ev = {e.what: e.value for e in a.evidence}
    assert (ev["backlog"], ev["files landed"], ev["files read"]) == (4, 30, 33)


def test_a_binding_limit_with_a_backlog_not_draining_advises_raising_it(tmp_path):
    cp = read_checkpoint(write_file_cp(tmp_path, (5, 5, 5, 5)))
    # 60 files landed in 100 s (0.6/s), batches planned 10 s apart: 6 land a batch, 5 are read
    (a,) = max_files_per_trigger(cp, (), {"0": _lag(50, False, landed=60, read=50)})
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, Confidence.LIKELY, 12)
    assert "read exactly 5 files" in a.summary and "maxFilesPerTrigger=5" in a.summary
    ev = {e.what: (e.value, e.unit) for e in a.evidence}
    assert ev["batch interval"] == (10_000, "ms") and ev["backlog"] == (50, "files")
    assert a.action is not None and '.option("maxFilesPerTrigger", 12)' in a.action


def test_a_backlog_not_draining_without_a_binding_limit_keeps_the_setting(tmp_path):
    cp = read_checkpoint(write_file_cp(tmp_path, (5, 7, 4, 6)))
    (a,) = max_files_per_trigger(cp, (), {"0": _lag(50, False, landed=60, read=22)})
    assert (a.verdict, a.target) == (Verdict.KEEP, None)
    assert "no file limit binds" in a.summary


def test_without_the_backlog_or_a_second_batch_or_a_file_source_the_rule_says_unknown(tmp_path):
    (a,) = max_files_per_trigger(read_checkpoint(write_file_cp(tmp_path / "a", (10, 10, 9))), ())
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)
    assert a.needs is not None and "folder listed" in a.needs
    (b,) = max_files_per_trigger(read_checkpoint(write_file_cp(tmp_path / "b", (200,))), ())
    assert (b.verdict, b.target) == (Verdict.UNKNOWN, None) and b.needs is not None and "two micro-batches" in b.needs
    assert [(e.what, e.value) for e in b.evidence] == [("files read by log batch 0", 200)]
    (c,) = max_files_per_trigger(read_checkpoint(write_cp(tmp_path / "c", 4, state_parts=4)), ())
    assert c.verdict is Verdict.UNKNOWN and c.needs is not None and "file source" in c.needs
