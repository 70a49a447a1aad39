"""`compat` and `recover` usage errors that only Spark can find (the query must be built to
know its sink), on the shared session: one line on stderr, exit 2, nothing run or written."""

from __future__ import annotations

from click.testing import CliRunner

from streamwatch.cli import main
from tests.conftest import tree_digest
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_767_261_600_000


def _cp(tmp_path) -> FakeCheckpoint:
    cp = FakeCheckpoint(tmp_path / "cp", tmp_path / "sink")
    for b in range(2):
        cp.plan(b, T0 + 1_000 * b, [f"file:///in/{b}.json"])
        cp.commit(b, T0 + 1_000 * b + 200, [(f"file:///sink/part-{b}.parquet", 10)])
    return cp


def _one_line(r, command: str, *fragments: str) -> str:
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith(f"streamwatch {command}: ")]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.output
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def test_compat_verify_refuses_a_foreach_batch_sink(spark, tmp_path):
    cp = _cp(tmp_path)
    before = tree_digest(cp.root)
    r = CliRunner().invoke(main, ["compat", str(cp.root), "--query", "tests.ops.cli_code_queries:foreach_batch", "--verify"])
    _one_line(r, "compat", "--verify: a foreachBatch sink writes where its function says", "compare without --verify")
    assert r.stdout == ""
    assert tree_digest(cp.root) == before


def test_compat_unknown_bundled_pipeline_or_layer_is_usage(spark, tmp_path):
    cp = _cp(tmp_path)
    _one_line(CliRunner().invoke(main, ["compat", str(cp.root), "--pipeline", "nope", "--layer", "gold"]), "compat", "nope")
    _one_line(CliRunner().invoke(main, ["compat", str(cp.root), "--pipeline", "flights", "--layer", "platinum"]),
              "compat", "platinum")


def test_recover_verify_with_a_bad_query_is_usage_after_the_copy_is_written(spark, tmp_path):
    cp = _cp(tmp_path)
    (cp.root / "commits" / "1").write_text("v1\n{\"nextBat")  # torn: a repair is needed
    fixed = tmp_path / "fixed"
    r = CliRunner().invoke(main, ["recover", str(cp.root), "--apply-to", str(fixed), "--verify",
                                  "--query", "tests.ops.cli_code_queries:no_such_function"])
    _one_line(r, "recover", "no_such_function")
    assert fixed.is_dir()  # the repaired copy stays; only Spark's check could not run
