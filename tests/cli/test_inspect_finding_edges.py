"""What an inspect finding's message names: gaps and orphan state versions as ranges, the
``watermark-stalled`` boundaries, and a conf recorded in one batch only (not drift). The
checkpoints are built in Spark's formats by ``tests/cli/conftest.py``."""

from __future__ import annotations

import pytest

from tests.cli.conftest import build_checkpoint, file_entry, finding_messages, write_commit, write_offsets, write_state


def test_missing_batches_are_named_as_ranges(tmp_path, unchanged):
    """Gaps are written as ranges (``1–2, 4``), at most five, then how many more."""
    cp = build_checkpoint(tmp_path, offsets=tuple(range(30)), commits=tuple(range(30)))
    for b in (1, 2, 4):
        (cp / "offsets" / str(b)).unlink()
    for b in (3, 5, 6, 7, 9, 11, 13, 15, 17):
        (cp / "commits" / str(b)).unlink()
    unchanged(cp)
    findings = finding_messages(cp)
    assert "batches 1–2, 4 missing" in findings["offsets-gap"]
    assert "batches 3, 5–7, 9, 11, 13 (+2 more ranges) missing" in findings["commits-gap"]
    assert "commits without offsets: batches 1–2, 4" in findings["commit-without-offsets"]


def test_orphan_state_versions_are_named_as_ranges(tmp_path, unchanged):
    cp = build_checkpoint(tmp_path)
    write_state(cp, {0: [1, 2, 3, 5, 6, 7, 9], 1: [1, 2, 3]})
    unchanged(cp)
    findings = finding_messages(cp)
    assert "state versions 5–7, 9 are beyond" in findings["state-orphan-versions"]


@pytest.mark.parametrize(("watermarks", "stalled"), [
    ([5] * 5, False),  # five batches are not enough to call it stalled
    ([5] * 6, True),  # six batches, the last five did not move it
    ([1, 2, 2, 2, 2, 2, 2], True),  # moved before the last six batches
    ([1, 1, 2, 2, 2, 2, 2], False),  # moved inside the last six
    ([1] * 7, True),  # the smallest watermark counts
    ([0] * 7, False),  # no watermark at all (0 ms: none defined)
])
def test_watermark_stalled_boundaries(tmp_path, unchanged, watermarks, stalled):
    cp = build_checkpoint(tmp_path, offsets=(), commits=())
    for b, wm in enumerate(watermarks):
        write_offsets(cp, b, watermark=wm)
        (cp / "sources" / "0" / str(b)).write_text("v1\n" + file_entry(f"file:///in/f{b}.json", b, sink=False))
        write_commit(cp, b)
    unchanged(cp)
    codes = finding_messages(cp)
    assert ("watermark-stalled" in codes) == stalled, codes
    if stalled:
        assert f"stuck at {watermarks[-1]} ms since batch {len(watermarks) - 6}" in codes["watermark-stalled"]


def test_a_conf_recorded_in_only_one_batch_is_not_drift(tmp_path, unchanged):
    cp = build_checkpoint(tmp_path, conf={"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.stateStore.compression.codec": "lz4"})
    write_offsets(cp, 2, conf={"spark.sql.shuffle.partitions": "2"})
    unchanged(cp)
    assert "conf-drift" not in finding_messages(cp)
