"""Offline state repartition on real checkpoints (``tests/fixtures/matrix/<version>/repart_*``,
Spark 4.2+; from ``scripts/version_matrix.py``): an aggregation over 2 shuffle partitions,
``spark._streamingCheckpointManager.repartition(cp, 3)``, then Spark restarted on a copy with
one more input file. Read without a JVM and held against what Spark itself did (``facts.json``
→ ``cases.repart_*``): whether the repartition finished, which offsets/commits it left, and
what the restart did — ran which batches on how many partitions, or the error it raised.

A repartition is done only with the evidence Spark requires (its commit, and state version
N+1 in every new partition folder); otherwise ``inspect`` says an error and what Spark does on
restart, ``recover --plan`` plans the way out, and ``state --batch`` before a finished one
reads only the partitions that existed then."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from streamwatch.checkpoint.reader import read_checkpoint
from streamwatch.checkpoint.spark4 import check_repartitions
from streamwatch.state import read_state

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
CLI = str(Path(sys.executable).parent / "streamwatch")


def _cases() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for f in sorted(MATRIX.glob("*/facts.json")):
        facts = json.loads(f.read_text())
        for name, case in sorted(facts["cases"].items()):
            if name.startswith("repart_") and "error" not in case and (f.parent / case["checkpoint"]).is_dir():
                out.append((f.parent.name, name, case))
    return out


CASES = _cases()
IDS = [f"{v}-{n}" for v, n, _ in CASES]
pytestmark = pytest.mark.skipif(not CASES, reason="no repart_* fixture in tests/fixtures/matrix")


def _cp(version: str, case: dict[str, Any]) -> Path:
    return MATRIX / version / case["checkpoint"]


def _spark_done(case: dict[str, Any]) -> bool:
    """What Spark said: the repartition call returned, and the restart ran (no error)."""
    return case["repartition"] == "done" and "error" not in case["restart"]


def _error_class(text: str) -> str | None:
    """The last ``[ERROR_CLASS]`` Spark names in a one-line error (the cause after STREAM_FAILED)."""
    found = re.findall(r"\[([A-Z_]+(?:\.[A-Z_]+)?)\]", text)
    return found[-1] if found else None


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_the_logs_are_the_ones_spark_left(version, name, case, unchanged):
    cp = read_checkpoint(str(unchanged(_cp(version, case))))
    assert list(cp.offset_batch_ids) == case["offsets"]
    assert list(cp.commit_batch_ids) == case["commits"]
    (check,) = check_repartitions(cp)
    # the repartition batch is the one after the last batch the query ran
    assert check.repartition.batch_id == case["progress"][-1]["batchId"] + 1 == case["offsets"][-1]
    assert check.repartition.from_partitions == case["progress"][-1]["stateOperators"][0]["numShufflePartitions"]


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_done_or_unfinished_as_spark_says(version, name, case, unchanged):
    cp = read_checkpoint(str(unchanged(_cp(version, case))))
    (check,) = check_repartitions(cp)
    r = check.repartition
    codes = {f.code: f for f in cp.findings}
    errors = [f"{f.code}: {f.message}" for f in cp.findings if f.severity == "error"]
    assert check.done == _spark_done(case)
    if _spark_done(case):
        assert "state-repartitioned" in codes and "state-repartition-unfinished" not in codes
        assert not errors, errors
        assert "conf-drift" not in codes
        # what the restart did: the batch after the repartition, on the new partition count
        restart = case["restart"]
        assert restart["batches"][0] == r.batch_id + 1
        spark_partitions = {op["numShufflePartitions"] for p in restart["progress"] for op in p["stateOperators"]}
        instances = {op["numStateStoreInstances"] for p in restart["progress"] for op in p["stateOperators"]}
        assert spark_partitions == instances == {r.to_partitions}
        assert f"restarts use {r.to_partitions} partitions" in codes["state-repartitioned"].message
        assert cp.partitions_for_version(r.batch_id + 2) == r.to_partitions
    else:
        assert "state-repartitioned" not in codes
        f = codes["state-repartition-unfinished"]
        assert f.severity == "error" and f.path and f.path.endswith(f"offsets/{r.batch_id}")
        # what the restart on a copy raised, and about which batch
        spark_error = case["restart"]["error"]
        assert _error_class(spark_error) == "STREAMING_UNFINISHED_REPARTITION_DETECTED"
        assert f"latest batch {r.batch_id} " in spark_error
        assert "STREAMING_UNFINISHED_REPARTITION_DETECTED" in f.message and "refuses" in f.message
        assert f"not commits/{r.batch_id}" in f.message
        # the error the repartition itself raised: a retry would raise it again
        if "UNSUPPORTED_PROVIDER" in case["repartition"]:
            assert "UNSUPPORTED_PROVIDER" in f.message
        # the partition change is drift again (the state was never split), and the batch is
        # not one Spark runs again on restart
        drift = codes["conf-drift"]
        assert drift.severity == "error" and "spark.sql.shuffle.partitions" in drift.message
        assert f"from {r.from_partitions} to {r.to_partitions}" in drift.message
        assert "in-flight-batch" not in codes


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_inspect_json_and_check(version, name, case, unchanged):
    path = str(unchanged(_cp(version, case)))
    done = _spark_done(case)
    doc = json.loads(_run("inspect", path, "--json").stdout)
    codes = {f["code"]: f["severity"] for f in doc["findings"]}
    if done:
        assert codes.get("state-repartitioned") == "info" and doc["worst"] != "error"
    else:
        assert codes.get("state-repartition-unfinished") == "error" and doc["worst"] == "error"
        assert "state-repartitioned" not in codes
    check = _run("inspect", path, "--check")
    assert (check.returncode == 0) == done, check.stdout[-2000:]
    if not done:
        assert check.returncode == 3


@pytest.mark.parametrize(("version", "name", "case"), CASES, ids=IDS)
def test_recover_plan(version, name, case, unchanged, tmp_path):
    path = str(unchanged(_cp(version, case)))
    last = case["offsets"][-1]
    plan = _run("recover", path, "--plan")
    doc = json.loads(_run("recover", path, "--plan", "--json").stdout)
    if _spark_done(case):
        assert plan.returncode == 0 and "nothing blocks a restart" in plan.stdout
        assert doc["repairs"] == [] and doc["blocking_findings"] == []
        return
    assert plan.returncode == 1, plan.stdout
    assert "state-repartition-unfinished" in plan.stdout
    assert doc["blocking_findings"] == ["state-repartition-unfinished"]
    (repair,) = doc["repairs"]
    assert repair["finding"] == "state-repartition-unfinished"
    assert repair["edits"] == [{"action": "delete", "path": f"offsets/{last}"}]
    assert repair["replanned"] == [last] and repair["rerun"] == []
    assert doc["after"] == {"latest_offsets": last - 1, "last_commit": last - 1} and doc["recoverable"]
    if "UNSUPPORTED_PROVIDER" in case["repartition"]:
        assert "UNSUPPORTED_PROVIDER" in repair["note"]
    # the repaired copy is what Spark restarts from: the last committed batch, the old
    # partition count, nothing left that blocks a restart
    fixed = tmp_path / "fixed"
    applied = _run("recover", path, "--apply-to", str(fixed))
    assert applied.returncode == 0, applied.stderr
    cp = read_checkpoint(str(fixed))
    assert not [f for f in cp.findings if f.severity == "error"], cp.findings
    assert cp.latest_batch_id == cp.last_committed_batch_id == last - 1
    assert cp.offsets[-1].conf["spark.sql.shuffle.partitions"] == str(case["progress"][-1]["stateOperators"][0]["numShufflePartitions"])
    assert _run("recover", str(fixed), "--plan").returncode == 0


def test_an_interrupted_rocksdb_repartition_is_unfinished(tmp_path):
    """A finished RocksDB repartition without its commit (what a crash between the state
    rewrite and the commit leaves): unfinished, and the retry is the RocksDB way out."""
    done = [(v, c) for v, n, c in CASES if n == "repart_rocks" and _spark_done(c)]
    if not done:
        pytest.skip("no finished repart_rocks fixture")
    version, case = done[-1]
    cp_dir = tmp_path / "cp"
    shutil.copytree(_cp(version, case), cp_dir)
    last = case["offsets"][-1]
    (cp_dir / "commits" / str(last)).unlink()
    cp = read_checkpoint(str(cp_dir))
    codes = {f.code: f for f in cp.findings}
    f = codes["state-repartition-unfinished"]
    assert f.severity == "error" and "STREAMING_UNFINISHED_REPARTITION_DETECTED" in f.message
    assert f"state version {last + 1} is in all 3 new partition folders" in f.message
    assert "retry the repartition to 3 partitions" in f.message
    assert codes["conf-drift"].severity == "error"
    doc = json.loads(_run("recover", str(cp_dir), "--plan", "--json").stdout)
    (repair,) = doc["repairs"]
    assert repair["edits"] == [{"action": "delete", "path": f"offsets/{last}"}]
    assert "repartition(<checkpoint>, 3)" in repair["note"]


@pytest.mark.parametrize(("version", "name", "case"), [c for c in CASES if _spark_done(c[2])],
                         ids=[i for i, c in zip(IDS, CASES, strict=True) if _spark_done(c[2])])
def test_state_before_a_repartition_reads_the_partitions_of_then(version, name, case, unchanged):
    path = str(unchanged(_cp(version, case)))
    before = case["progress"][-1]["stateOperators"][0]["numShufflePartitions"]
    last = case["offsets"][-1]
    for p in case["progress"]:
        (t,) = read_state(path, batch=p["batchId"])
        assert not [f for f in t.findings if f.severity == "error"], (p["batchId"], t.findings)
        assert sorted(s.partition for s in t.partitions) == list(range(before))
        assert t.total_rows == len(t.rows) == p["stateOperators"][0]["numRowsTotal"], f"batch {p['batchId']}"
    # the repartition batch moves the rows into the new partitions; it neither adds nor drops one
    (t,) = read_state(path, batch=last)
    assert sorted(s.partition for s in t.partitions) == list(range(case["restart"]["progress"][0]["stateOperators"][0]["numShufflePartitions"]))
    assert t.total_rows == case["progress"][-1]["stateOperators"][0]["numRowsTotal"]
    # the CLI: Spark's rows, exit 0
    first = case["progress"][0]["batchId"]
    out = _run("state", path, "--batch", str(first), "--json")
    assert out.returncode == 0, out.stderr
    (table,) = json.loads(out.stdout)["tables"]
    assert table["total_rows"] == case["progress"][0]["stateOperators"][0]["numRowsTotal"]
    assert _run("state", path, "--batch", str(first), "--partition", str(before)).returncode != 0
