"""``streamwatch state`` and the audit on every checkpoint in ``../shared/corpus`` (written by
Spark's own test suites; their state folders hold metadata but no store files): exit 1 and a
JSON answer with no tables where there is no state to show (stateless, or nothing committed),
one line and exit 4 where state there cannot be read, never a traceback, nothing written."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main
from streamwatch.state.audit_findings import with_audit_findings

pytestmark = pytest.mark.corpus


def test_every_corpus_checkpoint(corpus, unchanged):
    cps = sorted({p.parent for p in (corpus / "spark").rglob("offsets")} | {p.parent for p in (corpus / "spark").rglob("state")})
    assert cps
    for cp in cps:
        unchanged(cp)
        r = CliRunner().invoke(main, ["state", str(cp), "--json"])
        assert r.exit_code in (0, 1, 4), (cp, r.output)
        assert r.exception is None or isinstance(r.exception, SystemExit), (cp, r.exception)
        if r.exit_code == 1:
            assert json.loads(r.stdout)["tables"] == [], (cp, r.stdout)
        if r.exit_code == 4:
            assert len(r.stderr.strip().splitlines()) >= 1 and "Traceback" not in r.stderr
        try:
            model = read_checkpoint(str(cp), full=False)
        except Exception:  # noqa: BLE001 - not every corpus folder is a checkpoint
            continue
        with_audit_findings(model, str(cp))
