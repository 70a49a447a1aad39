"""`streamwatch advise`: human output and --json on checkpoints written here in Spark's format
(conftest's builders: ``offsets/N`` with its conf, ``state/0/<partition>/<version>.delta``), a
recording with progress lines in ``StreamingQueryProgress.json``'s shape, and the exit codes
of its --help (through click and the installed entry point)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from streamwatch.cli import main

from conftest import QID, T0, build_checkpoint, write_state

EXE = str(Path(sys.executable).parent / "streamwatch")


def _cp(tmp_path: Path, partitions: int, state: bool = True) -> Path:
    """conftest's checkpoint (batch N planned at T0 + N s) with ``partitions`` in its conf,
    each ``commits/N`` modified 300 ms after its plan, and ``partitions`` state folders."""
    cp = build_checkpoint(tmp_path, conf={"spark.sql.shuffle.partitions": str(partitions)})
    for b in range(3):
        ns = (T0 + b * 1000 + 300) * 1_000_000
        os.utime(cp / "commits" / str(b), ns=(ns, ns))
    if state:
        write_state(cp, {p: [1, 2, 3] for p in range(partitions)})
    return cp


def _advise(*args: str):
    r = CliRunner().invoke(main, ["advise", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return r


def test_human_output_names_setting_evidence_action_and_confidence(tmp_path):
    cp = _cp(tmp_path, 200)
    r = _advise(str(cp), "--cores", "2")
    assert r.exit_code == 1  # a rule advises a change
    lines = r.stdout.splitlines()
    assert lines[0] == "advise-shuffle-partitions  [change, measured]  spark.sql.shuffle.partitions"
    assert "  evidence: spark.sql.shuffle.partitions: 200 partitions (offsets/2 conf)" in lines
    assert "  evidence: state partitions: 200 partitions (state/0 partition folders)" in lines
    assert "  evidence: cores: 2 cores (--cores)" in lines
    assert "  evidence: median batch time: 300 ms (3 batches, commits/N mtime − offsets/N batchTimestampMs)" in lines
    assert any(x.startswith("  do: ") and "spark.sql.shuffle.partitions=4" in x for x in lines)
    assert any(x.startswith("  effect: 200 → 4 state store tasks") for x in lines)


def test_json_output_and_exit_0_when_nothing_to_change(tmp_path):
    cp = _cp(tmp_path, 4)
    r = _advise(str(cp), "--cores", "2", "--json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["queryId"] == QID and doc["checkpoint"] == str(cp)
    a = next(f for f in doc["findings"] if f["code"] == "advise-shuffle-partitions")
    assert (a["verdict"], a["target"], a["action"]) == ("keep", None, None)
    assert {e["what"]: e["value"] for e in a["evidence"]}["state partitions"] == 4


def test_a_stateless_checkpoint_says_unknown_and_what_it_needs(tmp_path):
    r = _advise(str(_cp(tmp_path, 200, state=False)), "--cores", "2")
    assert r.exit_code == 0
    assert r.stdout.splitlines()[0] == "advise-shuffle-partitions  [unknown, unknown]  spark.sql.shuffle.partitions"
    assert any(x.startswith("  needs: a stateful query") for x in r.stdout.splitlines())


def test_the_recording_gives_the_batch_times_of_this_query_only(tmp_path):
    cp = _cp(tmp_path, 200)
    rec = tmp_path / "events.jsonl"

    def progress(qid: str, batch: int, took: int) -> str:
        return json.dumps({"v": 1, "kind": "progress", "t": 0, "event": {
            "id": qid, "runId": "r1", "batchId": batch, "timestamp": "2026-11-27T19:00:00.000Z",
            "durationMs": {"triggerExecution": took},
            "stateOperators": [{"operatorName": "stateStoreSave", "numShufflePartitions": 200}]}})

    rec.write_text("\n".join([progress(QID, 0, 4000), progress(QID, 1, 3000), progress(QID, 2, 5000),
                              progress("another-query", 0, 99)]) + "\n")
    doc = json.loads(_advise(str(cp), "--cores", "2", "--json", "--recording", str(rec)).stdout)
    ev = {e["what"]: e for e in doc["findings"][0]["evidence"]}
    assert ev["median batch time"]["value"] == 4000
    assert ev["median batch time"]["source"] == "3 batches, progress durationMs.triggerExecution"
    assert ev["numShufflePartitions"]["value"] == 200


def test_exit_codes_of_the_help(tmp_path):
    assert _advise(str(tmp_path / "nope")).exit_code == 4
    assert _advise(str(_cp(tmp_path, 8)), "--recording", str(tmp_path / "missing.jsonl")).exit_code == 4
    assert _advise(str(tmp_path / "cp"), "--cores", "0").exit_code == 2
    help_text = _advise("--help").stdout
    assert "Exit codes:" in help_text and "Examples:" in help_text


def test_the_installed_command_refuses_a_non_checkpoint_on_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    p = subprocess.run([EXE, "advise", str(tmp_path / "empty")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 4 and p.stdout == ""
    assert len(p.stderr.splitlines()) == 1 and p.stderr.startswith("streamwatch advise: ")


def _file_cp(tmp_path: Path, files: tuple[int, ...], unread: int) -> tuple[Path, Path]:
    """A checkpoint whose file source read ``files[k]`` files of ``tmp_path/in`` in batch k
    (``sources/0/<k>`` names them; ``offsets/k`` carries ``{"logOffset": k}``), and ``unread``
    more files landed in that folder that no batch read."""
    src = tmp_path / "in"
    src.mkdir()
    cp = build_checkpoint(tmp_path, offsets=range(len(files)), commits=range(len(files)))
    n = 0
    for b, count in enumerate(files):
        rows = []
        for _ in range(count):
            f = src / f"f{n:04d}.json"
            f.write_text("{}\n")
            rows.append(json.dumps({"path": f.as_uri(), "timestamp": f.stat().st_mtime_ns // 1_000_000, "batchId": b}))
            n += 1
        (cp / "sources" / "0" / str(b)).write_text("v1\n" + "\n".join(rows))
    for i in range(unread):
        (src / f"late{i}.json").write_text("{}\n")
    (src / ".hidden.tmp").write_text("")  # Spark never lists it: not backlog
    return cp, src


def test_a_huge_first_batch_of_a_file_source_advises_a_limit(tmp_path):
    cp, _ = _file_cp(tmp_path, (60, 3, 2, 3), unread=0)
    r = _advise(str(cp), "--cores", "2")
    assert r.exit_code == 1
    lines = r.stdout.splitlines()
    at = lines.index("advise-max-files-per-trigger  [change, likely]  maxFilesPerTrigger (source 0)")
    assert "  evidence: files read by the first batch: 60 files (sources/0 log batch 0)" in lines[at:]
    assert "  evidence: median files of the later batches: 3 files (3 batches, sources/0 log)" in lines[at:]
    assert any(x.startswith('  do: set .option("maxFilesPerTrigger", 6)') for x in lines[at:])


def test_the_backlog_is_the_source_folders_unread_files(tmp_path):
    cp, _ = _file_cp(tmp_path, (3, 2, 4, 3), unread=7)
    doc = json.loads(_advise(str(cp), "--cores", "2", "--json").stdout)
    a = next(f for f in doc["findings"] if f["code"] == "advise-max-files-per-trigger")
    ev = {e["what"]: e for e in a["evidence"]}
    assert (ev["backlog"]["value"], ev["backlog"]["unit"]) == (7, "files")
    assert ev["files read by the first batch"]["value"] == 3
    # every file of the folder landed after the first batch's plan (T0): 12 read + 7 waiting
    assert (ev["files landed"]["value"], ev["files read"]["value"]) == (19, 12)
    # not draining, but the batches read 3, 2, 4, 3 files: no limit binds them
    assert (a["setting"], a["verdict"], a["target"]) == ("maxFilesPerTrigger (source 0)", "keep", None)
    assert "no file limit binds" in a["summary"]
