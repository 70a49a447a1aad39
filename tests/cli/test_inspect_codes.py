"""Every finding code of the Findings table (docs/inspect.md) on a checkpoint this test builds itself (no shared
corpus), with the documented severity and the ``streamwatch inspect --check`` exit status
(0 no warning/error, 1 worst is a warning, 3 worst is an error, 4 PATH unusable).

Each case writes the smallest checkpoint that shows the problem, in Spark's own on-disk
formats (the builders in ``tests/cli/conftest.py``). What the messages name (ranges, the
watermark-stalled boundaries) is in ``test_inspect_finding_edges.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.conftest import T0, build_checkpoint, inspect_cli, write_offsets, write_sink, write_state

CHECK_EXIT = {None: 0, "info": 0, "warning": 1, "error": 3}


# Each case: (checkpoint builder → (path, extra inspect args), the code, its severity).
def _no_batches(tmp: Path):
    return build_checkpoint(tmp, offsets=(), commits=()), []


def _in_flight(tmp: Path):
    return build_checkpoint(tmp, offsets=(0, 1), commits=(0,)), []


def _previous_offsets_missing(tmp: Path):
    cp = build_checkpoint(tmp, offsets=(0, 1, 2), commits=(0,))
    (cp / "offsets" / "1").unlink()
    return cp, []


def _offsets_gap(tmp: Path):
    cp = build_checkpoint(tmp, offsets=(0, 1, 2, 3), commits=(2, 3))  # older commits purged (retention)
    (cp / "offsets" / "1").unlink()
    return cp, []


def _commits_gap(tmp: Path):
    cp = build_checkpoint(tmp, offsets=(0, 1, 2, 3), commits=(0, 1, 2, 3))
    (cp / "commits" / "1").unlink()
    return cp, []


def _commits_behind(tmp: Path):
    return build_checkpoint(tmp, offsets=(0, 1, 2, 3), commits=(0, 1)), []


def _commit_without_offsets(tmp: Path):
    return build_checkpoint(tmp, offsets=(0, 1), commits=(0, 1, 2)), []


def _no_commits(tmp: Path):
    return build_checkpoint(tmp, offsets=(0, 1), commits=()), []


def _offsets_not_empty_at_batch_0(tmp: Path):
    cp = build_checkpoint(tmp, offsets=(), commits=())
    (cp / "offsets" / ".0.5d1b3c7a-2f6e-4a51-9d0c-8e1f2a3b4c5d.tmp").write_text("v1\n")
    return cp, []


def _unknown_log_version(tmp: Path):
    cp = build_checkpoint(tmp)
    write_offsets(cp, 2, version="v99")
    return cp, []


def _unparsable(tmp: Path):
    cp = build_checkpoint(tmp)
    (cp / "commits" / "2").write_text('v1\n{"nextBatchWat')
    return cp, []


def _empty(tmp: Path):
    cp = build_checkpoint(tmp)
    (cp / "commits" / "2").write_text("")
    return cp, []


def _unreadable(tmp: Path):
    cp = build_checkpoint(tmp)
    (cp / "commits" / "2").unlink()
    os.mkfifo(cp / "commits" / "2")  # unreadable for root too, and never blocks the reader
    return cp, []


def _conf_drift_error(tmp: Path):
    cp = build_checkpoint(tmp)
    write_offsets(cp, 2, conf={"spark.sql.shuffle.partitions": "8"})
    return cp, []


def _conf_drift_warning(tmp: Path):
    cp = build_checkpoint(tmp, conf={"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.stateStore.compression.codec": "lz4"})
    write_offsets(cp, 2, conf={"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.stateStore.compression.codec": "zstd"})
    return cp, []


def _conf_not_recorded(tmp: Path):
    return build_checkpoint(tmp, conf={"spark.sql.streaming.stateStore.providerClass": "x"}), []


def _watermark_stalled(tmp: Path):
    b = tuple(range(7))
    return build_checkpoint(tmp, offsets=b, commits=b, watermark=T0), []


def _state_version_missing(tmp: Path):
    cp = build_checkpoint(tmp)
    write_state(cp, {0: [1, 2, 3], 1: [1, 2]})  # partition 1 lacks version 3 (batch 2 committed)
    return cp, []


def _state_orphan_versions(tmp: Path):
    cp = build_checkpoint(tmp)
    write_state(cp, {0: [1, 2, 3, 7], 1: [1, 2, 3]})
    return cp, []


def _state_uncommitted_version(tmp: Path):
    cp = build_checkpoint(tmp, offsets=(0, 1, 2), commits=(0, 1))
    write_state(cp, {0: [1, 2, 3], 1: [1, 2, 3]})
    return cp, []


def _compaction_growth(tmp: Path):
    cp = build_checkpoint(tmp)
    return cp, ["--sink", str(write_sink(tmp, [0, 1, 2], compact=2, compact_bytes=10 * 1024 * 1024))]


def _sink_behind_commits(tmp: Path):
    cp = build_checkpoint(tmp)
    return cp, ["--sink", str(write_sink(tmp, [0]))]


def _source_log_behind(tmp: Path):
    cp = build_checkpoint(tmp)
    (cp / "sources" / "0" / "2").unlink()
    return cp, []


def _stray(tmp: Path):
    cp = build_checkpoint(tmp)
    (cp / "notes.txt").write_text("not Spark's")
    return cp, []


def _temporary(tmp: Path):
    cp = build_checkpoint(tmp, offsets=(0, 1), commits=(0, 1))
    (cp / "commits" / ".2.0a4c2e16-5d8b-4f3a-9c71-2b6e8d9f0a1c.tmp").write_text("v1\n")
    return cp, []


def _sink_unknown(tmp: Path):
    cp = build_checkpoint(tmp)
    (tmp / "not-a-sink").mkdir()
    return cp, ["--sink", str(tmp / "not-a-sink")]


def _sink_unreadable(tmp: Path):
    return build_checkpoint(tmp), ["--sink", str(tmp / "no-such-sink")]


def _no_metadata(tmp: Path):
    cp = build_checkpoint(tmp)
    (cp / "metadata").unlink()
    return cp, []


CASES: list[tuple[str, str, Callable]] = [
    ("no-batches", "info", _no_batches),
    ("in-flight-batch", "info", _in_flight),
    ("previous-offsets-missing", "error", _previous_offsets_missing),
    ("offsets-gap", "warning", _offsets_gap),
    ("commits-gap", "warning", _commits_gap),
    ("commits-behind", "error", _commits_behind),
    ("commit-without-offsets", "error", _commit_without_offsets),
    ("no-commits", "warning", _no_commits),
    ("offsets-not-empty-at-batch-0", "error", _offsets_not_empty_at_batch_0),
    ("unknown-log-version", "error", _unknown_log_version),
    ("unparsable-file", "error", _unparsable),
    ("empty-file", "error", _empty),
    ("unreadable-file", "error", _unreadable),
    ("conf-drift", "error", _conf_drift_error),
    ("conf-drift", "warning", _conf_drift_warning),
    ("conf-not-recorded", "info", _conf_not_recorded),
    ("watermark-stalled", "warning", _watermark_stalled),
    ("state-version-missing", "error", _state_version_missing),
    ("state-orphan-versions", "warning", _state_orphan_versions),
    ("state-uncommitted-version", "info", _state_uncommitted_version),
    ("compaction-growth", "warning", _compaction_growth),
    ("sink-behind-commits", "error", _sink_behind_commits),
    ("source-log-behind-offsets", "error", _source_log_behind),
    ("stray-file", "warning", _stray),
    ("temporary-file", "info", _temporary),
    ("sink-unknown", "warning", _sink_unknown),
    ("sink-unreadable", "error", _sink_unreadable),
    ("no-metadata", "warning", _no_metadata),
]
#: what each case shows besides its own code (the consequences Spark's logs imply)
ALSO = {
    "previous-offsets-missing": {"offsets-gap", "in-flight-batch", "commits-behind"},
    "commits-behind": {"in-flight-batch"},
    "no-commits": {"in-flight-batch"},
    "offsets-not-empty-at-batch-0": {"temporary-file", "no-batches"},
    # the growth audit decodes the state files, which these cases leave empty
    "state-uncommitted-version": {"in-flight-batch", "state-audit-unreadable"},
    "state-version-missing": {"state-audit-unreadable"},
    "state-orphan-versions": {"state-audit-unreadable"},
}
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
#: what a user reads: the message names the batches/versions/values, the path the place
#: (relative to the test's folder; the checkpoint is ``cp``)
SAYS: dict[tuple[str, str], tuple[str, str]] = {
    ("no-batches", "info"): ("no batch planned yet", "cp/offsets"),
    ("in-flight-batch", "info"): ("batch 1 planned, not committed: Spark runs it again on restart", "cp/offsets/1"),
    ("previous-offsets-missing", "error"): ("offsets/1 is missing: Spark cannot restart from batch 2", "cp/offsets"),
    ("offsets-gap", "warning"): ("offsets log has gaps: batches 1 missing", "cp/offsets"),
    ("commits-gap", "warning"): ("commit log has gaps: batches 1 missing", "cp/commits"),
    ("commits-behind", "error"): ("commit log ends at batch 1 but offsets at 3", "cp/commits"),
    ("commit-without-offsets", "error"): ("commit log (2) is ahead of the offsets log (1)", "cp/commits"),
    ("no-commits", "warning"): ("no batch has committed; batches up to 1 were planned", "cp/commits"),
    ("conf-drift", "error"): ("spark.sql.shuffle.partitions changed from 2 to 8 between batch 1 and 2", "cp/offsets/2"),
    ("conf-drift", "warning"): ("compression.codec changed from lz4 to zstd between batch 1 and 2", "cp/offsets/2"),
    ("conf-not-recorded", "info"): ("does not record spark.sql.shuffle.partitions", "cp/offsets/2"),
    ("watermark-stalled", "warning"): (f"stuck at {T0} ms since batch 1", ""),
    ("state-version-missing", "error"): ("state version 3 (after committed batch 2) is missing in partition 1", "cp/state/0"),
    ("state-orphan-versions", "warning"): ("state versions 7 are beyond the latest planned batch 2", "cp/state/0"),
    ("state-uncommitted-version", "info"): ("state version 3 was written by an uncommitted batch", "cp/state/0"),
    ("sink-behind-commits", "error"): ("file sink log ends at batch 0 but batch 2 committed", "out/_spark_metadata"),
    ("source-log-behind-offsets", "error"): ("source 0's offset is logOffset 2 but sources/0/ ends at 1", "cp/sources/0"),
    ("stray-file", "warning"): ("notes.txt", "cp/notes.txt"),
    ("sink-unknown", "warning"): ("has neither _spark_metadata/ nor _delta_log/", "not-a-sink"),
    ("sink-unreadable", "error"): ("is missing or not a folder", "no-such-sink"),
}


def test_a_healthy_checkpoint_has_no_finding_and_check_exits_0(tmp_path, unchanged):
    cp = unchanged(build_checkpoint(tmp_path))
    r = inspect_cli(str(cp), "--json", "--sink", str(write_sink(tmp_path, [0, 1, 2])))
    assert r.exit_code == 0
    assert json.loads(r.stdout)["findings"] == []
    assert inspect_cli(str(cp), "--check").exit_code == 0


@pytest.mark.parametrize(("code", "severity", "make"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_each_finding_code_on_a_built_checkpoint(tmp_path, unchanged, code, severity, make):
    cp, extra = make(tmp_path)
    unchanged(cp)
    r = inspect_cli(str(cp), "--json", *extra)
    assert r.exit_code == 0, r.output  # without --check: 0 whenever PATH could be read
    findings = json.loads(r.stdout)["findings"]
    assert (code, severity) in {(f["code"], f["severity"]) for f in findings}, findings
    if (code, severity) in SAYS:
        text, where = SAYS[(code, severity)]
        mine = [f for f in findings if (f["code"], f["severity"]) == (code, severity)]
        assert any(text in f["message"] for f in mine), mine
        assert {f["path"] for f in mine} == {str(tmp_path / where) if where else None}, mine
    unexplained = {f["code"] for f in findings} - {code} - ALSO.get(code, set())
    assert not unexplained, f"{code}: the built checkpoint shows more than it should: {findings}"
    worst = max((f["severity"] for f in findings), key=SEVERITY_RANK.__getitem__)
    assert inspect_cli(str(cp), "--check", *extra).exit_code == CHECK_EXIT[worst]
    if ALSO.get(code) is None:  # the case shows its code alone: --check exits by its severity
        assert inspect_cli(str(cp), "--check", *extra).exit_code == CHECK_EXIT[severity]


def test_check_exit_4_for_an_unusable_path_and_2_for_an_unknown_batch(tmp_path, unchanged):
    assert inspect_cli(str(tmp_path / "missing"), "--check").exit_code == 4
    (tmp_path / "file").write_text("x")
    assert inspect_cli(str(tmp_path / "file"), "--check").exit_code == 4
    cp = unchanged(build_checkpoint(tmp_path))
    assert inspect_cli(str(cp), "--check", "--batch", "99").exit_code == 2
    assert inspect_cli(str(cp), "--check", "--bogus-option").exit_code == 2


def test_check_exit_status_through_the_installed_command(tmp_path, unchanged):
    """The same statuses from the real console script (its error mapper, not CliRunner's)."""
    exe = str(Path(sys.executable).parent / "streamwatch")
    healthy = unchanged(build_checkpoint(tmp_path / "a"))
    warned = unchanged(build_checkpoint(tmp_path / "b", offsets=(0, 1), commits=()))
    broken = unchanged(build_checkpoint(tmp_path / "c", offsets=(0, 1, 2, 3), commits=(0, 1)))
    got = [subprocess.run([exe, "inspect", str(p), "--check"], capture_output=True, text=True, timeout=120)
           for p in (healthy, warned, broken, tmp_path / "missing")]
    assert [r.returncode for r in got] == [0, 1, 3, 4]
    assert got[3].stderr.count("\n") == 1 and "Traceback" not in got[3].stderr and got[3].stdout == ""


