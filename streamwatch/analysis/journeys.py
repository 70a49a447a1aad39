"""Each landed file's journey: landed → read by batch N (file-source log) → committed
(commit log has N). Pure Python over model objects; no textual, no pyspark."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping
from urllib.parse import unquote, urlparse

from streamwatch.model.landing import LandedFile


def normalise_path(path: str) -> str:
    """A file-source log path (``file:///a/b%20c.csv``) or a local path → absolute local
    path, so both compare equal."""
    if path.startswith("file:"):
        path = unquote(urlparse(path).path)
    return os.path.normpath(os.path.abspath(path))


def file_entries(checkpoint: Any) -> Iterable[Any]:
    """``FileEntry``-like objects (``path``, ``batch_id``) of every file-source log of a
    checkpoint (``Checkpoint.sources``); nothing when the reader provides none."""
    for src in getattr(checkpoint, "sources", None) or ():
        entries = getattr(src, "entries", None)
        if entries is None and hasattr(src, "path") and hasattr(src, "batch_id"):
            yield src
            continue
        yield from entries or ()


@dataclass(frozen=True, slots=True)
class Consumed:
    """Where a landed file went: the query whose file source read it, the batch id that read
    it (from ``sources/<i>/N``), and whether that batch is in the commit log."""

    query: str
    batch_id: int
    committed: bool


def consumed_files(checkpoints: Mapping[str, Any]) -> dict[str, Consumed]:
    """Normalised path → :class:`Consumed`, over the checkpoints (query name →
    ``Checkpoint``). A file read by several queries keeps the first (plan order)."""
    out: dict[str, Consumed] = {}
    for query, cp in checkpoints.items():
        last_commit = getattr(cp, "last_committed_batch_id", None)
        for e in file_entries(cp):
            try:
                path = normalise_path(str(e.path))
                batch = int(e.batch_id)
            except (TypeError, ValueError, AttributeError):
                continue
            if path not in out:
                out[path] = Consumed(query, batch, last_commit is not None and batch <= last_commit)
    return out


@dataclass(frozen=True, slots=True)
class Journey:
    """One landed file and its stage: ``landed`` (not read yet — backlog), ``read``
    (batch planned, not committed) or ``committed``."""

    file: LandedFile
    stage: str
    consumed: Consumed | None

    @property
    def text(self) -> str:
        if self.consumed is None:
            return "landed"
        if self.stage == "read":
            return f"read by batch {self.consumed.batch_id}"
        return f"committed (batch {self.consumed.batch_id})"


def journeys(files: Iterable[LandedFile], consumed: Mapping[str, Consumed]) -> list[Journey]:
    """The journey of each file (input order kept)."""
    out = []
    for f in files:
        c = consumed.get(normalise_path(f.path))
        stage = "landed" if c is None else ("committed" if c.committed else "read")
        out.append(Journey(f, stage, c))
    return out


def backlog(journeys_: Iterable[Journey]) -> dict[str, int]:
    """Per landing source: files landed but not yet read by any batch."""
    out: dict[str, int] = {}
    for j in journeys_:
        out.setdefault(j.file.source, 0)
        if j.stage == "landed":
            out[j.file.source] += 1
    return out
