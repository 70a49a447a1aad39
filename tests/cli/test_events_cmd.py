"""`streamwatch events` on recordings, Spark event logs and Spark 2.0.x legacy lines."""

from __future__ import annotations

import json

import pytest
import zstandard
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.events.reader import read_recording
from tests.unit.test_eventlog import DATA


@pytest.fixture
def rolling(tmp_path):
    d = tmp_path / "eventlog_v2_local-17"
    d.mkdir()
    (d / "events_1_local-17.zstd").write_bytes(zstandard.ZstdCompressor().compress(DATA))
    return d


def test_summary_table(rolling):
    r = CliRunner().invoke(main, ["events", str(rolling)])
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "appId local-17" in lines[0] and "sparkVersion 4.2.0" in lines[0]
    row = next(line.split() for line in lines if line.startswith("tiny"))
    assert row[:5] == ["tiny", "20ec6e44", "1", "1", "10"]  # query, id, runs, batches, input rows
    assert lines[-1] == "1 queries, 4 events"


def test_json_converts_to_a_recording_that_reads_back(rolling, tmp_path):
    r = CliRunner().invoke(main, ["events", str(rolling), "--json"])
    assert r.exit_code == 0, r.output
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["kind"] for d in lines] == ["header", "started", "progress", "idle", "terminated"]
    assert all(d["v"] == 1 for d in lines)
    assert lines[0]["conf"]["spark.my.password"] == "*********" and "hunter2" not in r.stdout
    out = tmp_path / "conv.jsonl"
    r = CliRunner().invoke(main, ["events", str(rolling), "--json", "--out", str(out)])
    assert r.exit_code == 0 and r.stdout == ""
    assert [e.kind for e in read_recording(out)] == ["started", "progress", "idle", "terminated"]


@pytest.mark.corpus
def test_legacy_spark_2_0_log_is_reported_not_a_crash(corpus):
    r = CliRunner().invoke(main, ["events", str(corpus / "spark" / "query-event-logs-version-2.0.1.txt")])
    assert r.exit_code == 0
    assert "3 unsupported legacy streaming events" in r.stderr
    assert r.stdout.splitlines()[-1] == "0 queries, 0 events, 3 unsupported"


def test_bad_input_is_one_line_and_exit_4(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "log.snappy").write_bytes(b"\x00" * 16)
    for path in (tmp_path / "missing", tmp_path / "notes.txt", tmp_path / "log.snappy"):
        for json_flag in ([], ["--json"]):
            r = CliRunner().invoke(main, ["events", str(path), *json_flag])
            assert r.exit_code == 4, (path, r.exit_code, r.output)
            lines = r.stderr.splitlines()
            assert len(lines) == 1 and lines[0].startswith("streamwatch events: ") and path.name in lines[0], r.stderr
            assert r.stdout == ""


def test_json_out_that_cannot_be_written_exits_4(rolling, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = blocker / "app.jsonl"
    r = CliRunner().invoke(main, ["events", str(rolling), "--json", "--out", str(out)])
    assert r.exit_code == 4, r.output
    assert r.stderr.splitlines() == [f"streamwatch events: cannot write {out}: Not a directory"]
    assert blocker.read_text() == ""
