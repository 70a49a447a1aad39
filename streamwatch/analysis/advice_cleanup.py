"""The rule ``advise-file-source-cleanup`` of :mod:`streamwatch.analysis.advice`: a file source's
``cleanSource`` option (with ``sourceArchiveDir``) against the files it has read that are still
in its folder.

A file source lists its whole input folder on every trigger (``FileStreamSource.fetchMaxOffset``,
timed by Spark as the progress' ``durationMs.latestOffset``) and drops the names its log
already holds; the files it has read stay there unless ``cleanSource`` is ``archive`` or
``delete`` (Spark then moves or deletes each micro-batch's files after committing it), so the
planning time grows with every file ever read. Evidence: the source log (``sources/<id>/``,
the files read) against the folder listed now (:func:`read_files_present`, the only I/O here),
and, given progress, Spark's own planning time against its batch time.

Spark cleans a micro-batch's files when it commits the batch to the source, which it does
when it plans the next batch: the latest batch's files stay until then, with ``cleanSource`` on
too (an ``availableNow`` run leaves its last batch's files). So the files judged are the read
files still in the folder that an earlier source log batch read.

Verdict ``change`` when at least :data:`PILE_FILES` such files are in the folder, or at least
:data:`MIN_FILES` are while the planning time is :data:`PLANNING_SHARE` of the batch time or
more: ``likely`` (the source options are not in the checkpoint: that ``cleanSource`` is off is
inferred from the files left); ``keep`` ``measured`` when none is left; ``keep`` ``likely``
below the thresholds; ``unknown`` (with ``needs``) when the folder cannot be listed from here,
or when only one source log batch read files and some are left (cleaned or not, Spark has not
yet planned the batch that would clean them). Measured (``bench/advise_cleanup_bench.py``,
docs/advise.md): 10,000 read files left cost 605 ms of ``latestOffset`` a trigger against 44 ms
with ``cleanSource=delete`` (batch time 878 → 316 ms, medians, local[2]): about 56 ms a 1,000
files. The source log's compaction is not judged (not measured).
"""

from __future__ import annotations

import posixpath
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from streamwatch.analysis.advice import Advice, Confidence, Evidence, Verdict
from streamwatch.analysis.probe import Probe
from streamwatch.model.checkpoint import Checkpoint, SourceLog
from streamwatch.model.events import QueryProgress

CLEANUP_CODE = "advise-file-source-cleanup"
#: Read files left in the folder at or above which the rule advises cleaning them whatever the planning time.
PILE_FILES = 5_000
#: Read files left in the folder at or above which a planning share of :data:`PLANNING_SHARE` advises it.
MIN_FILES = 500
#: Planning (``durationMs.latestOffset``) at least this share of the batch time (``triggerExecution``).
PLANNING_SHARE = 0.25
#: Progress events judged: the most recent this many that time both.
RECENT_PROGRESS = 10


@dataclass(frozen=True, slots=True)
class ReadFilesPresent:
    """One file source's read files against its folder now: ``source`` (its ``sources/<id>``
    name), ``folder`` (the folder URI as the log writes it; None when the log names none or
    several), ``read`` (distinct file names its log holds), ``log_batches`` (source log batches
    that read files), ``present`` (how many of the read files the folder holds now) and
    ``present_before_latest`` (of those, the ones an earlier log batch than the latest read),
    both None when not listed, and ``reason`` (why not listed)."""

    source: str
    folder: str | None
    read: int
    log_batches: int
    present: int | None
    present_before_latest: int | None
    reason: str | None = None


def read_files_present(path: str, cp: Checkpoint) -> dict[str, ReadFilesPresent]:
    """Per file source of ``cp`` (read at ``path``, a local path or an fsspec URL) whose log
    entries were loaded: its folder listed once, read-only (:meth:`~streamwatch.analysis.probe.Probe.files_of`)
    and the log's file names counted in it. Never raises: a folder not listed gives ``present`` None."""
    from streamwatch.analysis.probe import ProbeError

    try:
        probe: Probe | None = Probe(path)
    except ProbeError:
        probe = None
    out = {}
    for log in cp.sources:
        if log.entries_loaded:
            out[log.name] = _present(probe, log)
    return out


def _name(uri: str) -> str:
    """A log entry's file name as the folder lists it (Spark writes URIs: ``%20`` for a space)."""
    return unquote(posixpath.split(uri)[1])


def _present(probe: Probe | None, log: SourceLog) -> ReadFilesPresent:
    latest = max((e.batch_id for e in log.entries), default=-1)
    batches = len({e.batch_id for e in log.entries})
    folders = {posixpath.split(e.path)[0] for e in log.entries}
    names = {_name(e.path) for e in log.entries}
    if len(folders) != 1:
        why = "the source has read no file yet" if not folders else \
            "the source reads several folders (partitioned or globbed): not listed"
        return ReadFilesPresent(log.name, None, len(names), batches, None, None, why)
    (folder,) = folders
    listing = probe.files_of(folder, lambda n: n not in names) if probe is not None else None
    if listing is None:
        return ReadFilesPresent(log.name, folder, len(names), batches, None, None, f"{folder} cannot be listed from here")
    earlier = {_name(e.path) for e in log.entries if e.batch_id != latest}
    latest_only = names - earlier  # a file read again in the latest batch was read before too
    return ReadFilesPresent(log.name, folder, len(names), batches, len(listing.files),
                            sum(1 for n in listing.files if n not in latest_only))


