"""``streamwatch recover``: for each restart-blocking finding, the smallest edit that lets Spark
restart and what it costs (schema ``streamwatch.recover/1``); :func:`apply_to` writes the
repaired COPY (the original is never touched).

The rules follow ``MicroBatchExecution.populateStartOffsets`` (Spark 4.x): on restart the
latest ``offsets/L`` and the latest ``commits/C`` decide the next batch; ``offsets/L-1`` must
exist when L > 0; C == L means batch L+1 is planned next, C == L-1 means batch L re-runs with
the offsets it was planned with; C < L-1 (SPARK-38033) is not a state Spark recovers from
cleanly; stateful operators load state version C+1. The repairs, in the order
:mod:`.recover_steps` plans them: leftover and orphan checksum files, a missing ``metadata``,
a torn last log file, an unfinished offline state repartition, a missing ``offsets/L-1``, a
commit log behind, a missing state version.

What a re-run costs the sink: a file sink skips batch ids its ``_spark_metadata`` already
holds, a Delta sink skips (queryId, batchId) transactions it has, any other sink
(``foreachBatch``, Kafka…) sees the batch again unless it is idempotent.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Any, Literal

from streamwatch.checkpoint.ops.recover_steps import Edit, Logs, Repair, plan_repairs
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.model.checkpoint import Checkpoint

__all__ = ["BLOCKING", "SCHEMA", "Edit", "Plan", "RecoverError", "Repair", "SinkReplay", "apply_to", "plan"]

SCHEMA = "streamwatch.recover/1"
BLOCKING = {
    "commits-behind",
    "previous-offsets-missing",
    "offsets-not-empty-at-batch-0",
    "no-metadata",
    "empty-file",
    "unparsable-file",
    "state-version-missing",
    "commit-without-offsets",
    "state-repartition-unfinished",
}


class RecoverError(StreamwatchError):
    """NEWDIR cannot be written (exists and is not empty, or an OS error), or the checkpoint
    is not a local folder (``--apply-to`` copies local folders only). Exit 4."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class SinkReplay:
    """What a re-run batch does to the sink: ``kind`` (``file``, ``delta``, ``unknown``),
    whether it ``sees_batch_twice``, and ``why``."""

    kind: Literal["file", "delta", "unknown"]
    sees_batch_twice: bool
    why: str

    def doc(self) -> dict[str, Any]:
        return {"kind": self.kind, "sees_batch_twice": self.sees_batch_twice, "why": self.why}


def _sink_replay(cp: Checkpoint) -> SinkReplay:
    if cp.sink is not None:
        return SinkReplay("file", False, "the file sink skips batch ids its _spark_metadata already holds")
    if cp.delta_sink is not None:
        return SinkReplay("delta", False, "the Delta sink skips a (queryId, batchId) transaction it already committed")
    return SinkReplay("unknown", True, "foreachBatch/Kafka/other sinks see a re-run batch again unless they are "
                                       "idempotent (key the write on batchId)")


@dataclass(frozen=True, slots=True)
class Plan:
    """The recovery plan for one checkpoint: the restart-blocking findings, the ``repairs``
    in the order they apply, the logs' ends after them, and what a re-run does to the sink.
    :meth:`doc` is the ``streamwatch.recover/1`` document."""

    path: str
    query_id: str | None
    blocking_findings: list[str]
    repairs: list[Repair]
    latest_offsets: int | None
    last_commit: int | None
    sink: SinkReplay

    @property
    def recoverable(self) -> bool:
        return not any(r.note == "unrecoverable" for r in self.repairs)

    @property
    def rerun(self) -> list[int]:
        return sorted({b for r in self.repairs for b in r.rerun})

    @property
    def replanned(self) -> list[int]:
        return sorted({b for r in self.repairs for b in r.replanned})

    @property
    def edits(self) -> list[Edit]:
        return [e for r in self.repairs for e in r.edits]

    def doc(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "path": self.path,
            "query_id": self.query_id,
            "blocking_findings": self.blocking_findings,
            "repairs": [
                {"finding": r.finding, "summary": r.summary, "edits": [e.doc() for e in r.edits], "rerun": r.rerun,
                 "replanned": sorted(r.replanned), "note": r.note}
                for r in self.repairs
            ],
            "recoverable": self.recoverable,
            "after": {"latest_offsets": self.latest_offsets, "last_commit": self.last_commit},
            "rerun": self.rerun,
            "replanned": self.replanned,
            "sink": self.sink.doc(),
        }


def plan(cp: Checkpoint) -> Plan:
    """The recovery plan for ``cp`` (read with ``full=True``): the repairs of
    :func:`~.recover_steps.plan_repairs`, each planned on the logs the earlier ones left."""
    logs = Logs(set(cp.offset_batch_ids), set(cp.commit_batch_ids))
    repairs = plan_repairs(cp, logs)
    codes = {f.code for f in cp.findings}
    return Plan(cp.path, cp.query_id, sorted(codes & BLOCKING), repairs,
                max(logs.offs) if logs.offs else None, max(logs.coms) if logs.coms else None, _sink_replay(cp))


def apply_to(root: str, plan: Plan, newdir: str) -> list[str]:
    """Copy the local checkpoint folder ``root`` to ``newdir`` (which must not exist, or be
    an empty folder) and apply the plan's edits to the copy; Hadoop ``.<name>.crc`` checksum
    files of edited files are removed with them. Returns the edited paths (relative).

    Raises :class:`RecoverError` when ``root`` is not a local folder or ``newdir`` cannot be
    written. ``root`` is only read."""
    if "://" in root and not root.startswith("file://"):
        raise RecoverError(f"{root}: --apply-to copies local checkpoints only")
    root = root.removeprefix("file://")
    if os.path.exists(newdir) and (not os.path.isdir(newdir) or os.listdir(newdir)):
        raise RecoverError(f"{newdir}: exists and is not an empty folder")
    if os.path.realpath(newdir).startswith(os.path.realpath(root) + os.sep) or os.path.realpath(newdir) == os.path.realpath(root):
        raise RecoverError(f"{newdir}: must not be inside the checkpoint")
    try:
        if os.path.isdir(newdir):
            os.rmdir(newdir)
        shutil.copytree(root, newdir, symlinks=True)
        done = []
        for e in plan.edits:
            target = os.path.join(newdir, e.path)
            folder, name = os.path.split(target)
            crc = os.path.join(folder, f".{name}.crc")
            if os.path.exists(crc):
                os.remove(crc)
            if e.action == "delete":
                if os.path.lexists(target):
                    os.remove(target)
            elif e.action == "write":
                os.makedirs(folder, exist_ok=True)
                with open(target, "wb") as fh:
                    fh.write(e.content or b"")
            else:
                shutil.copyfile(os.path.join(newdir, e.source or ""), target)
            done.append(e.path)
        return done
    except OSError as ex:
        raise RecoverError(f"{newdir}: cannot write ({ex.strerror or ex})") from None
