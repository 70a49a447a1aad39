"""The growth/eviction audit on two real queries: a windowed count with a watermark (old
windows are evicted: bounded) and a groupBy on an ever-new key without one (growing), read
from their state files alone, and surfaced by ``streamwatch inspect``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.state.audit import audit_state
from streamwatch.state.audit_findings import audit_findings

pytestmark = pytest.mark.spark


def test_windowed_aggregation_with_watermark_is_bounded(state_cps, unchanged):
    cp = unchanged(state_cps["bounded"])
    (a,) = audit_state(str(cp))
    assert a.verdict == "bounded", a
    assert len(a.points) >= 5
    # the watermark of batch i (10·i − 1 s) closes every window but the last three (20 keys each)
    assert max(p.rows for p in a.points) <= 60 and a.points[-1].rows < a.points[-2].rows + 1
    assert a.watermark_moved is True
    codes = {f.code for f in audit_findings([a])}
    assert "state-bounded" in codes and "state-growing" not in codes


def test_group_by_ever_new_key_without_watermark_is_growing(state_cps, unchanged):
    cp = unchanged(state_cps["growing"])
    (a,) = audit_state(str(cp))
    assert a.verdict == "growing", a
    rows = [p.rows for p in a.points]
    assert rows == sorted(rows) and rows[-1] == 20 * len(a.points) and rows[0] == 20
    assert a.rows_per_batch == pytest.approx(20.0)
    assert a.bytes_per_batch > 0
    assert a.batches_to_projection is not None and a.batches_to_projection > 1000
    assert a.skew_share is not None and 0 < a.skew_share <= 1
    latest = a.points[-1].batch_id + 1  # HDFS: state version = batch id + 1, a delta per version
    assert a.restart and all(r.replay_files == latest - (r.snapshot or 0) for r in a.restart), a.restart
    (f,) = [f for f in audit_findings([a]) if f.code == "state-growing"]
    assert f.severity == "warning" and "+20.0 rows/batch" in f.message and "never advanced" in f.message
    assert "10.0 GiB in ~" in f.message


def test_inspect_reports_the_audit(state_cps, unchanged):
    for name, code in (("growing", "state-growing"), ("bounded", "state-bounded")):
        cp = unchanged(state_cps[name])
        result = CliRunner().invoke(main, ["inspect", str(cp), "--json"])
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert code in {f["code"] for f in doc["findings"]}, doc["findings"]
    result = CliRunner().invoke(main, ["inspect", str(state_cps["growing"]), "--check"])
    assert result.exit_code == 1  # the growing state is a warning


def test_inspect_skips_the_audit_over_the_file_budget_without_sizes(state_cps, unchanged, monkeypatch):
    """Without ``--sizes`` the inspector does not measure state bytes; the audit's budget is
    then the number of state files, so a production-sized checkpoint keeps a fast summary."""
    import streamwatch.state.audit_findings as audit

    cp = unchanged(state_cps["growing"])
    monkeypatch.setattr(audit, "AUDIT_BUDGET_FILES", 1)
    doc = json.loads(CliRunner().invoke(main, ["inspect", str(cp), "--json"]).stdout)
    codes = {f["code"] for f in doc["findings"]}
    assert "state-audit-skipped" in codes and "state-growing" not in codes
    (skipped,) = [f for f in doc["findings"] if f["code"] == "state-audit-skipped"]
    assert skipped["message"].startswith("state growth not audited: ") and " state files (run `streamwatch state`" in skipped["message"]
    # with measured sizes the byte budget applies, and this small state is audited
    doc = json.loads(CliRunner().invoke(main, ["inspect", str(cp), "--json", "--sizes"]).stdout)
    assert "state-growing" in {f["code"] for f in doc["findings"]}
