"""`streamwatch diff` and `recover` as people read them (issue 32 items 4-5, issue 33 item 7):
findings matched by what they are about, not by their text; signed, human-formatted numbers;
never Python's ``None``. The expectations come from the files the tests write."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from click.testing import CliRunner

from streamwatch.cli import main
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_700_000_000_000  # epoch ms of batch 0
WM0 = T0 - 3_600_000  # its watermark; each batch moves it 60 s


def _cp(root: Path, batches: int = 5, committed: int = 1) -> FakeCheckpoint:
    """Offsets 0…batches-1, commits 0…committed-1, a stray file at the root: findings
    ``stray-file`` (its path names the folder), ``commits-behind`` (its text names the
    batches), ``in-flight-batch``."""
    fc = FakeCheckpoint(root)
    for b in range(batches):
        fc.plan(b, T0 + b * 1000, files=[f"file:///landing/f{b}.json"], watermark_ms=WM0 + b * 60_000)
    for b in range(committed):
        fc.commit(b, T0 + b * 1000 + 500)
    (root / "notes.txt").write_text("left by an operator")
    return fc


def _diff(*args: str):
    r = CliRunner().invoke(main, ["diff", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r


def _codes(items: list[dict]) -> list[str]:
    return sorted(f["code"] for f in items)


def test_a_byte_identical_copy_has_no_finding_appeared_or_cleared(tmp_path, unchanged):
    a = _cp(tmp_path / "yesterday" / "cp").root
    b = tmp_path / "today" / "cp"
    shutil.copytree(a, b)
    unchanged(tmp_path)
    r = _diff(str(a), str(b), "--json")
    doc = json.loads(r.stdout)
    assert doc["findings"] == {"appeared": [], "cleared": [], "changed": []}
    assert r.exit_code == 0, r.output  # the copy holds the same bytes: nothing changed
    text = _diff(str(a), str(b))
    assert "finding" not in text.stdout, text.stdout


def test_changed_detail_is_changed_and_a_new_subject_appears(tmp_path, unchanged):
    a = _cp(tmp_path / "yesterday" / "cp").root
    b = tmp_path / "today" / "cp"
    shutil.copytree(a, b)
    # one more batch planned in the copy: batch 5 is now in flight (offsets/5), the commit log
    # is one batch further behind, the stray file is still there
    (b / "offsets" / "5").write_text((b / "offsets" / "4").read_text().replace(f'"batchWatermarkMs": {WM0 + 240_000}',
                                                                              f'"batchWatermarkMs": {WM0 + 300_000}'))
    unchanged(tmp_path)
    doc = json.loads(_diff(str(a), str(b), "--json").stdout)
    f = doc["findings"]
    assert [(x["code"], x["subject"]) for x in f["changed"]] == [("commits-behind", "commits")]
    ch = f["changed"][0]
    assert "offsets at 4" in ch["old"]["message"] and "offsets at 5" in ch["new"]["message"]
    assert [(x["code"], x["path"]) for x in f["cleared"]] == [("in-flight-batch", str(a / "offsets" / "4"))]
    assert [(x["code"], x["path"]) for x in f["appeared"]] == [("in-flight-batch", str(b / "offsets" / "5"))]
    assert "stray-file" not in _codes(f["appeared"] + f["cleared"] + f["changed"])  # notes.txt is in both
    text = _diff(str(a), str(b)).stdout
    assert re.search(r"^finding ~ error commits-behind: .*offsets at 5.*\(was: .*offsets at 4", text, re.M), text
    assert "stray-file" not in text


def test_signed_watermark_moves_and_no_python_values(tmp_path, unchanged):
    a = _cp(tmp_path / "a" / "cp", batches=5).root
    b = _cp(tmp_path / "b" / "cp", batches=6).root  # one batch more: watermark +60 s
    unchanged(tmp_path)
    forward, back = _diff(str(a), str(b)).stdout, _diff(str(b), str(a)).stdout
    assert "(+60 s)" in forward, forward
    assert "(-60 s)" in back and "+-" not in back, back
    for out in (forward, back):
        assert "None" not in out and not re.search(r"\de[+-]\d", out), out


def test_a_watermark_move_of_days_reads_in_days(tmp_path, unchanged):
    a = _cp(tmp_path / "a" / "cp", batches=2).root
    b = tmp_path / "b" / "cp"
    shutil.copytree(a, b)
    moved = 17 * 86_400_000 + 6 * 3_600_000  # 17 days 6 hours, written into the copy's last offsets
    last = b / "offsets" / "1"
    last.write_text(last.read_text().replace(f'"batchWatermarkMs": {WM0 + 60_000}', f'"batchWatermarkMs": {WM0 + 60_000 + moved}'))
    unchanged(tmp_path)
    out = _diff(str(a), str(b)).stdout
    assert "(+17 d 6 h)" in out, out
    assert not re.search(r"\de[+-]\d", out), out
    assert "(-17 d 6 h)" in _diff(str(b), str(a)).stdout


def test_absent_values_print_as_dashes_not_none(tmp_path, unchanged):
    """A fresh checkpoint (no commit, no watermark) against one that ran: the old side's
    committed batch and watermark are absent."""
    fresh = FakeCheckpoint(tmp_path / "fresh")
    for b in range(2):
        fresh.plan(b, T0 + b, files=[f"file:///landing/f{b}.json"])
    ran = _cp(tmp_path / "ran", batches=3, committed=3).root
    unchanged(tmp_path)
    out = _diff(str(fresh.root), str(ran)).stdout
    assert "None" not in out, out
    assert "committed - → 2" in out and "watermark none → " in out, out
    batches = _diff(str(ran), "--from-batch", "0", "--to-batch", "2").stdout
    assert "None" not in batches, batches


def test_recover_plan_text_has_no_none(tmp_path, unchanged):
    """offsets 0 and 2, no commit: previous-offsets-missing; the repair drops offsets/2, so
    after it offsets end at 0 and nothing is committed (the folder says so)."""
    fc = FakeCheckpoint(tmp_path / "cp")
    for b in range(3):
        fc.plan(b, T0 + b)
    (fc.root / "offsets" / "1").unlink()
    unchanged(tmp_path)
    r = CliRunner().invoke(main, ["recover", str(fc.root), "--plan"])
    assert r.exit_code == 1, r.output
    assert "None" not in r.stdout, r.stdout
    assert "after: offsets end at 0, no batch committed" in r.stdout, r.stdout
