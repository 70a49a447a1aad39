"""`diff`, `recover`, `retention`, `compat` without a JVM: each usage error is one line on
stderr with its documented exit status (docs/ops.md / the command's --help), the text and `--json`
reports on checkpoints written in Spark's on-disk format (tests/helpers/fake_checkpoint.py),
and the --help examples name options that exist."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from tests.conftest import tree_digest
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_767_261_600_000  # 2026-01-01T10:00:00Z


def _sw(*args: str):
    return CliRunner().invoke(main, list(args))


def _one_line_error(r, command: str, code: int, *fragments: str) -> None:
    """Exit ``code``, nothing on stdout, one ``streamwatch COMMAND: …`` line on stderr that
    holds every fragment."""
    assert r.exit_code == code, (r.exit_code, r.output)
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"streamwatch {command}: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def _checkpoint(root, batches: int, committed: int | None = None) -> FakeCheckpoint:
    """A file-source → file-sink checkpoint: ``batches`` planned, the first ``committed`` of
    them committed (default all), one input file and one output file per batch."""
    cp = FakeCheckpoint(root / "cp", root / "sink")
    committed = batches if committed is None else committed
    for b in range(batches):
        cp.plan(b, T0 + 10_000 * b, [f"file:///landing/in-{b}.csv"], watermark_ms=1_000 * b)
        if b < committed:
            cp.commit(b, T0 + 10_000 * b + 2_000, [(f"file:///sink/part-{b}.parquet", 100 + b)])
    return cp


# -- diff ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["A", "B", "--from-batch", "0"], "give one checkpoint with --from-batch/--to-batch, or two snapshots without them"),
    (["A", "--to-batch", "3"], "--to-batch needs --from-batch"),
    (["A"], "NEW is missing"),
])
def test_diff_usage_errors_exit_2(args, message):
    _one_line_error(_sw("diff", *args), "diff", 2, message)


def test_diff_from_batch_after_to_batch_is_usage(tmp_path):
    cp = _checkpoint(tmp_path, 3)
    _one_line_error(_sw("diff", str(cp.root), "--from-batch", "2", "--to-batch", "1"), "diff", 2,
                    "--from-batch 2 is after --to-batch 1")


def test_diff_batch_out_of_range_is_usage(tmp_path):
    cp = _checkpoint(tmp_path, 3)
    r = _sw("diff", str(cp.root), "--from-batch", "0", "--to-batch", "7")
    _one_line_error(r, "diff", 2, "7")


def test_diff_unreadable_inputs_exit_4(tmp_path):
    missing = tmp_path / "nope"
    _one_line_error(_sw("diff", str(missing), "--from-batch", "0"), "diff", 4, str(missing))
    _one_line_error(_sw("diff", str(missing), str(missing)), "diff", 4, str(missing))
    bad = tmp_path / "before.json"
    bad.write_text("{not json")
    cp = _checkpoint(tmp_path, 1)
    _one_line_error(_sw("diff", str(bad), str(cp.root)), "diff", 4, f"{bad}: ")


def test_diff_two_snapshots_text_json_and_exit_status(tmp_path):
    cp = _checkpoint(tmp_path, 2)
    old = tmp_path / "cp-yesterday"
    shutil.copytree(cp.root, old)
    same = _sw("diff", str(old), str(cp.root))
    assert same.exit_code == 0, same.output  # 0: no change
    assert "watermark unchanged" in same.stdout
    cp.plan(2, T0 + 20_000, ["file:///landing/in-2.csv", "file:///landing/in-3.csv"], watermark_ms=5_000)
    cp.commit(2, T0 + 22_000, [("file:///sink/part-2.parquet", 102)])
    before = tree_digest(old)
    text = _sw("diff", str(old), str(cp.root))
    assert text.exit_code == 1, text.output  # 1: changes found
    out = text.stdout
    assert f"old  {old}" in out
    assert "batches   latest 1 → 2, committed 1 → 2" in out
    assert "planned 2; committed 2" in out
    assert "watermark" in out and "(+4 s)" in out  # 1000 ms → 5000 ms
    assert "source 0 (file): logOffset 1 → 2, 2 files added" in out
    assert "    + file:///landing/in-3.csv" in out
    doc = json.loads(_sw("diff", str(old), str(cp.root), "--json").stdout)
    assert doc["batches"]["planned"] == [2, 2] and doc["batches"]["committed"] == [2, 2]
    assert doc["watermark"]["moved_ms"] == 4_000
    [src] = doc["sources"]
    assert src["files_added"] == 2 and src["log_offset"] == {"old": 1, "new": 2}
    assert tree_digest(old) == before  # nothing under OLD written


def test_diff_saved_inspect_json_as_old(tmp_path):
    cp = _checkpoint(tmp_path, 2)
    saved = tmp_path / "before.json"
    r = _sw("inspect", str(cp.root), "--json")
    saved.write_text(r.stdout)
    cp.plan(2, T0 + 20_000, ["file:///landing/in-2.csv"], watermark_ms=2_000)
    r = _sw("diff", str(saved), str(cp.root), "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["batches"]["planned"] == [2, 2]
    assert doc["old"]["origin"] != doc["new"]["origin"]  # a summary vs a checkpoint


def test_diff_two_batches_of_one_checkpoint(tmp_path):
    cp = _checkpoint(tmp_path, 4)
    r = _sw("diff", str(cp.root), "--from-batch", "1", "--to-batch", "3")
    assert r.exit_code == 1, r.output
    assert "batches   latest 1 → 3" in r.stdout
    latest = json.loads(_sw("diff", str(cp.root), "--from-batch", "1", "--json").stdout)  # B = the latest planned
    assert latest["batches"]["new"]["latest"] == 3
    assert _sw("diff", str(cp.root), "--from-batch", "2", "--to-batch", "2").exit_code == 0


# -- recover ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["--plan", "--apply-to", "X"], "use --plan or --apply-to NEWDIR, not both"),
    (["--verify"], "--verify needs --apply-to NEWDIR and --query MODULE:FUNCTION"),
    (["--apply-to", "X", "--verify"], "--verify needs --apply-to NEWDIR and --query MODULE:FUNCTION"),
])
def test_recover_usage_errors_exit_2(tmp_path, args, message):
    _one_line_error(_sw("recover", str(tmp_path), *args), "recover", 2, message)


def test_recover_unreadable_checkpoint_exit_4(tmp_path):
    _one_line_error(_sw("recover", str(tmp_path / "nope")), "recover", 4, "nope")


def test_recover_healthy_checkpoint_plans_nothing(tmp_path):
    cp = _checkpoint(tmp_path, 3, committed=2)  # batch 2 in flight: Spark re-runs it, nothing blocks
    r = _sw("recover", str(cp.root), "--plan")
    assert r.exit_code == 0, r.output
    assert r.stdout.strip() == f"{cp.root}: nothing blocks a restart"
    doc = json.loads(_sw("recover", str(cp.root), "--json").stdout)
    assert doc["repairs"] == [] and doc["recoverable"] is True


def test_recover_torn_commit_plan_then_apply_to_a_copy(tmp_path):
    cp = _checkpoint(tmp_path, 3)
    (cp.root / "commits" / "2").write_text("v1\n{\"nextBatchWat")  # torn by a crash mid-write
    before = tree_digest(cp.root)
    plan = _sw("recover", str(cp.root))
    assert plan.exit_code == 1, plan.output  # 1: repairs planned
    assert "restart blocked by" in plan.stdout.splitlines()[0]
    assert re.search(r"^1\. \[", plan.stdout, re.M)
    assert "cost: re-run" in plan.stdout and "sink (" in plan.stdout
    fixed = tmp_path / "fixed"
    r = _sw("recover", str(cp.root), "--apply-to", str(fixed), "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["applied_to"] == str(fixed) and doc["edited"]
    assert tree_digest(cp.root) == before  # the original is untouched
    again = _sw("recover", str(fixed))
    assert again.exit_code == 0, again.output
    text = _sw("recover", str(cp.root), "--apply-to", str(tmp_path / "fixed2"))
    assert text.exit_code == 0
    assert "the original is untouched" in text.stdout.splitlines()[-1]
    # NEWDIR must not exist: 4, one line
    _one_line_error(_sw("recover", str(cp.root), "--apply-to", str(fixed)), "recover", 4, str(fixed))


# -- retention -------------------------------------------------------------------------------

def test_retention_unreadable_and_bad_min_batches(tmp_path):
    _one_line_error(_sw("retention", str(tmp_path / "nope")), "retention", 4, "nope")
    r = _sw("retention", str(tmp_path), "--min-batches", "0")
    assert r.exit_code == 2 and "--min-batches" in r.stderr


def test_retention_plan_text_and_json(tmp_path):
    cp = _checkpoint(tmp_path, 6)
    r = _sw("retention", str(cp.root), "--min-batches", "2", "--sink", str(cp.sink))
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert lines[0] == f"{cp.root}: minBatchesToRetain 2 (option)"
    assert lines[1].startswith("next batch 6 purges offsets/commits below ")
    assert any(ln.startswith("  offsets/: 6 files") for ln in lines)
    assert lines[-1].startswith("total: next cleanup frees ")
    doc = json.loads(_sw("retention", str(cp.root), "--json").stdout)
    assert doc["min_batches_to_retain"] == 100 and doc["batch_logs"]["purge_below"] is None
    text = _sw("retention", str(cp.root)).stdout
    assert "nothing to purge yet" in text


# -- compat (the parts that need no Spark) ---------------------------------------------------

@pytest.mark.parametrize("args", [
    [],
    ["--query", "a:b", "--pipeline", "flights", "--layer", "gold"],
    ["--pipeline", "flights"],
    ["--query", "a:b", "--layer", "gold"],
])
def test_compat_needs_query_or_pipeline_with_layer(tmp_path, args):
    _one_line_error(_sw("compat", str(tmp_path), *args), "compat", 2,
                    "give either --query MODULE:FUNCTION or --pipeline NAME --layer LAYER")


def test_compat_unreadable_checkpoint_exit_4_before_spark(tmp_path):
    r = _sw("compat", str(tmp_path / "nope"), "--pipeline", "flights", "--layer", "gold")
    _one_line_error(r, "compat", 4, "nope")


def test_compat_text_report():
    from streamwatch.cli.compat_cmd import render

    doc = {"path": "/cp", "verdict": "incompatible", "rules": [
        {"rule": "sources", "verdict": "compatible", "reason": "same", "checkpoint_file": None},
        {"rule": "state", "verdict": "incompatible", "reason": "key schema", "checkpoint_file": "state/0/_metadata/schema"},
    ], "spark": {"restarted": False, "error": "StateSchemaNotCompatible", "batches_run": 0, "agrees": True}}
    lines = render(doc).splitlines()
    assert lines[0] == "/cp: INCOMPATIBLE"
    assert lines[2].split() == ["INCOMPATIBLE", "state:", "key", "schema", "[state/0/_metadata/schema]"]
    assert lines[-1] == "prediction: INCOMPATIBLE | Spark: refused: StateSchemaNotCompatible | agree"
    doc["verdict"], doc["spark"] = "allowed", {"restarted": True, "error": None, "batches_run": 1, "agrees": False}
    assert render(doc).splitlines()[-1] == "prediction: allowed with consequences | Spark: restarted | DISAGREE"


def test_compat_pipeline_workspace_is_the_one_the_checkpoint_lies_in(tmp_path):
    from streamwatch.cli.compat_cmd import _workspace_of

    gold = tmp_path / "ws" / "checkpoints" / "flights" / "gold"
    assert _workspace_of(str(gold)) == str((tmp_path / "ws").resolve())
    assert _workspace_of(str(tmp_path / "elsewhere")) == "streamwatch-workspace"


# -- every --help example names options that exist -------------------------------------------

@pytest.mark.parametrize("command", ["diff", "recover", "retention", "compat", "replay", "land", "watch", "run"])
def test_help_examples_use_real_options(command):
    r = _sw(command, "--help")
    assert r.exit_code == 0 and "Examples:" in r.output
    options_section = r.output.split("\nOptions:\n")[1]
    options = set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z-]+)", options_section, re.M))
    assert "--help" in options
    for line in r.output.split("Examples:")[1].splitlines():
        if not line.strip().startswith("streamwatch " + command):
            continue
        for used in re.findall(r"\s(--[a-z][a-z-]+)", line):
            assert used in options, f"{command} --help example uses {used}, not an option: {line.strip()}"


def test_recover_unrecoverable_state_exits_3_and_writes_nothing(tmp_path):
    cp = _checkpoint(tmp_path, 2)
    (cp.root / "state" / "0").mkdir(parents=True)  # a stateful query whose state files are all gone
    plan = _sw("recover", str(cp.root))
    assert plan.exit_code == 3, plan.output  # 3: cannot be repaired
    assert "restart blocked by state-version-missing" in plan.stdout
    assert "start a new checkpoint" in plan.stdout
    out = tmp_path / "fixed"
    _one_line_error(_sw("recover", str(cp.root), "--apply-to", str(out)), "recover", 3,
                    "cannot be repaired: state version 2 is missing")
    assert not out.exists()
