"""``streamwatch state`` through click's runner on checkpoints written in this run: typed
columns, UTC timestamps, windows as start – end, --json/--csv, exit codes 0/2/4, one-line
errors, and nothing written under the checkpoint."""

from __future__ import annotations

import csv
import io
import json
import shutil

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark


def run(*args):
    return CliRunner().invoke(main, ["state", *map(str, args)])


def test_table_shows_windows_and_utc_timestamps(state_cps, unchanged):
    cp = unchanged(state_cps["agg_rocks_cl"])
    r = run(cp, "--batch", 1)
    assert r.exit_code == 0, r.output
    assert "stateStoreSave" in r.stdout and "batch 1 (version 2)" in r.stdout
    assert "2026-01-01 00:00:10 – 2026-01-01 00:00:20" in r.stdout.replace("\n", " ") or "00:00:10 –" in r.stdout
    assert "partitions: p0:" in r.stdout


def test_csv_has_every_row_and_typed_text(state_cps, unchanged):
    cp = unchanged(state_cps["agg_hdfs"])
    r = run(cp, "--csv")
    assert r.exit_code == 0, r.output
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0][:2] == ["key.window", "key.key"] and rows[0][-1] == "partition_id"
    doc = json.loads(run(cp, "--json", "--limit", 0).stdout)
    assert len(rows) - 1 == doc["tables"][0]["total_rows"] > 0
    window = rows[1][0]
    start, end = window.split(" – ")
    assert start.startswith("2026-01-01 ") and end.startswith("2026-01-01 ")


def test_json_schema_and_join_sides(state_cps, unchanged):
    cp = unchanged(state_cps["join"])
    r = run(cp, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["schema"] == "streamwatch.state/1"
    assert [t["store"] for t in doc["tables"]] == ["left", "right"]
    left = doc["tables"][0]
    names = [c["name"] for c in left["columns"]]
    assert "value.matched" in names and left["columns"][names.index("value.matched")]["type"] == "boolean"
    ts = names.index("value.lts")
    assert all(row[ts].endswith("Z") for row in left["rows"])
    assert sum(p["rows"] for p in left["partitions"]) == left["total_rows"]


def test_usage_and_unreadable_exit_codes(state_cps, tmp_path, unchanged):
    cp = unchanged(state_cps["join"])
    r = run(cp, "--csv")
    assert r.exit_code == 2 and "--store left" in r.stderr
    r = run(cp, "--json", "--csv")
    assert r.exit_code == 2
    r = run(cp, "--operator", 7)
    assert r.exit_code == 4 and len(r.stderr.strip().splitlines()) == 1 and "no state operator 7" in r.stderr
    r = run(cp, "--store", "middle")
    assert r.exit_code == 4 and "no store 'middle'" in r.stderr
    r = run(tmp_path / "missing")
    assert r.exit_code == 4 and len(r.stderr.strip().splitlines()) == 1
    r = run(cp, "--batch", -1)
    assert r.exit_code == 2


def test_corrupt_delta_is_a_one_line_finding(state_cps, tmp_path):
    cp = shutil.copytree(state_cps["agg_hdfs"], tmp_path / "cp")
    for f in (cp / "state" / "0" / "1").glob("*.snapshot"):
        f.unlink()
    delta = cp / "state" / "0" / "1" / "3.delta"
    delta.write_bytes(delta.read_bytes()[:30])
    r = run(cp, "--partition", 1)
    assert r.exit_code == 4, r.output
    assert "Traceback" not in r.output
    assert "state-store-unreadable" in r.stderr and "3.delta" in r.stderr
    schema = cp / "state" / "0" / "0" / "_metadata" / "schema"
    schema.write_bytes(b"\x00\x02v9garbage")
    r = run(cp, "--partition", 0)
    assert r.exit_code == 4 and len(r.stderr.strip().splitlines()) == 1 and "v9" in r.stderr
