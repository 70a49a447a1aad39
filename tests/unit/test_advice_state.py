"""``advise-state-store`` (streamwatch.analysis.advice_state) on checkpoints written here in
Spark's on-disk format (``offsets/N`` with its conf, ``state/0/<partition>/`` with
``V.delta``/``V.snapshot`` or ``V.zip``/``V.changelog`` files of chosen sizes) and on progress
dicts in the shape of ``StreamingQueryProgress.json``: every number asserted is one this file
wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.analysis.advice import PROVIDER_CONF, Confidence, Verdict
from streamwatch.analysis.advice_state import (
    CHANGELOG_CONF,
    HDFS_KEEP_BYTES,
    StateFiles,
    newest_version_files,
    state_store,
)
from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main
from streamwatch.model.events import QueryProgress

QID = "0a0d0v15-0000-4000-8000-000000000039"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def write_cp(root: Path, provider: str | None, files: dict[str, int], partitions: int = 2, batches: int = 3) -> Path:
    """A checkpoint of ``batches`` batches whose offsets conf names ``provider`` (None: no
    provider in the conf), each of ``partitions`` state folders holding ``files`` (name → size)."""
    cp = root / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    conf = {"spark.sql.shuffle.partitions": str(partitions)} | ({PROVIDER_CONF: provider} if provider else {})
    for b in range(batches):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_790_000_000_000 + b * 1_000, "conf": conf}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + str(b))
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    for p in range(partitions):
        d = cp / "state" / "0" / str(p)
        d.mkdir(parents=True)
        for name, size in files.items():
            (d / name).write_bytes(b"x" * size)
    return cp


def progress(batch: int, memory: int, commit_ms: int, metrics: dict[str, int] | None = None) -> QueryProgress:
    op = {"operatorName": "stateStoreSave", "numRowsTotal": 1_000, "commitTimeMs": commit_ms, "memoryUsedBytes": memory,
          "numShufflePartitions": 2, "numStateStoreInstances": 2, "customMetrics": metrics or {}}
    return QueryProgress.from_dict({"id": QID, "runId": "r", "batchId": batch, "timestamp": "2026-11-27T19:00:00.000Z",
                                    "durationMs": {"triggerExecution": 500}, "stateOperators": [op]})


def _ev(a) -> dict[str, int | float]:
    return {e.what: e.value for e in a.evidence}


def test_hdfs_state_up_to_the_measured_size_is_kept_on_sparks_numbers(tmp_path):
    cp = read_checkpoint(write_cp(tmp_path, HDFS, {"1.delta": 10, "2.delta": 10, "3.delta": 10}))
    a = state_store(cp, [progress(1, 5, 40), progress(2, HDFS_KEEP_BYTES, 60, {"stateOnCurrentVersionSizeBytes": 7})])
    assert (a.code, a.setting, a.verdict, a.confidence, a.action) == ("advise-state-store", PROVIDER_CONF, Verdict.KEEP,
                                                                      Confidence.MEASURED, None)
    assert _ev(a)["state memory (memoryUsedBytes)"] == HDFS_KEEP_BYTES
    assert _ev(a)["newest version's map (stateOnCurrentVersionSizeBytes)"] == 7
    assert _ev(a)["median state commit time (commitTimeMs)"] == 50
    assert "HDFSBackedStateStoreProvider (offsets/2 conf)" in a.summary and "120.0 MiB" in a.summary


def test_hdfs_state_above_the_measured_size_gets_no_verdict(tmp_path):
    cp = read_checkpoint(write_cp(tmp_path, HDFS, {"1.delta": 10}))
    a = state_store(cp, [progress(0, HDFS_KEEP_BYTES + 1, 40)])
    assert (a.verdict, a.confidence, a.action) == (Verdict.UNKNOWN, Confidence.UNKNOWN, None)
    assert a.needs is not None and "ADVISE_BENCH_KEYS" in a.needs


def test_the_newest_version_loads_from_its_newest_snapshot_and_the_deltas_after(tmp_path):
    sizes = {"1.delta": 1, "2.delta": 2, "3.delta": 4, "3.snapshot": 100, "4.delta": 8, "5.delta": 16}
    root = write_cp(tmp_path, HDFS, sizes, partitions=3)
    files = newest_version_files(str(root), read_checkpoint(root))
    # per partition: 3.snapshot + 4.delta + 5.delta = 124 bytes, 3 files
    assert files == (StateFiles(operator_id=0, version=5, files=9, bytes=3 * 124, partitions=3),)


def test_without_progress_hdfs_files_are_a_lower_bound_only(tmp_path):
    cp = read_checkpoint(write_cp(tmp_path, HDFS, {"1.delta": 10}))
    a = state_store(cp, [], [StateFiles(0, 1, 2, 10 * HDFS_KEEP_BYTES, 2)])
    assert (a.verdict, a.confidence, a.action) == (Verdict.UNKNOWN, Confidence.UNKNOWN, None)
    assert a.needs is not None and "memoryUsedBytes" in a.needs
    assert _ev(a)["files to load the newest version"] == 10 * HDFS_KEEP_BYTES


def test_rocksdb_without_changelog_files_is_advised_changelog_checkpointing(tmp_path):
    cp = read_checkpoint(write_cp(tmp_path, ROCKSDB, {"1.zip": 5, "2.zip": 5, "3.zip": 5}))
    a = state_store(cp, [progress(1, 9, 300, {"rocksdbBytesCopied": 4_000}), progress(2, 9, 500, {"rocksdbBytesCopied": 6_000})])
    assert (a.setting, a.verdict, a.confidence) == (CHANGELOG_CONF, Verdict.CHANGE, Confidence.MEASURED)
    assert _ev(a)["state versions uploaded as a full snapshot (N.zip)"] == 6  # 3 versions × 2 partitions
    assert _ev(a)["median state commit time (commitTimeMs)"] == 400
    assert _ev(a)["median bytes uploaded at commit (rocksdbBytesCopied)"] == 5_000
    assert a.action is not None and f"{CHANGELOG_CONF}=true" in a.action and "RocksDBStateStoreProvider" in a.summary
    assert "offsets/2 conf" in a.summary
    assert state_store(cp, []).confidence is Confidence.LIKELY  # no progress: the commit cost is not measured


def test_rocksdb_with_changelog_files_is_kept(tmp_path):
    cp = read_checkpoint(write_cp(tmp_path, ROCKSDB, {"1.changelog": 5, "2.changelog": 5, "2.zip": 5, "3.changelog": 5}))
    a = state_store(cp, [])
    assert (a.setting, a.verdict, a.confidence) == (CHANGELOG_CONF, Verdict.KEEP, Confidence.MEASURED)
    assert _ev(a)["state versions uploaded as a full snapshot (N.zip)"] == 2


@pytest.mark.parametrize(("files", "named"), [({"1.delta": 1}, "HDFS-backed"), ({"1.zip": 1}, "RocksDB")])
def test_without_the_provider_in_the_conf_the_file_names_tell(tmp_path, files, named):
    a = state_store(read_checkpoint(write_cp(tmp_path, None, files)), [])
    assert f"{named} state store (from the state file names)" in a.summary


def test_a_stateless_query_gets_no_verdict(tmp_path):
    cp = tmp_path / "cp"
    (cp / "offsets").mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    a = state_store(read_checkpoint(cp), [])
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN) and a.needs is not None


def test_the_cli_gives_the_state_store_finding(tmp_path):
    root = write_cp(tmp_path, ROCKSDB, {"1.zip": 5, "2.zip": 5, "3.zip": 5})
    r = CliRunner().invoke(main, ["advise", str(root), "--json"])
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-state-store")
    assert (r.exit_code, a["verdict"], a["setting"]) == (1, "change", CHANGELOG_CONF)
