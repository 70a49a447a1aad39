"""`streamwatch recover` on real checkpoints broken in each way: the plan, the repaired copy
(the broken original is hashed before and after), and Spark restarting on the copy with every
input row in the sink exactly once."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from tests.ops.conftest import MiniQuery

pytestmark = pytest.mark.spark
FILES = 5  # one batch per file: batches 0..4, 4 rows each


@pytest.fixture(scope="module")
def base(spark, tmp_path_factory):
    """One stateless run (file source → Parquet file sink, batches 0..4) to break copies of."""
    q = MiniQuery(spark, tmp_path_factory.mktemp("recover-base"), stateful=False)
    q.land(FILES)
    q.run()
    return q


def _break(base: MiniQuery, tmp: Path, how) -> MiniQuery:
    """A copy of the base's sink + checkpoint under tmp/broken, broken by ``how(cp)``."""
    out = tmp / "broken"
    shutil.copytree(base.out, out)
    how(out / "_checkpoint")
    q = MiniQuery(base.spark, tmp, stateful=base.stateful)
    q.landing, q.out, q.cp = base.landing, out, out / "_checkpoint"
    return q


def _repair_and_restart(broken: MiniQuery, tmp: Path, unchanged) -> tuple[dict, MiniQuery]:
    unchanged(broken.out)
    r = CliRunner().invoke(main, ["recover", str(broken.cp), "--plan", "--json"])
    assert r.exit_code == 1, r.output
    plan = json.loads(r.stdout)
    fixed_out = tmp / "fixed"
    shutil.copytree(broken.out, fixed_out, ignore=shutil.ignore_patterns("_checkpoint"))
    r = CliRunner().invoke(main, ["recover", str(broken.cp), "--apply-to", str(fixed_out / "_checkpoint")])
    assert r.exit_code == 0, r.output
    assert "the original is untouched" in r.output
    fixed = MiniQuery(broken.spark, tmp, stateful=broken.stateful)
    fixed.landing, fixed.out, fixed.cp = broken.landing, fixed_out, fixed_out / "_checkpoint"
    fixed.run()  # raises when Spark refuses to restart
    return plan, fixed


def _sink_rows(spark, out: Path):
    """Rows of the files the sink's _spark_metadata lists (its paths are absolute: a copied
    sink folder still lists the files the original batches wrote)."""
    from streamwatch.checkpoint import read_file_sink_log

    log, _ = read_file_sink_log(str(out / "_spark_metadata"))
    return spark.read.parquet(*[e.path for e in log.live_files]).collect()


def _exactly_once(spark, out: Path) -> None:
    rows = [r["v"] for r in _sink_rows(spark, out)]
    expected = [i * 10 + j for i in range(FILES) for j in range(4)]
    assert sorted(rows) == expected  # every input row, each once


def _rm(*names):
    def how(cp: Path) -> None:
        for n in names:
            (cp / n).unlink()
    return how


