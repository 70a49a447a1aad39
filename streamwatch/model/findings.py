"""Health findings about a checkpoint: what looks wrong (or worth knowing) and where.

A :class:`Finding` is one line a user can act on: a ``severity`` (``"info"``, ``"warning"``,
``"error"``), a stable kebab-case ``code`` (documented in docs/inspect.md and docs/state.md; tests and ``--json``
consumers match on it), a one-line ``message`` and the ``path`` of the file or folder it is
about (None when it concerns the checkpoint as a whole).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["info", "warning", "error"]

SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}


@dataclass(frozen=True, slots=True)
class Finding:
    """One health finding (see module docstring)."""

    severity: Severity
    code: str
    message: str
    path: str | None = None

    def __post_init__(self) -> None:
        if self.severity not in SEVERITY_RANK:
            raise ValueError(f"unknown severity {self.severity!r}")


def worst_severity(findings: Iterable[Finding]) -> Severity | None:
    """The most severe of ``findings`` (``"error"`` > ``"warning"`` > ``"info"``), or None
    when there are none."""
    worst: Severity | None = None
    for f in findings:
        if worst is None or SEVERITY_RANK[f.severity] > SEVERITY_RANK[worst]:
            worst = f.severity
    return worst
