"""The audit with the query's progress reports: two real queries recorded with
``streamwatch.record`` — a windowed count whose watermark evicts old windows (bounded:
numRowsRemoved follows the watermark) and a ``dropDuplicates(["key"])`` whose watermark
advances but evicts nothing (growing: numRowsRemoved stays 0) — audited from their
checkpoints plus recordings, through the API and ``streamwatch state --audit --recording``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.events.reader import read_events
from streamwatch.state import StateReadError
from streamwatch.state.audit import audit_state
from streamwatch.state.audit_findings import audit_findings
from streamwatch.state.evidence import classify, progress_of

pytestmark = pytest.mark.spark


def test_removals_that_follow_the_watermark_are_bounded(state_cps, unchanged):
    cp, rec = state_cps["bounded_rec"]
    with unchanged.around(cp):
        (a,) = audit_state(str(cp), recording=str(rec))
    ev = a.evidence
    assert ev is not None and ev.verdict == "bounded", ev
    assert ev.removed > 0 and ev.watermark_moved
    assert len(ev.points) >= 6 and [p.batch_id for p in ev.points] == list(range(len(ev.points)))
    assert a.verdict == "bounded"
    (f,) = [f for f in audit_findings([a]) if f.code == "state-bounded"]
    assert f"rows removed over batches 0–{ev.points[-1].batch_id} as the watermark advanced" in f.message


def test_a_watermark_that_evicts_nothing_is_a_leak(state_cps, unchanged):
    cp, rec = state_cps["leak_rec"]
    with unchanged.around(cp):
        (a,) = audit_state(str(cp), recording=str(rec))
    ev = a.evidence
    assert ev is not None and ev.verdict == "growing", ev
    assert ev.removed == 0 and ev.watermark_moved
    totals = [p.rows_total for p in ev.points]  # a last no-data batch may repeat 120
    assert totals[:6] == [20 * (i + 1) for i in range(6)] and set(totals[6:]) <= {120}
    assert a.verdict == "growing" and a.batches_to_projection is not None
    (f,) = [f for f in audit_findings([a]) if f.code == "state-growing"]
    assert "numRowsRemoved stayed 0 while the watermark advanced" in f.message
    # without the recording the files alone see the rise, and no watermark problem
    (files_only,) = audit_state(str(cp))
    assert files_only.evidence is None and files_only.watermark_moved is True


def test_reports_of_another_query_are_ignored(state_cps):
    _, rec = state_cps["bounded_rec"]
    reports = progress_of(read_events(rec), "not-this-query")
    assert reports == [] and classify(0, reports) is None
    leak_cp, _ = state_cps["leak_rec"]
    (a,) = audit_state(str(leak_cp), recording=str(rec))  # the bounded query's recording
    assert a.evidence is None


def test_cli_audit_with_recording(state_cps, unchanged, tmp_path):
    cp, rec = state_cps["leak_rec"]
    cp = unchanged(cp)
    r = CliRunner().invoke(main, ["state", str(cp), "--audit", "--recording", str(rec), "--json"])
    assert r.exit_code == 1, r.output  # growing state is a warning
    doc = json.loads(r.stdout)
    assert doc["schema"] == "streamwatch.state-audit/1"
    (op,) = doc["operators"]
    assert op["verdict"] == "growing" and op["progress"]["rows_removed"] == 0
    assert [b["num_rows_total"] for b in op["progress"]["batches"]][-1] == 120
    r = CliRunner().invoke(main, ["state", str(cp), "--audit", "--recording", str(rec)])
    assert r.exit_code == 1 and "numRowsRemoved stayed 0" in r.stdout.replace("\n", " ") or "state-growing" in r.stdout
    bounded_cp, bounded_rec = state_cps["bounded_rec"]
    r = CliRunner().invoke(main, ["state", str(bounded_cp), "--audit", "--recording", str(bounded_rec)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["state", str(cp), "--recording", str(rec)])
    assert r.exit_code == 2 and "--audit" in r.stderr
    r = CliRunner().invoke(main, ["state", str(cp), "--audit", "--recording", str(tmp_path / "missing.jsonl")])
    assert r.exit_code == 4 and len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(StateReadError):
        audit_state(str(cp), recording=str(tmp_path / "missing.jsonl"))
