"""Each landed file's journey: landed → read by batch N (the file-source log, credited to
the query batch through ``offsets/N``'s ``logOffset``) → committed (commit log has N). Pure
Python over model objects; no textual, no pyspark."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import unquote, urlparse

from streamwatch.model.checkpoint import Checkpoint
from streamwatch.model.landing import LandedFile


def normalise_path(path: str) -> str:
    """A file-source log path (``file:///a/b%20c.csv``) or a local path → absolute local
    path, so both compare equal."""
    if path.startswith("file:"):
        path = unquote(urlparse(path).path)
    return os.path.normpath(os.path.abspath(path))


class ReadFile(NamedTuple):
    """One file a file source read: ``source`` (its folder name: ``sources/<source>/``, the
    index ``"0"``… or a named source's name), ``path`` (URI text as
    logged), ``timestamp_ms`` (its modification time, epoch ms), ``batch_id`` the *query*
    batch that read it (None when not known: the offsets that would tell are gone, or no
    planned batch has reached it yet) and ``log_batch_id`` the source log's own batch id."""

    source: str
    path: str
    timestamp_ms: int
    batch_id: int | None
    log_batch_id: int


def file_entries(checkpoint: Checkpoint) -> Iterator[ReadFile]:
    """:class:`ReadFile` objects of every file-source log of a checkpoint
    (``Checkpoint.sources``), each credited to the query batch that read it through the
    offsets' ``logOffset`` (the source log numbers its batches itself: its ``batchId`` is not
    the query's)."""
    for source, e, batch in checkpoint.files_by_batch().query_batches():
        yield ReadFile(source, e.path, e.timestamp_ms, batch, e.batch_id)


@dataclass(frozen=True, slots=True)
class Consumed:
    """Where a landed file went: the query whose file source read it, the query batch id
    that read it (through ``offsets/N``'s ``logOffset``; None when not known) and whether it
    is committed (the batch is in the commit log, or — batch unknown — the file's source-log
    batch is at or below the last committed batch's ``logOffset``)."""

    query: str
    batch_id: int | None
    committed: bool


def _committed_log_offsets(cp: Checkpoint) -> dict[str, int]:
    """Source folder name → ``logOffset`` the last committed batch had reached (when its
    offsets entry is read)."""
    last = cp.last_committed_batch_id
    if last is None:
        return {}
    out: dict[str, int] = {}
    for _, m in cp.files_by_batch().sources:
        lo = m.read_up_to(last)
        if lo is not None:
            out[m.name] = lo
    return out


def consumed_files(checkpoints: Mapping[str, Checkpoint]) -> dict[str, Consumed]:
    """Normalised path → :class:`Consumed`, over the checkpoints (query name →
    :class:`Checkpoint`). A file read by several queries keeps the first (plan order)."""
    out: dict[str, Consumed] = {}
    for query, cp in checkpoints.items():
        last_commit = cp.last_committed_batch_id
        done = _committed_log_offsets(cp)
        for e in file_entries(cp):
            path = normalise_path(e.path)
            if path in out:
                continue
            if e.batch_id is not None:
                committed = last_commit is not None and e.batch_id <= last_commit
            else:
                lo = done.get(e.source)
                committed = lo is not None and e.log_batch_id <= lo
            out[path] = Consumed(query, e.batch_id, committed)
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
        batch = self.consumed.batch_id
        if self.stage == "read":
            return "read (batch not known)" if batch is None else f"read by batch {batch}"
        return "committed (batch not known)" if batch is None else f"committed (batch {batch})"


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
