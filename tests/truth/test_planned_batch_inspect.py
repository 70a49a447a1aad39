"""A planned, uncommitted batch (``offsets/N`` without ``commits/N``, what a stop in the middle
of a batch leaves, with the ``.N.<uuid>.tmp`` an interrupted offsets write leaves beside it) is
reported as what it is — ``batch N planned, not committed: Spark runs it again on restart`` —
at info severity, so ``inspect --check`` exits 0; and Spark does run it again on restart."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark


def test_a_planned_batch_is_info_and_spark_runs_it_again(spark, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    for i in range(3):
        (landing / f"part-{i}.json").write_text(f'{{"a": {i}}}\n')
    cp = tmp_path / "cp"
    seen: list[int] = []

    def run() -> None:
        q = (spark.readStream.schema("a INT").option("maxFilesPerTrigger", 1).json(str(landing))
             .writeStream.option("checkpointLocation", str(cp)).trigger(availableNow=True)
             .foreachBatch(lambda df, batch_id: seen.append(batch_id)).start())
        assert q.awaitTermination(240), "the availableNow run did not end"
        assert q.exception() is None, q.exception()

    run()
    assert sorted(int(n) for n in os.listdir(cp / "commits") if n.isdecimal()) == [0, 1, 2]
    # what a stop in the middle of batch 2 leaves: its commit missing, an interrupted write's .tmp
    (cp / "commits" / "2").unlink()
    (cp / "commits" / ".2.crc").unlink(missing_ok=True)
    (cp / "offsets" / ".3.5d1f0c8e-0a4b-4c55-9d7e-2b1f3a9c6e01.tmp").write_text("v1\n")

    r = CliRunner().invoke(main, ["inspect", str(cp), "--json"])
    assert r.exit_code == 0, r.output
    findings = {f["code"]: f for f in json.loads(r.stdout)["findings"]}
    planned = findings["in-flight-batch"]
    assert planned["severity"] == "info"
    assert "batch 2 planned, not committed: Spark runs it again on restart" in planned["message"]
    assert findings["temporary-file"]["severity"] == "info"
    assert "Spark ignores it" in findings["temporary-file"]["message"]
    assert {f["severity"] for f in findings.values()} == {"info"}, findings
    check = CliRunner().invoke(main, ["inspect", str(cp), "--check"])
    assert check.exit_code == 0, check.output
    assert "batch 2 planned, not committed" in check.output

    seen.clear()
    run()  # restart: Spark runs the planned batch again, from offsets/2
    assert seen[:1] == [2]
    assert sorted(int(n) for n in os.listdir(cp / "commits") if n.isdecimal())[-1] == 2
    assert CliRunner().invoke(main, ["inspect", str(cp), "--check"]).exit_code == 0


def test_a_stop_during_the_first_batch_is_no_warning(tmp_path):
    """offsets/0 alone (stopped during the first batch): planned, not committed, exit 0."""
    cp = tmp_path / "cp"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "metadata").write_text('{"id":"q"}')
    (cp / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"logOffset":0}')
    r = CliRunner().invoke(main, ["inspect", str(cp), "--check", "--json"])
    assert r.exit_code == 0, r.output
    assert [(f["code"], f["severity"]) for f in json.loads(r.stdout)["findings"]] == [("in-flight-batch", "info")]


def test_fleet_row_of_a_planned_batch(tmp_path):
    cp = tmp_path / "ws" / "cp"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "metadata").write_text('{"id":"q"}')
    for b in range(2):
        (cp / "offsets" / str(b)).write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{{"spark.sql.shuffle.partitions":"2"}}}}\n{{"logOffset":{b}}}')
    (cp / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    r = CliRunner().invoke(main, ["inspect", "-r", str(Path(tmp_path / "ws")), "--check", "--json"])
    assert r.exit_code == 0, r.output
    row = json.loads(r.stdout)["checkpoints"][0]
    assert (row["in_flight"], row["worst"]) == (1, "info")
