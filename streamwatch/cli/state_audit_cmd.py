"""``streamwatch state CHECKPOINT --audit``: bounded vs growing state per operator
(:func:`streamwatch.state.audit.audit_state`), sharpened by a recording's or event log's
progress reports (``--recording``), as a table or the ``--json`` document (schema
``streamwatch.state-audit/1``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from streamwatch.errors import ExitCode, Unreadable

if TYPE_CHECKING:
    from streamwatch.state.audit import OperatorGrowth


def audit_doc(a: OperatorGrowth) -> dict[str, Any]:
    ev = a.evidence
    return {
        "operator": a.operator_id, "operator_name": a.name, "verdict": a.verdict,
        "rows_per_batch": round(a.rows_per_batch, 3), "bytes_per_batch": round(a.bytes_per_batch, 1),
        "batches_to_10gib": a.batches_to_projection, "skew_share": a.skew_share, "partitions": a.partitions,
        "watermark_moved": a.watermark_moved, "error": a.error,
        "points": [{"batch_id": p.batch_id, "rows": p.rows, "bytes": p.bytes} for p in a.points],
        "restart": [{"partition": r.partition, "store": r.store, "snapshot": r.snapshot, "replay_files": r.replay_files,
                     "replay_bytes": r.replay_bytes, "lagging": r.lagging} for r in a.restart],
        "progress": None if ev is None else {
            "verdict": ev.verdict, "reason": ev.reason, "rows_removed": ev.removed, "rows_dropped_by_watermark": ev.dropped,
            "watermark_moved": ev.watermark_moved,
            "batches": [{"batch_id": p.batch_id, "num_rows_total": p.rows_total, "num_rows_removed": p.rows_removed,
                         "num_rows_dropped_by_watermark": p.rows_dropped, "watermark_ms": p.watermark_ms} for p in ev.points]},
    }


def run_audit(checkpoint: str, recording: str | None, operator: int | None, as_json: bool) -> int:
    """``--audit``: print the audit; the exit status (0 ok, 1 warnings, 4 unreadable)."""
    from streamwatch.state import StateReadError
    from streamwatch.state.audit import audit_state
    from streamwatch.state.audit_findings import audit_findings

    try:
        audits = audit_state(checkpoint, recording=recording)
    except StateReadError:
        raise  # exit 4, one line, from the command group's handler
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's checkpoint
        raise Unreadable(f"{checkpoint}: unreadable ({type(e).__name__}: {e})") from None
    audits = [a for a in audits if operator is None or a.operator_id == operator]
    findings = audit_findings(audits)
    if as_json:
        import orjson

        doc = {"schema": "streamwatch.state-audit/1", "checkpoint": checkpoint, "recording": recording,
               "operators": [audit_doc(a) for a in audits],
               "findings": [{"severity": f.severity, "code": f.code, "message": f.message, "path": f.path} for f in findings]}
        sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        from rich.console import Console
        from rich.table import Table

        out = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 250)
        table = Table(title=f"state audit · {checkpoint}", title_justify="left")
        for col in ("operator", "verdict", "rows", "rows/batch", "bytes/batch", "skew", "removed", "evidence"):
            table.add_column(col, no_wrap=col != "evidence")
        for a in audits:
            ev = a.evidence
            table.add_row(f"{a.operator_id} ({a.name or 'unknown'})", a.verdict,
                          str(a.points[-1].rows) if a.points else "–", f"{a.rows_per_batch:+.1f}",
                          f"{a.bytes_per_batch:+.0f}", f"{a.skew_share:.0%}" if a.skew_share is not None else "–",
                          str(ev.removed) if ev is not None else "–",
                          ev.reason if ev is not None else (a.error or "state files only"))
        out.print(table)
        for f in findings:
            out.print(f"{f.severity}: {f.code}: {f.message}", highlight=False)
    return ExitCode.WARNINGS if any(f.severity in ("warning", "error") for f in findings) else ExitCode.OK
