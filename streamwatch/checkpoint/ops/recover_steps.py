"""The seven repair steps of ``streamwatch recover`` (:mod:`.recover` holds the plan, its
``streamwatch.recover/1`` document and :func:`~.recover.apply_to`). Each step plans the
smallest edit for one restart-blocking finding on the offsets and commit logs the earlier
steps left (:class:`Logs`), following ``MicroBatchExecution.populateStartOffsets`` (Spark 4.x).
:func:`plan_repairs` runs them in this order:

* Hadoop ``.N.crc`` checksum files whose ``N`` is gone (Spark's rename of a new ``N`` fails
  on them) and ``.tmp`` leftovers and stray files in ``offsets/`` (``temporary-file``,
  ``offsets-not-empty-at-batch-0``): deleted;
* a missing ``metadata`` (Spark 4.2 ``STREAMING_CHECKPOINT_MISSING_METADATA_FILE``): written
  with the Delta sink's transaction app id when there is one (Delta dedups by it), else a
  new query id;
* torn/unparsable last ``offsets/N``/``commits/N`` (``empty-file``, ``unparsable-file``):
  deleted (batch N re-runs, or is re-planned when its offsets went);
* ``state-repartition-unfinished`` (an offline state repartition that wrote ``offsets/N``
  but not ``commits/N``: Spark 4.2+ refuses to restart, ``STREAMING_UNFINISHED_REPARTITION_DETECTED``):
  the uncommitted ``offsets/N`` is dropped; the query restarts on the partitions batch N-1
  recorded and plans batch N anew from its sources (the other way out, a retry of the
  repartition to the same count, is RocksDB-only and is said in the repair's note);
* ``previous-offsets-missing``: when batch L committed, ``offsets/L`` is copied to
  ``offsets/L-1`` (Spark only reads it as a start that the committed L replaces); otherwise
  ``offsets/L`` is dropped and the batch re-planned;
* ``commits-behind``: a batch N in C+1…L-1 whose sink entry (file sink / Delta txn) or
  state version N+1 proves it finished gets its lost ``commits/N`` back (watermark from
  ``offsets/N+1``); at the first batch without proof, later offsets are dropped (re-planned);
* ``state-version-missing`` for the last committed batch C: roll back to the latest batch B
  whose state version B+1 is in every partition of its layout (after an offline repartition
  the new one): ``commits/B+1…C`` and ``offsets/B+2…`` go — and ``offsets/B+1`` too when B+1
  is a repartition batch (an uncommitted one is refused on restart; it is re-planned).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from streamwatch.checkpoint.fs import StorageError, open_storage
from streamwatch.checkpoint.ops.paths import relative_to
from streamwatch.checkpoint.spark4 import find_repartitions, provider_of, unfinished_repartition
from streamwatch.model.checkpoint import Checkpoint


@dataclass(frozen=True, slots=True)
class Edit:
    """One file operation on the copy, ``path`` relative to the checkpoint root:
    ``delete`` it, ``write`` ``content`` to it, or ``copy`` ``source`` to it."""

    action: Literal["delete", "write", "copy"]
    path: str
    content: bytes | None = None
    source: str | None = None

    def doc(self) -> dict[str, Any]:
        d: dict[str, Any] = {"action": self.action, "path": self.path}
        if self.source is not None:
            d["source"] = self.source
        if self.content is not None:
            d["content"] = self.content.decode("utf-8", "replace")
        return d


@dataclass(slots=True)
class Repair:
    """The fix for one finding: ``edits``, the batches that re-run with their recorded offsets
    (``rerun``), those re-planned from fresh offsets (``replanned``) and ``note``."""

    finding: str
    summary: str
    edits: list[Edit] = field(default_factory=list)
    rerun: list[int] = field(default_factory=list)
    replanned: list[int] = field(default_factory=list)
    note: str | None = None


@dataclass(slots=True)
class Logs:
    """The batch ids left in the offsets and commit logs as the repairs are planned."""

    offs: set[int]
    coms: set[int]

    def drop(self, ids: list[int], r: Repair) -> None:
        """Delete ``offsets/b`` and ``commits/b`` of every batch in ``ids`` (those present)."""
        for b in sorted(ids):
            if b in self.offs:
                r.edits.append(Edit("delete", f"offsets/{b}"))
                self.offs.discard(b)
            if b in self.coms:
                r.edits.append(Edit("delete", f"commits/{b}"))
                self.coms.discard(b)


def plan_repairs(cp: Checkpoint, logs: Logs) -> list[Repair]:
    """The repairs for ``cp`` (read with ``full=True``) in the order they apply, each planned
    on the batch ids the earlier ones left in ``logs`` (updated in place to the logs' ends
    after all of them)."""
    codes = {f.code for f in cp.findings}
    repairs = [*_leftovers(cp, codes), *_metadata(cp, codes, logs), *_torn(cp, logs)]
    repairs += [*_unfinished_repartition(cp, logs), *_previous_offsets(logs), *_commits_behind(cp, logs)]
    repairs += _state_version(cp, logs)
    return repairs


def _rel(cp: Checkpoint, path: str | None) -> str | None:
    """``path`` relative to the checkpoint (``offsets/3``), None when it lies outside (a
    sibling folder whose name starts like the checkpoint's is outside)."""
    if not path:
        return None
    rel = relative_to(path, cp.path)
    return None if rel in (None, ".") else rel


def _finished(cp: Checkpoint, n: int) -> bool:
    """Proof that batch n finished although ``commits/n`` is missing."""
    if cp.sink is not None:
        return bool(cp.sink.has_batch(n))
    if cp.delta_sink is not None and cp.query_id:
        return bool(cp.delta_sink.versions_for_batch(n, cp.query_id))
    return bool(cp.state) and all(n + 1 in cp.state_versions(op) for op in cp.state)


def _commit_bytes(watermark_ms: int) -> bytes:
    return b"v1\n" + orjson.dumps({"nextBatchWatermarkMs": watermark_ms})


def _orphan_checksums(cp: Checkpoint) -> list[str]:
    """Hadoop checksum files ``offsets/.N.crc``/``commits/.N.crc`` whose ``N`` is gone (a
    lost or deleted log file). Spark's atomic rename of a new ``N`` fails while the stale
    checksum is there ("Multiple streaming queries are concurrently using …")."""
    try:
        storage, root = open_storage(cp.path)
    except StorageError:
        return []
    out = []
    for folder in ("offsets", "commits"):
        names = set(storage.names(storage.join(root, folder)) or [])
        out += [f"{folder}/{n}" for n in sorted(names) if n.startswith(".") and n.endswith(".crc") and n[1:-4].isdecimal() and n[1:-4] not in names]
    return out


def _leftovers(cp: Checkpoint, codes: set[str]) -> list[Repair]:
    """Leftovers of a crash while writing, and checksums of lost log files: deleted."""
    out = []
    left = [f for f in cp.findings
            if f.code == "temporary-file" or (f.code == "stray-file" and "offsets-not-empty-at-batch-0" in codes)]
    rels = [r for r in (_rel(cp, f.path) for f in left) if r and not r.startswith("..")]
    if rels:
        out.append(Repair("offsets-not-empty-at-batch-0" if "offsets-not-empty-at-batch-0" in codes else "temporary-file",
                          f"remove {len(rels)} leftover file(s) a crash left while writing",
                          [Edit("delete", r) for r in sorted(rels)]))
    crcs = _orphan_checksums(cp)
    if crcs:
        out.append(Repair("orphan-checksum", f"remove {len(crcs)} checksum file(s) of lost log files (they make "
                                             "Spark's rewrite of that batch fail)", [Edit("delete", r) for r in crcs]))
    return out


def _metadata(cp: Checkpoint, codes: set[str], logs: Logs) -> list[Repair]:
    """A missing ``metadata``: written with the Delta sink's txn app id, else a new query id."""
    if "no-metadata" not in codes or not (logs.offs or logs.coms):
        return []
    txn = cp.delta_sink.last_txn if cp.delta_sink is not None else None
    qid = txn[0] if txn else str(uuid.uuid4())
    why = ("the Delta sink's txn app id (keeps its per-batch dedup)" if txn
           else "a new query id (a query-id-keyed sink will not recognise earlier batches)")
    return [Repair("no-metadata", f"write metadata with {why}", [Edit("write", "metadata", orjson.dumps({"id": qid}))])]


def _torn(cp: Checkpoint, logs: Logs) -> list[Repair]:
    """Torn last ``offsets/N`` (N and later re-planned) or ``commits/N`` (N re-runs): deleted."""
    out = []
    for f in cp.findings:
        if f.code not in ("empty-file", "unparsable-file"):
            continue
        rel = _rel(cp, f.path) or ""
        folder, _, name = rel.partition("/")
        if folder not in ("offsets", "commits") or not name.isdecimal():
            continue
        b = int(name)
        r = Repair(f.code, f"{rel} is torn: delete it")
        if folder == "commits":
            r.edits.append(Edit("delete", rel))
            logs.coms.discard(b)
            r.rerun.append(b)
        else:
            later = [x for x in logs.offs if x >= b]
            logs.drop(later, r)
            r.replanned += later
            r.summary = f"{rel} is torn: delete it" + (f" and the {len(later) - 1} later batch(es)" if len(later) > 1 else "")
        out.append(r)
    return out


def _unfinished_repartition(cp: Checkpoint, logs: Logs) -> list[Repair]:
    """Spark refuses to restart while an unfinished offline repartition's uncommitted
    ``offsets/N`` is the latest batch; without it the query restarts on the old partitions."""
    rep = unfinished_repartition(cp)
    if rep is None or rep.repartition.batch_id not in logs.offs:
        return []
    r0 = rep.repartition
    n = r0.batch_id
    r = Repair("state-repartition-unfinished",
               f"batch {n} is an offline state repartition ({r0.from_partitions} → {r0.to_partitions} partitions) that "
               f"did not finish, and Spark refuses to restart over it: drop the uncommitted offsets/{n}; the query "
               f"restarts on its {r0.from_partitions} partitions and plans batch {n} anew from its sources")
    logs.drop([n], r)
    r.replanned.append(n)
    if provider_of(cp, n) == "hdfs":
        r.note = ("the only way: a retry of the repartition fails again — offline repartition rejects the "
                  "HDFS-backed state store (STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER)")
    else:
        r.note = (f"or, instead of this edit: retry spark._streamingCheckpointManager.repartition(<checkpoint>, "
                  f"{r0.to_partitions}) on the original until it finishes; restarts then use {r0.to_partitions} partitions")
    return [r]


def _previous_offsets(logs: Logs) -> list[Repair]:
    """``offsets/L-1`` missing: a copy of a committed ``offsets/L`` stands in; an uncommitted
    ``offsets/L`` is dropped (re-planned), and the same asked of the new latest."""
    out = []
    while logs.offs:
        latest = max(logs.offs)
        if latest == 0 or latest - 1 in logs.offs:
            break
        r = Repair("previous-offsets-missing", f"offsets/{latest - 1} is missing")
        out.append(r)
        if latest in logs.coms:
            r.edits.append(Edit("copy", f"offsets/{latest - 1}", source=f"offsets/{latest}"))
            logs.offs.add(latest - 1)
            r.summary += (f": batch {latest} committed, so a copy of offsets/{latest} stands in (Spark replaces it "
                          "with the committed end)")
            break
        logs.drop([latest], r)
        r.replanned.append(latest)
        r.summary += f": drop the uncommitted offsets/{latest}; the batch is re-planned"
    return out


def _commits_behind(cp: Checkpoint, logs: Logs) -> list[Repair]:
    """Commit log more than one batch behind: lost commits of batches proven finished come
    back; from the first batch without proof, later offsets go (re-planned)."""
    offs, coms = logs.offs, logs.coms
    if not (offs and coms and max(offs) - max(coms) > 1):
        return []
    latest, done = max(offs), max(coms)
    r = Repair("commits-behind", f"commit log ends at {done}, offsets at {latest}")
    for n in range(done + 1, latest):
        if n in offs and n + 1 in offs and _finished(cp, n):
            e = cp.offsets_for(n + 1)
            r.edits.append(Edit("write", f"commits/{n}", _commit_bytes(e.watermark_ms if e and e.watermark_ms is not None else 0)))
            coms.add(n)
            continue
        later = [x for x in offs if x > n]
        logs.drop(later, r)
        r.replanned += later
        break
    r.rerun.append(max(offs))
    r.summary += f": restore the lost commits of finished batches, re-plan the rest; batch {max(offs)} re-runs"
    return [r]


def _state_version(cp: Checkpoint, logs: Logs) -> list[Repair]:
    """State version C+1 missing for the last committed batch C: roll back to the latest batch
    whose state is in every partition of its layout (after an offline repartition the new one)."""
    offs, coms = logs.offs, logs.coms
    if not (cp.state and coms):
        return []
    done = max(coms)
    empty = any(not op.partitions for op in cp.state)
    every = [set(cp.state_versions(op)) for op in cp.state]
    if not empty and all(done + 1 in vs for vs in every):
        return []
    good = [] if empty else [b for b in sorted(coms) if b < done and all(b + 1 in vs for vs in every)]
    r = Repair("state-version-missing", f"state version {done + 1} is missing")
    if not good:
        r.summary += ": no earlier committed batch has its state in every partition — start a new checkpoint"
        r.note = "unrecoverable"
        return [r]
    b = good[-1]
    for x in sorted(c for c in coms if c > b):
        r.edits.append(Edit("delete", f"commits/{x}"))
        coms.discard(x)
    # a repartition batch left uncommitted is refused on restart, not re-run: re-plan it
    again = b + 1 in {x.batch_id for x in find_repartitions(cp.offsets)}
    later = [x for x in offs if x > b + (0 if again else 1)]
    logs.drop(later, r)
    if not again:
        r.rerun.append(b + 1)
    r.replanned += later
    r.summary += f": roll back to batch {b} (state version {b + 1} everywhere); " + (
        f"the offline repartition of batch {b + 1} is undone and later batches are re-planned" if again
        else f"batch {b + 1} re-runs, later batches are re-planned")
    return [r]
