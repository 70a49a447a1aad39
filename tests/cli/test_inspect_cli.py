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
