"""``advise-min-batches-to-retain`` (streamwatch.analysis.advice_retain) on checkpoints written
here in Spark's on-disk format (``offsets/N`` and ``commits/N``, ``state/0/<partition>/V.delta``
of chosen sizes): every count and byte asserted is one this file wrote."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from streamwatch.analysis.advice import Confidence, Verdict
from streamwatch.analysis.advice_retain import (
    ADVISED,
    EXCESS_FILES,
    RETAIN_CODE,
    RetainedFiles,
    min_batches_to_retain,
    retained_files,
)
from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main

QID = "0a0d0v15-0000-4000-8000-000000000391"
DELTA = 300  # bytes a state delta file
SNAPSHOT = 1_000  # bytes a state snapshot, written every 10th version as Spark's maintenance does


def write_cp(root: Path, first: int, last: int, partitions: int = 2, conf: dict[str, str] | None = None) -> Path:
    """Batches ``first..last`` kept (offsets, commits; state versions ``first+1..last+1``, one
    ``DELTA``-byte delta per partition and a snapshot every 10th version), as Spark leaves a checkpoint it has purged below ``first``."""
    cp = root / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    for b in range(first, last + 1):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_790_000_000_000 + b * 1_000,
                "conf": {"spark.sql.shuffle.partitions": str(partitions)} | (conf or {})}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + str(b))
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
        for p in range(partitions):
            d = cp / "state" / "0" / str(p)
            d.mkdir(parents=True, exist_ok=True)
            (d / f"{b + 1}.delta").write_bytes(b"x" * DELTA)
            if (b + 1) % 10 == 0:
                (d / f"{b + 1}.snapshot").write_bytes(b"s" * SNAPSHOT)
    return cp


def _ev(a) -> dict[str, int | float]:
    return {e.what: e.value for e in a.evidence}


def _listing(cp: Path, area: str) -> tuple[int, int]:
    files = [f for f in (cp / area).rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def test_default_retention_over_many_batches_is_lowered(tmp_path):
    path = write_cp(tmp_path, 20, 120)  # Spark's default: 100 batches behind the latest
    cp = read_checkpoint(str(path))
    a = min_batches_to_retain(cp, retained_files(str(path), cp))
    assert (a.code, a.verdict, a.confidence, a.target) == (RETAIN_CODE, Verdict.CHANGE, Confidence.LIKELY, ADVISED)
    ev = _ev(a)
    assert ev["minBatchesToRetain (inferred)"] == 100
    for area in ("offsets", "commits", "state"):
        assert (ev[f"kept in {area}/"], ev[f"bytes kept in {area}/"]) == _listing(path, area)
    # at 10, planning batch 121 purges offsets/commits below 111; the HDFS store committing
    # version 122 keeps from the newest snapshot at or below 112 (110): every file of 21..109 goes
    old_logs = [path / d / str(b) for d in ("offsets", "commits") for b in range(20, 111)]
    old_state = [f for f in (path / "state").rglob("*.*") if int(f.name.split(".")[0]) < 110]
    assert ev[f"files freed at {ADVISED}"] == len(old_logs) + len(old_state) == 2 * 91 + 2 * (89 + 8) >= EXCESS_FILES
    assert ev[f"bytes freed at {ADVISED}"] == sum(f.stat().st_size for f in old_logs + old_state)
    assert (ev["oldest state version kept"], ev["newest state version"]) == (21, 121)
    assert "batches 20..120" in a.summary and "minBatchesToRetain=10" in (a.action or "")


def test_few_batches_kept_is_kept_measured(tmp_path):
    path = write_cp(tmp_path, 40, 50)
    cp = read_checkpoint(str(path))
    a = min_batches_to_retain(cp, retained_files(str(path), cp))
    assert (a.verdict, a.confidence, a.action) == (Verdict.KEEP, Confidence.MEASURED, None)
    assert _ev(a)["minBatchesToRetain (inferred)"] == 10 and "batches 40..50" in a.summary


def test_many_batches_of_little_weight_are_kept_likely(tmp_path):
    path = write_cp(tmp_path, 0, 40, partitions=1)  # nothing purged yet; 31 batches' files < 200
    cp = read_checkpoint(str(path))
    a = min_batches_to_retain(cp, retained_files(str(path), cp))
    assert (a.verdict, a.confidence) == (Verdict.KEEP, Confidence.LIKELY)
    assert _ev(a)["minBatchesToRetain at least (inferred)"] == 40
    assert _ev(a)[f"files freed at {ADVISED}"] == 2 * 31 + 29 + 2  # logs below 31; state below snapshot 30


def test_a_value_in_the_offsets_conf_is_the_one_cited(tmp_path):
    path = write_cp(tmp_path, 0, 5, conf={"spark.sql.streaming.minBatchesToRetain": "7"})
    cp = read_checkpoint(str(path))
    a = min_batches_to_retain(cp, retained_files(str(path), cp))
    assert _ev(a)["minBatchesToRetain"] == 7 and a.verdict is Verdict.KEEP


def test_no_offsets_log_or_no_storage_gives_no_verdict(tmp_path):
    (tmp_path / "cp").mkdir()
    (tmp_path / "cp" / "metadata").write_text(json.dumps({"id": QID}))
    cp = read_checkpoint(str(tmp_path / "cp"))
    a = min_batches_to_retain(cp, retained_files(str(tmp_path / "cp"), cp))
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN) and a.needs
    b = min_batches_to_retain(read_checkpoint(str(write_cp(tmp_path / "x", 0, 3))), RetainedFiles(reason="denied"))
    assert b.verdict is Verdict.UNKNOWN and "denied" in b.summary


def test_advise_command_reports_the_rule(tmp_path):
    path = write_cp(tmp_path, 20, 120)
    r = CliRunner().invoke(main, ["advise", str(path), "--json"])
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == RETAIN_CODE)
    assert (r.exit_code, a["verdict"], a["setting"], a["target"]) == (1, "change", "spark.sql.streaming.minBatchesToRetain",
                                                                      ADVISED)
