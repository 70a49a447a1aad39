"""`streamwatch diff` on checkpoints Spark writes in this run, against what the folders hold."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "diff"


def _invoke(*args: str):
    return CliRunner().invoke(main, ["diff", *args])


def _offsets(cp: Path) -> dict[int, list[str]]:
    """Batch id → lines of offsets/<id>, read straight from disk (the test's own truth)."""
    return {int(p.name): p.read_text().splitlines() for p in (cp / "offsets").iterdir() if p.name.isdigit()}


def _sink_files(out: Path) -> set[str]:
    return {p.name for p in out.iterdir() if p.suffix == ".parquet"}


@pytest.mark.spark
def test_diff_two_snapshots_of_a_stateful_query(mini_query, unchanged, tmp_path):
    q = mini_query(stateful=True)
    q.land(4)
    q.run()
    shutil.copytree(q.out, tmp_path / "old-out")
    old = tmp_path / "old-out" / "_checkpoint"
    sink_before = _sink_files(q.out)
    offs_before = _offsets(q.cp)
    new_files = q.land(3)
    q.run()
    offs_after = _offsets(q.cp)
    unchanged(old.parent)
    unchanged(q.out)

    r = _invoke(str(old), str(q.cp), "--json")
    assert r.exit_code == 1, r.output  # 1: changes found
    doc = json.loads(r.stdout)
    assert doc["schema"] == "streamwatch.diff/1"
    assert doc["same_query"] is True
    assert doc["batches"]["planned"] == [max(offs_before) + 1, max(offs_after)]
    src = doc["sources"][0]
    assert src["kind"] == "file"
    assert {Path(p).name for p in src["files"]} == {p.name for p in new_files}
    assert src["files_added"] == 3
    # watermark: batchWatermarkMs of the latest offsets file before and after
    wm = [json.loads(offs[max(offs)][1])["batchWatermarkMs"] for offs in (offs_before, offs_after)]
    assert doc["watermark"]["moved_ms"] == wm[1] - wm[0] > 0
    assert {Path(p).name for p in doc["sink"]["files_added"]} == _sink_files(q.out) - sink_before
    st = doc["state"][0]
    assert st["versions"]["new"][1] == max(offs_after) + 1
    parts = {(p["partition"], p["store"]) for p in st["partitions"]}
    assert parts == {(0, "default"), (1, "default")}  # shuffle partitions 2: both grew
    assert not doc["conf"]["changed"]

    text = _invoke(str(old), str(q.cp))
    assert text.exit_code == 1
    assert f"planned {max(offs_before) + 1}" in text.output and "files added" in text.output

    same = _invoke(str(q.cp), str(q.cp))
    assert same.exit_code == 0, same.output


@pytest.mark.spark
def test_diff_from_a_saved_inspect_json_and_findings(mini_query, unchanged, tmp_path):
    q = mini_query(stateful=False)
    q.land(3)
    q.run()
    saved = tmp_path / "before.json"
    r = CliRunner().invoke(main, ["inspect", str(q.cp), "--json"])
    assert r.exit_code == 0
    saved.write_text(r.stdout)
    q.land(2)
    q.run()
    # a copy whose last commit is gone: an in-flight batch appears
    shutil.copytree(q.out, tmp_path / "broken-out")
    broken = tmp_path / "broken-out" / "_checkpoint"
    last = max(int(p.name) for p in (broken / "commits").iterdir() if p.name.isdigit())
    (broken / "commits" / str(last)).unlink()
    unchanged(q.out)
    unchanged(broken.parent)

    doc = json.loads(_invoke(str(saved), str(q.cp), "--json").stdout)
    assert doc["old"]["origin"] == "inspect-json"
    assert doc["batches"]["planned"] == [3, 4]
    assert doc["sources"][0]["log_offset"] == {"old": 2, "new": 4}
    assert doc["sources"][0]["files_added"] == 2

    doc = json.loads(_invoke(str(q.cp), str(broken), "--json").stdout)
    assert [f["code"] for f in doc["findings"]["appeared"]] == ["in-flight-batch"]
    assert doc["batches"]["committed"] is None
    back = json.loads(_invoke(str(broken), str(q.cp), "--json").stdout)
    assert [f["code"] for f in back["findings"]["cleared"]] == ["in-flight-batch"]


@pytest.mark.spark
def test_diff_from_batch_to_batch(mini_query, unchanged):
    q = mini_query(stateful=False)
    q.land(5)
    q.run()
    unchanged(q.out)
    offs = _offsets(q.cp)
    lo = {b: json.loads(lines[2])["logOffset"] for b, lines in offs.items()}
    r = _invoke(str(q.cp), "--from-batch", "1", "--to-batch", "4", "--json")
    assert r.exit_code == 1, r.output
    doc = json.loads(r.stdout)
    assert doc["sources"][0]["log_offset"] == {"old": lo[1], "new": lo[4]}
    assert doc["sources"][0]["files_added"] == lo[4] - lo[1] == 3
    assert doc["batches"]["planned"] == [2, 4]
    assert len(doc["sink"]["files_added"]) >= 3  # one Parquet file per partition written


def test_diff_usage_errors(tmp_path):
    r = _invoke(str(tmp_path / "nope"), str(tmp_path / "nope2"))
    assert r.exit_code == 4 and "no such file or directory" in r.output
    r = _invoke(str(tmp_path))
    assert r.exit_code == 2 and "NEW is missing" in r.output
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "other"}')
    r = _invoke(str(bad), str(tmp_path))
    assert r.exit_code == 4 and "not a streamwatch inspect --json document" in r.output
    assert "Traceback" not in r.output
    assert "Examples:" in CliRunner().invoke(main, ["diff", "--help"]).output


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("STREAMWATCH_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.is_file(), f"missing golden file {path} (STREAMWATCH_UPDATE_GOLDEN=1 to create)"
    assert text == path.read_text(), f"output differs from {path}"


@pytest.mark.corpus
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_diff_golden_on_the_corpus(corpus, unchanged, fmt):
    cp = unchanged(corpus / "spark" / "checkpoint-version-4.0.0" / "hdfs" / "join2")
    args = [str(cp), "--from-batch", "0", "--to-batch", "4"] + (["--json"] if fmt == "json" else [])
    r = _invoke(*args)
    assert r.exit_code == 1, r.output
    _golden(f"join2-0-4.{fmt}", r.stdout.replace(str(cp), "<PATH>"))
