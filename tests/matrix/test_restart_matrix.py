"""``inspect``'s answer to "which Spark can restart this checkpoint?" held against what real
Sparks did: every checkpoint of the version matrix restarted on a copy under every pyspark
from 3.5 to 4.3 (``tests/fixtures/matrix/restarts.json``, from ``make restart-matrix``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from streamwatch.checkpoint.features import answer, line_text, parse_line
from streamwatch.checkpoint.reader import read_checkpoint

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
RESTARTS = MATRIX / "restarts.json"
CLI = str(Path(sys.executable).parent / "streamwatch")


def _observed() -> list[tuple[str, str, str, dict]]:
    if not RESTARTS.exists():
        return []
    data = json.loads(RESTARTS.read_text())
    return [(by, written_by, name, outcome)
            for by, fixtures in sorted(data.items())
            for written_by, cases in sorted(fixtures.items())
            for name, outcome in sorted(cases.items())]


OBSERVED = _observed()


def test_the_restart_matrix_was_observed_for_every_line():
    assert OBSERVED, f"{RESTARTS} is missing: run `make restart-matrix`"
    lines = {line_text(parse_line(by)) for by, *_ in OBSERVED}
    assert {"3.5", "4.0", "4.1", "4.2", "4.3"} <= lines, lines


@pytest.mark.parametrize(("by", "written_by", "name", "outcome"), OBSERVED,
                         ids=[f"{w}-{n}-by-{b}" for b, w, n, _ in OBSERVED])
def test_restartable_by_is_what_spark_did(by, written_by, name, outcome):
    cp = read_checkpoint(str(MATRIX / written_by / name / "cp"))
    a = answer(cp)
    said = parse_line(by) in a.can
    assert said == outcome["ok"], (
        f"inspect says Spark {by} {'can' if said else 'cannot'} restart a {written_by} {name} checkpoint; "
        f"Spark {by} {'restarted it' if outcome['ok'] else 'failed: ' + outcome.get('error', '')}")


def test_inspect_spark_says_what_stops_a_restart():
    cp = MATRIX / "4.3.0" / "join_v4" / "cp"
    if not cp.exists():
        pytest.skip("no 4.3.0 join_v4 fixture")
    out = subprocess.run([CLI, "inspect", str(cp), "--spark", "4.1"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Spark 4.1 cannot restart this checkpoint" in out.stdout
    assert "join state format v4 needs Spark 4.2 or newer" in " ".join(out.stdout.split())
    doc = json.loads(subprocess.run([CLI, "inspect", str(cp), "--json", "--spark", "4.2"], capture_output=True,
                                    text=True, timeout=60).stdout)
    assert doc["formats"]["target"] == {"spark": "4.2", "canRestart": True}
    assert "4.1" not in doc["formats"]["restartableBy"] and "4.2" in doc["formats"]["restartableBy"]


def test_a_bad_spark_version_is_a_usage_error():
    out = subprocess.run([CLI, "inspect", ".", "--spark", "four"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "not a Spark version" in out.stderr


@pytest.mark.parametrize("version", ["4.2.0", "4.3.0"])
def test_an_unfinished_repartition_blocks_a_restart_as_spark_did(version):
    facts = MATRIX / version / "facts.json"
    if not facts.exists():
        pytest.skip(f"no {version} fixtures")
    cases = json.loads(facts.read_text())["cases"]
    for name in ("repart_hdfs", "repart_rocks"):
        a = answer(read_checkpoint(str(MATRIX / version / name / "cp")))
        restarted = "error" not in cases[name]["restart"]
        mine = parse_line(version)
        assert (mine in a.can) == restarted, (name, cases[name]["restart"])
        if not restarted:
            assert "STREAMING_UNFINISHED_REPARTITION_DETECTED" in cases[name]["restart"]["error"]
            assert a.blocked_by == "state-repartition-unfinished" and a.can == ()
