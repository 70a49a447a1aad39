"""The inspector's findings as ``streamwatch watch`` emits them: re-checked on the watched
window of a checkpoint (:func:`window_findings`) and each emitted once (:func:`new_findings`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from streamwatch.analysis.probe import Probe
from streamwatch.analysis.records import CheckpointFinding
from streamwatch.checkpoint import health
from streamwatch.checkpoint.spark4 import find_repartitions
from streamwatch.model.batchlogs import OffsetLogEntry
from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.findings import Finding

#: Findings that the status record reports better (they flip with every batch).
TRANSIENT_CODES = frozenset({"in-flight-batch", "no-commits"})


def window_findings(url: str, query_id: str, offsets: Mapping[int, OffsetLogEntry], commit_ids: Iterable[int],
                    probe: Probe, root: str) -> list[Finding]:
    """The offsets/commits log, conf and watermark findings of the window a watcher holds:
    ``offsets`` (batch id → ``offsets/N``) and the committed batch ids, under ``root``."""
    entries = tuple(offsets.values())
    offs = tuple(offsets)
    cp = Checkpoint(path=url, query_id=query_id or None, offsets=entries, offset_batch_ids=offs,
                    commit_batch_ids=tuple(b for b in commit_ids if not offs or b >= offs[0]))
    return [*health.log_findings(cp, probe.join(root, "offsets"), probe.join(root, "commits")),
            *health.conf_findings(entries, probe.join(root, "offsets"), find_repartitions(entries)),
            *health.watermark_findings(cp)]


def new_findings(findings: Iterable[Finding], seen: set[tuple[str, str]],
                 who: tuple[str, str, str]) -> list[CheckpointFinding]:
    """``findings`` not emitted before (by code and message, kept in ``seen``) and not
    :data:`TRANSIENT_CODES`, as records of query ``who`` (id, name, checkpoint)."""
    out = []
    for f in findings:
        key = (f.code, f.message)
        if f.code in TRANSIENT_CODES or key in seen:
            continue
        seen.add(key)
        out.append(CheckpointFinding(*who, f.severity, f.code, f.message, f.path))
    return out
