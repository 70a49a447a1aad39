"""``streamwatch state`` exit statuses through the installed console script: a checkpoint that
reads but holds no state (a stateless query, a query that has committed nothing) is "nothing
to show" (1, and ``--json`` still prints a valid answer), distinct from state that cannot be
read (4); entries that do not decode are a finding and exit 4, never rows. No JVM: the
checkpoints are built here or copied from the version matrix (``tests/fixtures/matrix``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from streamwatch.errors import ExitCode
from tests.helpers.fake_checkpoint import FakeCheckpoint

EXE = str(Path(sys.executable).parent / "streamwatch")
MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
TWS = MATRIX / "4.2.0" / "tws" / "cp"


def state(*args) -> subprocess.CompletedProcess:
    return subprocess.run([EXE, "state", *map(str, args)], capture_output=True, text=True, timeout=120)


def _stateless(root: Path, *, state_dir: bool = False) -> Path:
    cp = FakeCheckpoint(root)
    for b in range(3):
        cp.plan(b, 1_700_000_000_000 + b * 1000, files=[f"/in/f{b}.json"])
        cp.commit(b, 1_700_000_000_500 + b * 1000)
    if state_dir:
        (root / "state").mkdir()
    return root


@pytest.mark.parametrize("state_dir", [False, True], ids=["no-state-folder", "empty-state-folder"])
def test_a_stateless_checkpoint_is_nothing_to_show(tmp_path, unchanged, state_dir):
    cp = unchanged(_stateless(tmp_path / "cp", state_dir=state_dir))
    r = state("--json", cp)
    assert r.returncode == ExitCode.WARNINGS == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["schema"] == "streamwatch.state/1" and doc["tables"] == []
    assert "no state operators" in doc["note"] and "stateless" in doc["note"]
    assert r.stderr == ""
    for args in ((cp,), (cp, "--csv")):
        r = state(*args)
        assert r.returncode == 1 and r.stdout == ""
        assert r.stderr.count("\n") == 1 and "no state operators" in r.stderr and "Traceback" not in r.stderr


def test_nothing_committed_yet_is_nothing_to_show(tmp_path, unchanged):
    cp = shutil.copytree(TWS, tmp_path / "cp")
    for f in (cp / "commits").iterdir():
        f.unlink()
    unchanged(cp)
    r = state("--json", cp)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout) == {"schema": "streamwatch.state/1", "checkpoint": str(cp), "tables": [],
                                    "note": "no committed batch yet (commits/ is empty)"}


def test_unreadable_state_stays_exit_4_with_nothing_on_stdout(tmp_path, unchanged):
    r = state("--json", tmp_path / "missing")
    assert r.returncode == ExitCode.UNREADABLE == 4 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    cp = unchanged(TWS)
    for args, said in (((cp, "--operator", 3), "no state operator 3"), ((cp, "--var", "nope"), "no state variable 'nope'")):
        r = state("--json", *args)
        assert r.returncode == 4 and r.stdout == "", (args, r.stdout)
        assert r.stderr.count("\n") == 1 and said in r.stderr
    # a batch past the last one: every partition's store is missing — findings, no rows
    r = state("--json", cp, "--batch", 99)
    assert r.returncode == 4 and "Traceback" not in r.stderr
    tables = json.loads(r.stdout)["tables"]
    assert tables and all(t["rows"] == [] and t["findings"] for t in tables)


def test_a_checkpoint_with_state_still_exits_0(unchanged):
    r = state("--json", unchanged(TWS), "--var", "seen", "--limit", 0)
    assert r.returncode == 0, r.stderr
    (t,) = json.loads(r.stdout)["tables"]
    assert t["variable"] == "seen" and t["total_rows"] == len(t["rows"]) == 12 and not t["findings"]


def test_entries_that_do_not_decode_are_a_finding_and_exit_4_never_rows(tmp_path, unchanged):
    """The schema file claims the list state's ``ts`` is a string (same length, so the file
    stays well-formed): no ``seen`` entry decodes — no rows, a finding, exit 4 — while the
    other variables still read."""
    cp = shutil.copytree(TWS, tmp_path / "cp")
    old, new = b'"name":"ts","type":"timestamp"', b'"name":"ts","type":"string"   '
    edited = 0
    for f in (cp / "state" / "0" / "_stateSchema").rglob("*"):
        if f.is_file() and old in f.read_bytes():
            f.write_bytes(f.read_bytes().replace(old, new))
            edited += 1
    assert edited, "no schema file names the list state's ts field"
    unchanged(cp)
    r = state("--json", cp, "--var", "seen", "--limit", 0)
    assert r.returncode == 4
    (t,) = json.loads(r.stdout)["tables"]
    assert t["rows"] == [] and t["total_rows"] == 0
    assert [f["code"] for f in t["findings"]] == ["state-row-undecodable"] * 2
    assert "state-row-undecodable" in r.stderr and "Traceback" not in r.stderr
    for args in ((cp, "--var", "seen"), (cp, "--var", "seen", "--csv")):
        r = state(*args)
        assert r.returncode == 4 and "2026-01-01" not in r.stdout  # no element is printed
    r = state("--json", cp, "--var", "count")
    assert r.returncode == 0 and json.loads(r.stdout)["tables"][0]["total_rows"] == 4
