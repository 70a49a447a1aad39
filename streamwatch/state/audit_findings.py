"""What the state growth audit (:mod:`streamwatch.state.audit`) tells ``streamwatch inspect``
and ``streamwatch state --audit``: its findings (``state-growing``, ``state-bounded``,
``state-skew``, ``state-snapshot-lag``, ``state-audit-unreadable``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamwatch.model.findings import Finding
from streamwatch.state.audit import PROJECTION_BYTES, OperatorGrowth, audit_state

if TYPE_CHECKING:
    from streamwatch.model.checkpoint import Checkpoint


def _gib(n: float) -> str:
    return f"{n / 1024**3:.1f} GiB" if n >= 1024**3 else f"{n / 1024**2:.1f} MiB" if n >= 1024**2 else f"{n / 1024:.1f} KiB"


def audit_findings(audits: list[OperatorGrowth]) -> list[Finding]:
    """Findings for ``streamwatch inspect``: ``state-growing`` (warning), ``state-bounded``
    (info), ``state-skew`` (warning: one partition holds more than half the rows, over 2
    partitions), ``state-snapshot-lag`` (warning), ``state-audit-unreadable`` (warning)."""
    out: list[Finding] = []
    for a in audits:
        where = a.path or f"state/{a.operator_id}"
        label = f"state operator {a.operator_id}{f' ({a.name})' if a.name else ''}"
        if a.error:
            out.append(Finding("warning", "state-audit-unreadable", f"{label}: growth not audited: {a.error}", where))
            continue
        if a.verdict == "growing":
            nowm = "; the watermark never advanced (no watermark?)" if a.watermark_moved is False else ""
            proj = (f"; at this rate it reaches {_gib(PROJECTION_BYTES)} in ~{a.batches_to_projection} batches"
                    if a.batches_to_projection is not None else "")
            span = (f"({a.points[0].rows} → {a.points[-1].rows} rows over batches {a.points[0].batch_id}–{a.points[-1].batch_id})"
                    if a.points else "")
            ev = f"; progress reports: {a.evidence.reason}" if a.evidence is not None and a.evidence.verdict else ""
            many = len(a.growing_parts) > 1
            sides = (f"; the {' and '.join(a.growing_parts)} side{'s buffer' if many else ' buffers'} more rows and "
                     f"evict{'' if many else 's'} none" if a.growing_parts and not ev else "")
            out.append(Finding("warning", "state-growing",
                               f"{label}: state grows {a.rows_per_batch:+.1f} rows/batch, {a.bytes_per_batch:+.0f} bytes/batch "
                               f"{span}{sides}{nowm if not ev else ''}{ev}{proj}", where))
        elif a.verdict == "bounded" and a.points:
            ev = f"; progress reports: {a.evidence.reason}" if a.evidence is not None and a.evidence.verdict else ""
            gone = sum(p.removed for p in a.points)
            # a lower bound: rows added and evicted between two samples, and keys reused (a
            # join's (key, index)), go unseen
            evicted = (f"; at least {gone} rows evicted over batches {a.points[0].batch_id}–{a.points[-1].batch_id}"
                       if gone and not ev else "")
            out.append(Finding("info", "state-bounded",
                               f"{label}: state is bounded ({a.points[-1].rows} rows, {a.rows_per_batch:+.1f} rows/batch over "
                               f"batches {a.points[0].batch_id}–{a.points[-1].batch_id}){evicted}{ev}", where))
        if a.skew_share is not None and a.partitions > 2 and a.skew_share > 0.5 and a.points[-1].rows >= 100:
            out.append(Finding("warning", "state-skew",
                               f"{label}: one partition holds {a.skew_share:.0%} of {a.points[-1].rows} state rows", where))
        lag = [r for r in a.restart if r.lagging]
        if lag:
            worst = max(lag, key=lambda r: r.replay_files)
            out.append(Finding("warning", "state-snapshot-lag",
                               f"{label}: {len(lag)} partition store(s) replay more deltas than minDeltasForSnapshot on restart "
                               f"(worst: partition {worst.partition} {worst.store}, {worst.replay_files} files, "
                               f"{worst.replay_bytes} bytes since snapshot {worst.snapshot})", where))
    return out


__all__ = ["AUDIT_BUDGET_BYTES", "AUDIT_BUDGET_FILES", "audit_findings", "with_audit_findings"]


AUDIT_BUDGET_BYTES = 256 * 1024**2
#: Without measured sizes (``inspect`` without ``--sizes``) the budget is a file count, so a
#: production-sized checkpoint (tens of thousands of state files) keeps a fast summary.
AUDIT_BUDGET_FILES = 5_000


def with_audit_findings(cp: Checkpoint, path: str, storage_options: dict[str, Any] | None = None) -> Checkpoint:
    """``cp`` (a :class:`~streamwatch.model.checkpoint.Checkpoint`) with the audit's findings
    appended — the hook ``streamwatch inspect`` calls. Never raises: a failure is a
    ``state-audit-unreadable`` finding; state over :data:`AUDIT_BUDGET_BYTES` (or, sizes unmeasured, over
    :data:`AUDIT_BUDGET_FILES` files) is skipped
    with a ``state-audit-skipped`` info finding."""
    from dataclasses import replace

    if not any(op.partitions for op in cp.state):
        return cp
    sized = all(op.bytes is not None for op in cp.state)  # None: inspect did not measure sizes
    total = sum(op.bytes or 0 for op in cp.state)
    files = sum(p.files for op in cp.state for p in op.partitions)
    if (total > AUDIT_BUDGET_BYTES) if sized else (files > AUDIT_BUDGET_FILES):
        size = f"{_gib(total)} of state files" if sized else f"{files} state files"
        extra = [Finding("info", "state-audit-skipped",
                         f"state growth not audited: {size} (run `streamwatch state` on one operator)",
                         cp.state[0].path)]
    else:
        try:
            extra = audit_findings(audit_state(path, storage_options, checkpoint=cp))
        except Exception as e:  # noqa: BLE001 - the audit must never break inspect
            extra = [Finding("warning", "state-audit-unreadable",
                             " ".join(f"state growth not audited: {type(e).__name__}: {e}".split()), cp.state[0].path)]
    return replace(cp, findings=tuple(cp.findings) + tuple(extra)) if extra else cp