@dataclass(frozen=True, slots=True)
class _Planning:
    """Spark's planning time against its batch time over the recent progress (ms)."""

    latest_offset_ms: int
    batch_ms: int
    events: int

    @property
    def share(self) -> float:
        return self.latest_offset_ms / self.batch_ms if self.batch_ms else 0.0

    @classmethod
    def of(cls, progress: Sequence[QueryProgress]) -> _Planning | None:
        timed = [p for p in progress if "latestOffset" in p.duration_ms and "triggerExecution" in p.duration_ms]
        recent = timed[-RECENT_PROGRESS:]
        if not recent:
            return None
        return cls(int(statistics.median(p.duration_ms["latestOffset"] for p in recent)),
                   int(statistics.median(p.duration_ms["triggerExecution"] for p in recent)), len(recent))

    def evidence(self) -> tuple[Evidence, ...]:
        src = f"last {self.events} progress events"
        return (Evidence("median planning time (all sources' latest offsets)", self.latest_offset_ms, "ms",
                         f"{src}, durationMs.latestOffset"),
                Evidence("median batch time", self.batch_ms, "ms", f"{src}, durationMs.triggerExecution"),
                Evidence("planning share of the batch time", round(100 * self.share), "%", "the two medians above"))


def file_source_cleanup(cp: Checkpoint, present: Mapping[str, ReadFilesPresent],
                        progress: Sequence[QueryProgress] = ()) -> tuple[Advice, ...]:
    """``advise-file-source-cleanup`` (see the module docstring): one :class:`Advice` per file
    source of ``cp``, or one ``unknown`` when it has none. ``present``: each source's
    :class:`ReadFilesPresent` by source name (absent: not listed); ``progress``: the query's
    progress events (Spark's planning and batch times, ms; none: not measured)."""
    if not cp.sources:
        return (Advice(CLEANUP_CODE, "cleanSource", Verdict.UNKNOWN, Confidence.UNKNOWN,
                       "no file source log (sources/<id>/) in the checkpoint: the rule judges file sources only",
                       needs="a file source: its log sources/<id>/ names the files it has read"),)
    planning = _Planning.of(progress)
    return tuple(_cleanup_advice(log, present.get(log.name), planning) for log in cp.sources)


def _cleanup_advice(log: SourceLog, rp: ReadFilesPresent | None, planning: _Planning | None) -> Advice:
    setting = f"cleanSource (source {log.name})"
    ev: tuple[Evidence, ...] = ()
    if rp is not None:
        ev += (Evidence("files read", rp.read, "files", f"sources/{log.name} log, {rp.log_batches} log batches"),)
    if rp is None or rp.present is None or rp.present_before_latest is None or rp.folder is None:
        why = rp.reason if rp is not None else "its log entries were not read"
        return Advice(CLEANUP_CODE, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"the files source {log.name} has read were not looked for in its folder: {why}", ev,
                      needs="the source's folder listed from here (one folder, on the checkpoint's storage) "
                            "and its log sources/<id>/ read in full")
    left = rp.present_before_latest
    ev += (Evidence("read files still in the folder", rp.present, "files", f"listing of {rp.folder} now"),
           Evidence("of them read before the latest log batch", left, "files", f"sources/{log.name} log"))
    if planning is not None:
        ev += planning.evidence()
    if rp.present == 0 or (left == 0 and rp.log_batches > 1):
        return Advice(CLEANUP_CODE, setting, Verdict.KEEP, Confidence.MEASURED,
                      f"none of the files source {log.name} read before its latest batch is left in its folder "
                      f"({rp.present:,} of the latest batch, which Spark cleans when it plans the next one): each "
                      "trigger lists only those and the unread files", ev)
    if rp.log_batches < 2:
        return Advice(CLEANUP_CODE, setting, Verdict.UNKNOWN, Confidence.UNKNOWN,
                      f"{rp.present:,} read files are in the folder of source {log.name}, all of its only log batch: "
                      "Spark cleans a batch's files when it plans the next, so whether cleanSource is on cannot be told",
                      ev, needs="a second micro-batch that reads files from the source")
    slow = planning is not None and planning.share >= PLANNING_SHARE
    if left < PILE_FILES and not (slow and left >= MIN_FILES):
        return Advice(CLEANUP_CODE, setting, Verdict.KEEP, Confidence.LIKELY,
                      f"{left:,} files read before the latest batch are still in the folder of source {log.name}: "
                      f"below {PILE_FILES:,} (or {MIN_FILES:,} with planning ≥ {PLANNING_SHARE:.0%} of the batch "
                      "time), their listing costs little", ev)
    return _change(log, rp, left, setting, ev)


def _change(log: SourceLog, rp: ReadFilesPresent, left: int, setting: str, ev: tuple[Evidence, ...]) -> Advice:
    return Advice(CLEANUP_CODE, setting, Verdict.CHANGE, Confidence.LIKELY,
                  f"{left:,} files source {log.name} read before its latest batch are still in its folder: every "
                  "trigger lists them again; likely no cleanSource (the source options are not in the checkpoint)", ev,
                  "set .option(\"cleanSource\", \"archive\").option(\"sourceArchiveDir\", \"<a folder outside the "
                  "source's>\") on the source, or .option(\"cleanSource\", \"delete\"), when no other job reads these "
                  "files; it applies on restart, the checkpoint kept. Spark cleans the files of each batch it commits "
                  f"from then on: move the {left:,} read before out of {rp.folder} once (the source log "
                  f"sources/{log.name}/ names them)",
                  "each trigger lists only the unread files (and the latest batch's): the file source's planning time "
                  "(durationMs.latestOffset) no longer grows with every file ever read, so batches start sooner "
                  "(measured: docs/advise.md); archive moves or delete removes each file after its batch commits")
