"""Spark 4.x checkpoint features that need more than one log: batches written by offline
state repartition (Spark 4.2) and checkpoint format v2's state unique ids.

* Repartition (``StreamingCheckpointManager.repartition(checkpoint, n)``, RocksDB only)
  writes batch N+1 whose ``offsets/N+1`` repeats batch N's source offsets, watermark and
  trigger time — it reads no input — with ``spark.sql.shuffle.partitions`` set to n, commits
  it, and rewrites every stateful operator's state into n partitions as version N+2.
* Checkpoint format v2 (``spark.sql.streaming.stateStore.checkpointFormatVersion=2``):
  ``commits/N`` is ``v2`` with ``stateUniqueIds`` (operator id → per partition → per store
  the unique id of state version N+1), and RocksDB writes ``<version>_<uniqueId>.zip`` /
  ``.changelog``; a restart from batch N loads exactly the files its commit names.

Codes: ``state-repartitioned`` (info), ``state-file-missing`` (error),
``state-unreferenced-files`` (info), ``checkpoint-format-switch`` (info).
"""

from __future__ import annotations

from streamwatch.model.checkpoint import Checkpoint, OffsetLogEntry, Repartition, UniqueIdMatch
from streamwatch.model.findings import Finding

SHUFFLE = "spark.sql.shuffle.partitions"


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.isdecimal() else None


def find_repartitions(entries: tuple[OffsetLogEntry, ...]) -> tuple[Repartition, ...]:
    """Batches written by offline state repartition among consecutive parsed ``entries``:
    the shuffle partitions changed while the source offsets, watermark and trigger time are
    the previous batch's (a batch that ran a query always has a new trigger time)."""
    out = []
    for prev, e in zip(entries, entries[1:]):
        if e.batch_id != prev.batch_id + 1:
            continue
        a, b = _int(prev.conf.get(SHUFFLE)), _int(e.conf.get(SHUFFLE))
        if a is None or b is None or a == b:
            continue
        if e.sources == prev.sources and e.timestamp_ms == prev.timestamp_ms and e.watermark_ms == prev.watermark_ms:
            out.append(Repartition(e.batch_id, a, b))
    return tuple(out)


def repartition_findings(cp: Checkpoint, offsets_dir: str) -> list[Finding]:
    """One ``state-repartitioned`` info per repartition batch."""
    return [
        Finding(
            "info",
            "state-repartitioned",
            f"batch {r.batch_id} was written by offline state repartition: shuffle partitions {r.from_partitions} → "
            f"{r.to_partitions}, state rewritten as version {r.batch_id + 1}; it read no input, restarts use "
            f"{r.to_partitions} partitions",
            f"{offsets_dir}/{r.batch_id}",
        )
        for r in cp.repartitions
    ]


def match_unique_ids(cp: Checkpoint) -> tuple[tuple[UniqueIdMatch, ...], list[Finding]]:
    """Per committed batch whose commit carries ``stateUniqueIds``: the ids matched to the
    state files present (per operator and partition, any store of that partition); findings
    for a named file that is missing (``state-file-missing``, error) and for v2 state files
    within the retained commits' versions that no commit names (``state-unreferenced-files``,
    info: a retried task's or an aborted attempt's files, removed by maintenance)."""
    ops = {op.operator_id: op for op in cp.state}
    # (operator, partition) → {(version, unique id)} present, and the lowest version there
    present: dict[tuple[int, int], set[tuple[int, str]]] = {}
    lowest: dict[tuple[int, int], int] = {}
    for op in cp.state:
        for p in op.partitions:
            key = (op.operator_id, p.partition_id)
            present.setdefault(key, set()).update(p.unique_ids)
            if p.versions:
                lowest[key] = min(lowest.get(key, p.versions[0]), p.versions[0])
    matches: list[UniqueIdMatch] = []
    referenced: set[tuple[int, int, int, str]] = set()
    missing_all: list[tuple[int, int, int, str]] = []
    for c in cp.commits:
        if not c.state_unique_ids:
            continue
        version = c.batch_id + 1
        named = found = 0
        missing: list[tuple[int, int, str]] = []
        checked = False
        for op_key, parts in c.state_unique_ids.items():
            op_id = _int(str(op_key))
            if op_id is None or not isinstance(parts, list):
                continue
            for pid, stores in enumerate(parts):
                for uid in stores if isinstance(stores, list) else []:
                    if not isinstance(uid, str):
                        continue
                    named += 1
                    referenced.add((op_id, pid, version, uid))
                    key = (op_id, pid)
                    if (version, uid) in present.get(key, ()):
                        found += 1
                        checked = True
                    elif op_id in ops and version >= lowest.get(key, version + 1):
                        missing.append((op_id, pid, uid))
                        missing_all.append((op_id, pid, version, uid))
                        checked = True
        matches.append(UniqueIdMatch(c.batch_id, named, found, tuple(missing), checked))
    findings: list[Finding] = []
    if missing_all:
        shown = ", ".join(f"operator {o} partition {p} version {v} ({u})" for o, p, v, u in missing_all[:3])
        more = f" (+{len(missing_all) - 3} more)" if len(missing_all) > 3 else ""
        first = min(v for _, _, v, _ in missing_all) - 1
        findings.append(Finding(
            "error", "state-file-missing",
            f"{len(missing_all)} state file(s) named by the commit log are missing: {shown}{more} — a restart from "
            f"batch {first} or later cannot load its state (checkpoint format v2 loads exactly the named files)",
            ops[missing_all[0][0]].path if missing_all[0][0] in ops else None))
    v2_commits = [c for c in cp.commits if c.state_unique_ids]
    if v2_commits:
        lo, hi = v2_commits[0].batch_id + 1, v2_commits[-1].batch_id + 1
        stray = sorted(
            (o, p, v, u)
            for (o, p), files in present.items()
            for v, u in files
            if lo <= v <= hi and (o, p, v, u) not in referenced
        )
        if stray:
            shown = ", ".join(f"operator {o} partition {p} version {v} ({u})" for o, p, v, u in stray[:3])
            more = f" (+{len(stray) - 3} more)" if len(stray) > 3 else ""
            findings.append(Finding(
                "info", "state-unreferenced-files",
                f"{len(stray)} state file(s) of versions {lo}–{hi} are named by no retained commit: {shown}{more} "
                "(a retried task's or an aborted batch's; Spark never loads them and maintenance removes them)",
                ops[stray[0][0]].path if stray[0][0] in ops else None))
    return tuple(matches), findings


def format_switch_findings(cp: Checkpoint, commits_dir: str) -> list[Finding]:
    """``checkpoint-format-switch`` (info) where the commit log goes from v1 to v2 (state
    files from then on carry unique ids) or back."""
    out = []
    for prev, c in zip(cp.commits, cp.commits[1:]):
        if prev.version != c.version:
            out.append(Finding(
                "info", "checkpoint-format-switch",
                f"the commit log switches from v{prev.version} to v{c.version} at batch {c.batch_id}: "
                + ("state files from version %d on carry unique ids (checkpoint format v2)" % (c.batch_id + 1)
                   if c.version == 2 else "state files from version %d on are plain N.zip/N.changelog (format v1)" % (c.batch_id + 1)),
                f"{commits_dir}/{c.batch_id}"))
    return out