CASES = {
    "commits-behind": (_rm("commits/3", "commits/4"), {"commits-behind"}),
    "previous-offsets-missing": (_rm("offsets/3"), {"previous-offsets-missing"}),
    "no-metadata": (_rm("metadata"), {"no-metadata"}),
    "torn-commit": (lambda cp: (cp / "commits" / "4").write_bytes(b""), {"empty-file"}),
    "torn-offsets": (lambda cp: ((cp / "offsets" / "4").write_bytes(b"v1\n{\"batchWat"), (cp / "commits" / "4").unlink()), {"unparsable-file"}),
    "tmp-leftover": (lambda cp: (cp / "commits" / ".5.3f0c.tmp").write_bytes(b"v1\n"), set()),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_repaired_copy_restarts_with_every_row_once(base, tmp_path, unchanged, spark, case):
    how, blocking = CASES[case]
    broken = _break(base, tmp_path, how)
    plan, fixed = _repair_and_restart(broken, tmp_path, unchanged)
    assert blocking <= set(plan["blocking_findings"])
    assert plan["repairs"], plan
    assert plan["sink"]["kind"] == "file" and plan["sink"]["sees_batch_twice"] is False
    _exactly_once(spark, fixed.out)
    if case == "commits-behind":
        edits = next(r for r in plan["repairs"] if r["finding"] == "commits-behind")["edits"]
        assert edits == [{"action": "write", "path": "commits/3", "content": edits[0]["content"]}]
        # the lost commits' checksum files would make Spark's rewrite of batch 4 fail
        crc = next(r for r in plan["repairs"] if r["finding"] == "orphan-checksum")["edits"]
        assert {"action": "delete", "path": "commits/.4.crc"} in crc
        assert plan["rerun"] == [4]


def test_offsets_not_empty_at_batch_0(base, tmp_path, unchanged, spark):
    out = tmp_path / "broken"
    (out / "_checkpoint" / "offsets").mkdir(parents=True)
    shutil.copy(base.cp / "metadata", out / "_checkpoint" / "metadata")
    (out / "_checkpoint" / "offsets" / ".0.1b2c.tmp").write_bytes(b"v1\n")
    broken = MiniQuery(spark, tmp_path, stateful=False)
    broken.landing, broken.out, broken.cp = base.landing, out, out / "_checkpoint"
    plan, fixed = _repair_and_restart(broken, tmp_path, unchanged)
    assert "offsets-not-empty-at-batch-0" in plan["blocking_findings"]
    assert plan["repairs"][0]["edits"] == [{"action": "delete", "path": "offsets/.0.1b2c.tmp"}]
    _exactly_once(spark, fixed.out)


def test_state_version_missing_rolls_back(spark, tmp_path, unchanged):
    q = MiniQuery(spark, tmp_path / "orig", stateful=True)
    q.land(FILES)
    q.run()
    done = max(int(p.name) for p in (q.cp / "commits").iterdir() if p.name.isdigit())
    (q.cp / "state" / "0" / "0" / f"{done + 1}.delta").unlink()
    plan, fixed = _repair_and_restart(q, tmp_path, unchanged)
    rep = next(r for r in plan["repairs"] if r["finding"] == "state-version-missing")
    assert rep["rerun"] == [done]  # roll back one batch: batch `done` re-runs
    assert {"action": "delete", "path": f"commits/{done}"} in rep["edits"]
    rows = _sink_rows(spark, fixed.out)
    keys = [(r["start"], r["k"]) for r in rows]
    assert len(keys) == len(set(keys))  # no window emitted twice


def test_plan_on_a_healthy_checkpoint_and_bad_newdir(base, tmp_path, unchanged):
    unchanged(base.out)
    r = CliRunner().invoke(main, ["recover", str(base.cp)])
    assert r.exit_code == 0 and "nothing blocks a restart" in r.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    r = CliRunner().invoke(main, ["recover", str(base.cp), "--apply-to", str(tmp_path / "full")])
    assert r.exit_code == 4 and "exists and is not an empty folder" in r.output
    r = CliRunner().invoke(main, ["recover", str(base.cp), "--plan", "--apply-to", str(tmp_path / "n")])
    assert r.exit_code == 2
    assert "Examples:" in CliRunner().invoke(main, ["recover", "--help"]).output


def test_verify_restarts_a_temporary_copy(base, tmp_path, unchanged):
    from tests.ops import compat_queries as cq

    broken = _break(base, tmp_path, _rm("commits/3", "commits/4"))
    unchanged(broken.out)
    cq.PATHS.update(recover_in=str(base.landing), recover_out=str(broken.out))
    fixed = tmp_path / "fixed-cp"
    r = CliRunner().invoke(main, ["recover", str(broken.cp), "--apply-to", str(fixed), "--verify",
                                  "--query", "tests.ops.compat_queries:recover_query", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["spark"]["restarted"] is True and doc["spark"]["error"] is None
    assert doc["spark"]["batches_run"] == 1  # batch 4 re-ran; 3's commit was restored
    # --verify worked on a temporary copy: NEWDIR is what a plain --apply-to writes
    plain = tmp_path / "plain-cp"
    assert CliRunner().invoke(main, ["recover", str(broken.cp), "--apply-to", str(plain)]).exit_code == 0
    assert unchanged.digest(fixed) == unchanged.digest(plain)
