"""`streamwatch inspect` through click's runner."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamwatch.cli import main


@pytest.mark.spark
def test_inspect_reads_the_checkpoint_the_pipeline_wrote(flights_run, unchanged):
    runner, ws = flights_run
    cp = unchanged(ws.checkpoint("flights", "bronze"))
    result = CliRunner().invoke(main, ["inspect", str(cp)])
    assert result.exit_code == 0, result.output
    assert "query id" in result.output
    meta = (cp / "metadata").read_text()
    assert meta.split('"')[3] in result.output  # the query id from the metadata file
    assert '{"logOffset":' in result.output
    latest = max(int(p.name) for p in (cp / "offsets").iterdir() if p.name.isdigit())
    assert f"latest batch (offsets) {latest}" in result.output


def test_inspect_missing_path_is_one_line_error(tmp_path):
    result = CliRunner().invoke(main, ["inspect", str(tmp_path / "nope")])
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = result.stderr.strip().splitlines() if hasattr(result, "stderr") else result.output.strip().splitlines()
    assert len(lines) == 1 and "no such file or directory" in lines[0]
    assert "Traceback" not in result.output


def test_inspect_not_a_checkpoint(tmp_path):
    (tmp_path / "x.txt").write_text("hello")
    result = CliRunner().invoke(main, ["inspect", str(tmp_path)])
    assert result.exit_code != 0
    assert "not a checkpoint" in result.output


def test_help_and_version():
    runner = CliRunner()
    assert "inspect" in runner.invoke(main, ["--help"]).output
    assert runner.invoke(main, ["--version"]).output.startswith("streamwatch, version ")


# --- the full inspector: golden --json files, --check exit codes, bad input -----------------

import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402

from tests.conftest import assert_golden  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "inspect"
CORPUS_GOLDEN = {
    "inconsistent": "checkpoint-test-offsetId-commitId-inconsistent",
    "tws-unsaferow": "checkpoint-version-4.0.0-tws-unsaferow",
    "join2-hdfs": "checkpoint-version-4.0.0/hdfs/join2",
    "multi-watermark": "checkpoint-version-2.3.1-for-multi-watermark-policy",
}


def _normalise(text: str, root: str) -> str:
    return text.replace(root, "<PATH>")


def _golden(name: str, text: str) -> None:
    """Compare with the golden file (:func:`tests.conftest.assert_golden`: an update run writes
    it and skips)."""
    assert_golden({GOLDEN / name: text})


@pytest.mark.corpus
@pytest.mark.parametrize("name", sorted(CORPUS_GOLDEN))
@pytest.mark.parametrize("mode", ["summary", "batches", "batch"])
def test_json_golden_files(corpus, unchanged, name, mode):
    cp = unchanged(corpus / "spark" / CORPUS_GOLDEN[name])
    extra = {"summary": [], "batches": ["--batches"], "batch": ["--batch", "1"]}[mode]
    result = CliRunner().invoke(main, ["inspect", str(cp), "--json", *extra])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["schema"] == "streamwatch.inspect/1"
    _golden(f"{name}.{mode}.json", _normalise(result.output, str(cp)))


def _cp(root: Path, batches: int, commits: int) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"q-1"}')
    for b in range(batches):
        (root / "offsets" / str(b)).write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":{b},"conf":{{"spark.sql.shuffle.partitions":"2","fs.s3a.secret.key":"hunter2"}}}}\n{{"logOffset":{b}}}')
    for b in range(commits):
        (root / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


@pytest.mark.parametrize("batches,commits,code", [(2, 2, 0), (3, 2, 0), (3, 0, 1), (4, 1, 3)])
def test_check_exit_codes(tmp_path, unchanged, batches, commits, code):
    from streamwatch.cli.inspect_cmd import ExitCode

    cp = unchanged(_cp(tmp_path / "cp", batches, commits))
    result = CliRunner().invoke(main, ["inspect", str(cp), "--check"])
    assert result.exit_code == code == {0: ExitCode.OK, 1: ExitCode.WARNINGS, 3: ExitCode.ERRORS}[code]


def test_json_redacts_secrets_and_is_stable(tmp_path, unchanged):
    cp = unchanged(_cp(tmp_path / "cp", 2, 2))
    out = CliRunner().invoke(main, ["inspect", str(cp), "--json"]).output
    doc = json.loads(out)
    assert "hunter2" not in out and doc["conf"]["fs.s3a.secret.key"] == "*********"
    assert doc["batches"] == {"first": 0, "latest": 1, "last_committed": 1, "in_flight": None, "offsets_files": 2, "commit_files": 2}
    assert doc["findings"] == [] and doc["worst"] is None
    rows = json.loads(CliRunner().invoke(main, ["inspect", str(cp), "--json", "--batches"]).output)["timeline"]
    assert [r["batch_id"] for r in rows] == [0, 1] and rows[1]["timestamp_ms"] == 1


@pytest.mark.parametrize("case", ["missing", "file", "not-a-checkpoint", "symlink-loop", "garbage-inside", "empty-inside"])
def test_bad_input_is_one_line_or_a_finding(tmp_path, case, unchanged):
    p = tmp_path / "x"
    if case == "file":
        p.write_bytes(os.urandom(100))
    elif case == "not-a-checkpoint":
        p.mkdir()
    elif case == "symlink-loop":
        os.symlink(tmp_path / "y", p)
        os.symlink(p, tmp_path / "y")
    elif case in ("garbage-inside", "empty-inside"):
        _cp(p, 3, 3)
        (p / "offsets" / "1").write_bytes(os.urandom(200) if case == "garbage-inside" else b"")
        unchanged(p)
    result = CliRunner().invoke(main, ["inspect", str(p), "--check"])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if case in ("garbage-inside", "empty-inside"):
        assert result.exit_code == 3  # a finding (error); the rest is still reported
        assert "latest batch (offsets) 2" in result.output
        assert ("unparsable-file" if case == "garbage-inside" else "empty-file") in result.output
    else:
        assert result.exit_code == 4
        assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


def test_unknown_batch_and_conflicting_options(tmp_path, unchanged):
    cp = unchanged(_cp(tmp_path / "cp", 2, 2))
    r = CliRunner().invoke(main, ["inspect", str(cp), "--batch", "9"])
    assert r.exit_code == 2 and "batch 9 is not in this checkpoint" in r.stderr
    r = CliRunner().invoke(main, ["inspect", str(cp), "--batch", "1", "--batches"])
    assert r.exit_code == 2


def test_help_teaches():
    out = CliRunner().invoke(main, ["inspect", "--help"]).output
    assert "Examples:" in out and "--check" in out and "s3://" in out


@pytest.mark.spark
def test_inspect_explains_each_flights_query(flights_run, unchanged):
    _runner, ws = flights_run
    for layer in ("bronze", "silver", "gold"):
        cp = unchanged(ws.checkpoint("flights", layer))
        unchanged(ws.table("flights", layer))
        result = CliRunner().invoke(main, ["inspect", str(cp), "--json"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.output)
        assert doc["sink"] is not None and doc["sink"]["kind"] == "file", layer  # discovered table
        assert doc["batches"]["in_flight"] is None
        assert not [f for f in doc["findings"] if f["severity"] == "error"], doc["findings"]
        if layer == "gold":
            assert doc["state"] and doc["state"][0]["name"] == "stateStoreSave"
            assert doc["watermark_ms"] > 0
        text = CliRunner().invoke(main, ["inspect", str(cp)]).output
        assert len(text.splitlines()) < 60  # one screen
