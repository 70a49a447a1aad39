"""``streamwatch compat --verify``: Spark's own answer — start the changed query with
``availableNow`` on a temporary copy of the checkpoint (and of a file sink folder) and read
what each source resumed from (the restart's first ``StreamingQueryProgress`` against the
copy's offsets log ``offsets/N`` and file source logs ``sources/<id>``). The originals are
only read."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

import orjson

from streamwatch.checkpoint import Checkpoint, CheckpointError, read_checkpoint
from streamwatch.checkpoint.ops.compat_rules import NewSource
from streamwatch.spark.compat_shape import private_field, scala_map, shape

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.streaming.listener import StreamingQueryProgress
    from pyspark.sql.streaming.readwriter import DataStreamWriter


@dataclass(frozen=True, slots=True)
class ResumedSource:
    """Source ``index`` of the query restarted by :func:`verify` (the query's order), known
    to the checkpoint as ``source_id`` (its name when named with ``DataStreamReader.name``,
    else its index as text: :meth:`NewSource.source_id`), as Spark's first progress of the
    restart reports it (``SourceProgress``): ``description`` (e.g.
    ``FileStreamSource[file:/in]``; from the analyzed plan when no batch ran), ``start_offset``
    (offset JSON the source resumed from, Spark takes the offsets log line of its id),
    ``checkpoint_offset`` (that line in the checkpoint's ``offsets/N`` of the batch before
    the restart's first one: the latest, or the one before when an uncommitted batch re-runs),
    ``logged_folders`` (folders of the files the checkpoint's ``sources/<source_id>`` log
    lists: file sources only) and ``own``: False when the source resumed offsets another
    source wrote (a file source none of whose logged files lies under its folder)."""

    index: int
    description: str
    start_offset: str | None
    checkpoint_offset: str | None
    logged_folders: tuple[str, ...]
    own: bool
    source_id: str


@dataclass(frozen=True, slots=True)
class SparkAnswer:
    """What Spark did when the changed query started on a copy: ``restarted`` True when it ran
    its availableNow batches and stopped without error, else ``error`` (first line);
    ``sources``: what each source resumed from (empty when Spark refused before a batch)."""

    restarted: bool
    error: str | None
    batches_run: int
    sources: tuple[ResumedSource, ...] = ()

    @property
    def resumed_own_offsets(self) -> bool:
        """Every source resumed the offsets its own index wrote. Spark matches sources by
        index in the offsets log: a swapped or moved file source may restart without error
        (when the last batch read no file, ``getBatch`` of the recovered range reads nothing)
        and then resume another source's file log: a restart of a different query."""
        return all(s.own for s in self.sources)

    @property
    def resumed(self) -> bool:
        """Spark restarted the query and every source resumed its own offsets."""
        return self.restarted and self.resumed_own_offsets

    def mismatch(self) -> str | None:
        """One line naming the first source that resumed another source's offsets, else None."""
        for s in self.sources:
            if not s.own and s.start_offset is not None and not _same_offset(s.start_offset, s.checkpoint_offset):
                return f"source {s.source_id} {s.description} resumed from {s.start_offset}, not the checkpoint's {s.checkpoint_offset}"
            if not s.own:
                how = "by index" if s.source_id.isdecimal() else "by name"
                return (f"source {s.source_id} {s.description} resumed offsets {s.start_offset} of the checkpoint's source {s.source_id}, "
                        f"whose log lists files under {s.logged_folders[0]}: Spark matches sources {how}")
        return None


_FILE_SOURCE = re.compile(r"^FileStreamSource\[(.*)\]$")


def _under(folder: str, logged: str) -> bool:
    from fnmatch import fnmatchcase

    f, d = _local(folder), _local(logged)
    if any(c in f for c in "*?[{"):
        return fnmatchcase(d, f) or fnmatchcase(d, f + "/*")
    return d == f or d.startswith(f + "/")


def _local(p: str) -> str:
    p = p.removeprefix("file://").removeprefix("file:")
    return ("/" + p.lstrip("/") if p.startswith("/") else p).rstrip("/")


def _same_offset(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and orjson.loads(a) == orjson.loads(b)
    except orjson.JSONDecodeError:
        return a == b


def _resumed(cp: Checkpoint | None, first_progress: StreamingQueryProgress | None,
             planned: tuple[NewSource, ...]) -> tuple[ResumedSource, ...]:
    """Each source of the restart against the checkpoint ``cp`` as read before the restart,
    matched by the id Spark matches it by (the ``planned`` sources of the analyzed plan, in
    the query's order: a named source by its name, else by its index): the description and
    start offset of ``first_progress`` (a ``StreamingQueryProgress`` whose ``sources`` are in
    the query's order; None when no batch ran: then the paths of ``planned``)."""
    latest = cp.latest_offsets if cp is not None else None
    if latest is None:
        return ()
    assert cp is not None
    logs = {s.name: s for s in cp.sources}
    progress = list(first_progress.sources) if first_progress is not None else []
    # the restart's first batch resumes from the entry of the batch before it: the latest one,
    # or the one before when Spark re-runs a planned but uncommitted last batch
    prev = first_progress.batchId - 1 if first_progress is not None else latest.batch_id
    resumed_from = next((o for o in cp.offsets if o.batch_id == prev), latest)
    out = []
    for i in range(max(len(progress), len(planned))):
        sid = planned[i].source_id(i) if i < len(planned) else str(i)
        pos = resumed_from.position(sid)
        if pos is None:  # a source the checkpoint holds no offsets of (added since)
            continue
        recorded = resumed_from.sources[pos]
        if i < len(progress):
            desc, start = str(progress[i].description), progress[i].startOffset
            m = _FILE_SOURCE.match(desc)
            folder = m.group(1) if m else None
        else:
            folder = planned[i].path if planned[i].kind == "file" else None
            desc, start = f"{planned[i].kind} source {folder or ''} (no batch ran: from the analyzed plan)".replace("  ", " "), None
        log = logs.get(sid)
        dirs = tuple(sorted({e.path.rsplit("/", 1)[0] for e in log.entries})) if log is not None else ()
        own = folder is None or not dirs or any(_under(folder, d) for d in dirs)
        if start is not None and not _same_offset(start, recorded):
            own = False  # resumed from somewhere other than the checkpoint's line of this source
        out.append(ResumedSource(i, desc, start, recorded, dirs, own, sid))
    return tuple(out)


def _commit_files(checkpoint: str) -> set[str]:
    """The names in the commit log folder ``<checkpoint>/commits`` (empty when there is none)."""
    commits = os.path.join(checkpoint, "commits")
    return set(os.listdir(commits)) if os.path.isdir(commits) else set()


def verify(writer: DataStreamWriter, checkpoint: str, sink_path: str | None, timeout_s: float = 300) -> SparkAnswer:
    """Start ``writer`` with ``availableNow`` on a temporary copy of ``checkpoint`` (and of
    ``sink_path`` when the writer writes to that folder); the originals are only read. Spark's
    answer is whether the query ran without error, and what each source resumed from (the
    first progress of the restart against the copy's offsets log and file source logs at
    the same index, see :attr:`SparkAnswer.resumed_own_offsets`)."""
    tmp = tempfile.mkdtemp(prefix="streamwatch-compat-")
    try:
        cp_copy = os.path.join(tmp, "checkpoint")
        shutil.copytree(checkpoint, cp_copy, symlinks=True)
        try:
            cp_before: Checkpoint | None = read_checkpoint(cp_copy, full=True, sizes=False)
        except CheckpointError:
            cp_before = None
        planned = shape(writer).sources  # the sources' names (by which Spark matches them), before any restart
        jw = writer._jwrite
        opts = scala_map(private_field(jw, "extraOptions"))
        target = opts.get("path")
        if target and os.path.isdir(target.removeprefix("file:")):
            copy = os.path.join(tmp, "sink")
            shutil.copytree(target.removeprefix("file:"), copy, symlinks=True)
            writer = writer.option("path", copy)
        elif target:
            writer = writer.option("path", os.path.join(tmp, "new-sink"))
        before = _commit_files(cp_copy)
        progress: list[StreamingQueryProgress] = []
        err: Exception | None
        try:
            q = writer.option("checkpointLocation", cp_copy).trigger(availableNow=True).start()
            # pyspark's stub says int; it takes seconds as a float (timeout * 1000 ms)
            q.awaitTermination(timeout_s)  # type: ignore[arg-type]
            err = q.exception()
            if q.isActive:
                q.stop()
            progress = sorted((p for p in q.recentProgress if p.sources), key=lambda p: p.batchId)
        except Exception as e:  # noqa: BLE001 - Spark's refusal is the answer
            err = e
        ran = len([n for n in _commit_files(cp_copy) - before if n.isdecimal()])
        if err is not None:
            # pyspark's exceptions start their text with Spark's message (the JVM stack trace follows)
            line = str(err).strip().splitlines()[0]
            return SparkAnswer(False, line[:500], ran)
        first = progress[0] if progress else None
        return SparkAnswer(True, None, ran, _resumed(cp_before, first, planned))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
