"""Spark 4.x checkpoint features that need more than one log: batches written by offline
state repartition (Spark 4.2) and checkpoint format v2's state unique ids.

* Repartition (``StreamingCheckpointManager.repartition(checkpoint, n)``, RocksDB only)
  writes ``offsets/N+1`` repeating the last committed batch N's source offsets, watermark and
  trigger time — it reads no input — with ``spark.sql.shuffle.partitions`` set to n, rewrites
  every stateful operator's state into n partitions as version N+2 (the state after batch
  N+1), then writes ``commits/N+1``. Spark recognises such a batch by its shuffle partitions
  differing from the previous batch's (``OfflineStateRepartitionUtils.isRepartitionBatch``);
  neither 4.2 nor 4.3 marks it otherwise (offsets v2's ``controlBatchInfo`` is copied from
  the committed batch, i.e. left empty). A repartition that failed part-way (an HDFS-backed
  store: ``StateRepartitionUnsupportedProviderError``; a crash) leaves ``offsets/N+1``
  without its commit, and on restart Spark 4.2+ refuses the query while the latest batch is
  such an uncommitted repartition batch (``STREAMING_UNFINISHED_REPARTITION_DETECTED``,
  ``spark.sql.streaming.checkUnfinishedRepartitionOnRestart``, default true).
* Checkpoint format v2 (``spark.sql.streaming.stateStore.checkpointFormatVersion=2``):
  ``commits/N`` is ``v2`` with ``stateUniqueIds`` (operator id → per partition → per store
  the unique id of state version N+1), and RocksDB writes ``<version>_<uniqueId>.zip`` /
  ``.changelog``; a restart from batch N loads exactly the files its commit names.

Codes: ``state-repartitioned`` (info), ``state-repartition-unfinished`` (error),
``state-file-missing`` (error), ``state-unreferenced-files`` (info),
``checkpoint-format-switch`` (info).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from streamwatch.checkpoint import health
from streamwatch.model.checkpoint import (
    Checkpoint,
    CommitLogEntry,
    OffsetLogEntry,
    Repartition,
    StateOperator,
    UniqueIdMatch,
)
from streamwatch.model.findings import Finding

SHUFFLE = "spark.sql.shuffle.partitions"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"


def _int(v: str | None) -> int | None:
    return int(v) if v is not None and v.isdecimal() else None


def find_repartitions(entries: tuple[OffsetLogEntry, ...]) -> tuple[Repartition, ...]:
    """Batches written by offline state repartition among consecutive parsed ``entries``:
    the shuffle partitions changed while the source offsets, watermark and trigger time are
    the previous batch's (a batch that ran a query always has a new trigger time). What the
    offsets log shows, finished or not: :func:`check_repartition` says which finished."""
    out = []
    for prev, e in pairwise(entries):
        if e.batch_id != prev.batch_id + 1:
            continue
        a, b = _int(prev.conf.get(SHUFFLE)), _int(e.conf.get(SHUFFLE))
        if a is None or b is None or a == b:
            continue
        if e.sources == prev.sources and e.timestamp_ms == prev.timestamp_ms and e.watermark_ms == prev.watermark_ms:
            out.append(Repartition(e.batch_id, a, b))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class RepartitionCheck:
    """Whether the repartition batch ``repartition`` finished, by the evidence Spark itself
    goes by: ``committed`` (``commits/<batch_id>`` exists — Spark writes it last, after the
    state), ``state_folders`` the state store folders that must hold state version
    ``batch_id + 1`` (every store of every operator in each of the ``to_partitions`` new
    partitions: a restart loads it in each), ``state_missing`` those that lack it as
    (operator id, partition id, store), ``later_commit`` when a later batch committed (Spark
    ran past the repartition, whatever state maintenance removed since). ``refused``: Spark
    4.2+ refuses to restart over it (it is the latest batch, uncommitted, and an earlier
    batch committed — ``MicroBatchExecution``'s unfinished-repartition check)."""

    repartition: Repartition
    committed: bool
    state_folders: int = 0
    state_missing: tuple[tuple[int, int, str], ...] = ()
    later_commit: bool = False
    refused: bool = False

    @property
    def done(self) -> bool:
        """Committed with its state in every new partition, or run past."""
        return self.later_commit or (self.committed and not self.state_missing)


def check_repartition(cp: Checkpoint, r: Repartition) -> RepartitionCheck:
    """:class:`RepartitionCheck` of ``r`` against ``cp``'s commit log and state folders."""
    commits = set(cp.commit_batch_ids) or {c.batch_id for c in cp.commits}
    version = r.batch_id + 1
    folders = 0
    missing: list[tuple[int, int, str]] = []
    for op in cp.state:
        stores = sorted({p.store_name for p in op.partitions}) or ["default"]
        have = {(p.partition_id, p.store_name) for p in op.partitions if version in p.versions}
        folders += r.to_partitions * len(stores)
        missing += [(op.operator_id, pid, s) for pid in range(r.to_partitions) for s in stores if (pid, s) not in have]
    last = max(commits) if commits else None
    refused = r.batch_id == cp.latest_batch_id and last is not None and last < r.batch_id
    return RepartitionCheck(r, r.batch_id in commits, folders, tuple(missing), last is not None and last > r.batch_id, refused)


def check_repartitions(cp: Checkpoint) -> tuple[RepartitionCheck, ...]:
    """:func:`check_repartition` of every repartition batch the offsets log shows."""
    return tuple(check_repartition(cp, r) for r in find_repartitions(cp.offsets))


def unfinished_repartition(cp: Checkpoint) -> RepartitionCheck | None:
    """The repartition batch Spark 4.2+ refuses to restart over (:attr:`RepartitionCheck.refused`),
    or None."""
    return next((c for c in check_repartitions(cp) if c.refused), None)


def provider_of(cp: Checkpoint, batch_id: int) -> str:
    """``hdfs``/``rocksdb``/``unknown``: the state store provider batch ``batch_id``
    recorded (``providerClass`` in its offsets), else the one the state files show."""
    e = cp.offsets_for(batch_id)
    cls = (e.conf.get(PROVIDER) if e is not None else None) or ""
    if cls:
        return "rocksdb" if "RocksDB" in cls else "hdfs" if "HDFSBacked" in cls else "unknown"
    kinds = {op.provider for op in cp.state} - {"unknown"}
    return kinds.pop() if len(kinds) == 1 else "unknown"


def _where(missing: tuple[tuple[int, int, str], ...]) -> str:
    shown = ", ".join(f"operator {o} partition {p}" + ("" if s == "default" else f"/{s}") for o, p, s in missing[:4])
    return shown + (f" (+{len(missing) - 4} more)" if len(missing) > 4 else "")


def _unfinished_text(c: RepartitionCheck) -> str:
    """What an unfinished repartition left and what Spark does over it on restart:
    ``offsets/7 was written with 3 shuffle partitions (was 2) but not commits/7; state
    version 8 is in none of the 3 new partition folders — on restart Spark 4.2+ refuses …``."""
    r = c.repartition
    n, v = r.batch_id, r.batch_id + 1
    if not c.state_folders:
        state = ""
    elif len(c.state_missing) >= c.state_folders:
        state = f"state version {v} is in none of the {r.to_partitions} new partition folders"
    elif c.state_missing:
        state = f"state version {v} is missing in {_where(c.state_missing)}"
    else:
        state = f"state version {v} is in all {r.to_partitions} new partition folders"
    if c.committed:
        left = f"commits/{n} was written but {state}"
    else:
        left = (f"offsets/{n} was written with {r.to_partitions} shuffle partitions (was {r.from_partitions}) but not "
                f"commits/{n}" + (f"; {state}" if state else ""))
    if c.refused:
        then = "on restart Spark 4.2+ refuses to start the query (STREAMING_UNFINISHED_REPARTITION_DETECTED)"
    elif c.committed:
        then = f"a restart loads state version {v} in all {r.to_partitions} partitions and fails where it is missing"
    else:
        then = "Spark never committed it"
    return f"{left} — {then}"


def repartition_findings(cp: Checkpoint, offsets_dir: str) -> list[Finding]:
    """Per repartition batch the offsets log shows: ``state-repartitioned`` (info) when it
    finished (:class:`RepartitionCheck`), else ``state-repartition-unfinished`` (error: what
    it left, what Spark does on restart, the way out) and, when uncommitted, the
    ``conf-drift`` of its shuffle partitions. The reader hands every such batch to
    :func:`health.conf_findings` as a repartition (that check sees the offsets log only), so
    an unfinished one's drift is said here, where the commit log and the state are known."""
    out: list[Finding] = []
    for c in check_repartitions(cp):
        r = c.repartition
        where = f"{offsets_dir}/{r.batch_id}"
        if c.done:
            out.append(Finding(
                "info", "state-repartitioned",
                f"batch {r.batch_id} was written by offline state repartition: shuffle partitions {r.from_partitions} → "
                f"{r.to_partitions}, state rewritten into {r.to_partitions} partitions as version {r.batch_id + 1}, "
                f"committed; it read no input, restarts use {r.to_partitions} partitions", where))
            continue
        if c.committed:
            way = "restore the missing state files, or roll back to an earlier batch (streamwatch recover)"
        elif provider_of(cp, r.batch_id) == "hdfs":
            way = (f"the state store is HDFS-backed, which offline repartition rejects (a retry fails again with "
                   f"STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER): remove offsets/{r.batch_id} "
                   f"(streamwatch recover) to restart on {r.from_partitions} partitions")
        else:
            way = (f"retry the repartition to {r.to_partitions} partitions until it finishes (Spark refuses another "
                   f"count while this one is unfinished), or remove offsets/{r.batch_id} (streamwatch recover) to "
                   f"restart on {r.from_partitions} partitions")
        what = "whose new state is incomplete" if c.committed else "that did not finish"
        out.append(Finding(
            "error", "state-repartition-unfinished",
            f"batch {r.batch_id} is an offline state repartition {what}: {_unfinished_text(c)}; {way}", where))
        # uncommitted, the state was never split: the partition change is drift again (a
        # committed one with state files gone is state-version-missing instead)
        if not c.committed and r in cp.repartitions:
            out.append(health.drift_finding(SHUFFLE, str(r.from_partitions), str(r.to_partitions), r.batch_id - 1, r.batch_id, offsets_dir))
    return out


@dataclass(frozen=True, slots=True)
class _StateFiles:
    """The v2 state files present: ``present`` (operator, partition) → {(version, unique id)}
    in any store of that partition, and ``lowest``, the lowest version each holds."""

    present: dict[tuple[int, int], set[tuple[int, str]]]
    lowest: dict[tuple[int, int], int]

    @classmethod
    def of(cls, cp: Checkpoint) -> _StateFiles:
        present: dict[tuple[int, int], set[tuple[int, str]]] = {}
        lowest: dict[tuple[int, int], int] = {}
        for op in cp.state:
            for p in op.partitions:
                key = (op.operator_id, p.partition_id)
                present.setdefault(key, set()).update(p.unique_ids)
                if p.versions:
                    lowest[key] = min(lowest.get(key, p.versions[0]), p.versions[0])
        return cls(present, lowest)


def match_unique_ids(cp: Checkpoint) -> tuple[tuple[UniqueIdMatch, ...], list[Finding]]:
    """Per committed batch whose commit carries ``stateUniqueIds``: the ids matched to the
    state files present (per operator and partition, any store of that partition); findings
    for a named file that is missing (``state-file-missing``, error) and for v2 state files
    within the retained commits' versions that no commit names (``state-unreferenced-files``,
    info: a retried task's or an aborted attempt's files, removed by maintenance)."""
    ops = {op.operator_id: op for op in cp.state}
    files = _StateFiles.of(cp)
    referenced: set[tuple[int, int, int, str]] = set()
    matches = tuple(_match_commit(c, ops, files, referenced) for c in cp.commits if c.state_unique_ids)
    # (operator, partition, version, unique id) of every named file missing, in commit order
    missing_all = [(o, p, m.batch_id + 1, u) for m in matches for o, p, u in m.missing]
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
    findings += _unreferenced_findings(cp, ops, files, referenced)
    return matches, findings


def _match_commit(c: CommitLogEntry, ops: dict[int, StateOperator], files: _StateFiles,
                  referenced: set[tuple[int, int, int, str]]) -> UniqueIdMatch:
    """The unique ids commit ``c`` names for state version ``c.batch_id + 1`` matched to
    ``files``; each named (operator, partition, version, id) is added to ``referenced``. A
    named file counts as missing when its operator is on disk and its partition keeps that
    version (not below the lowest it holds: older ones are purged, not lost)."""
    version = c.batch_id + 1
    named = found = 0
    missing: list[tuple[int, int, str]] = []
    checked = False
    for op_key, parts in (c.state_unique_ids or {}).items():
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
                if (version, uid) in files.present.get(key, ()):
                    found += 1
                    checked = True
                elif op_id in ops and version >= files.lowest.get(key, version + 1):
                    missing.append((op_id, pid, uid))
                    checked = True
    return UniqueIdMatch(c.batch_id, named, found, tuple(missing), checked)


def _unreferenced_findings(cp: Checkpoint, ops: dict[int, StateOperator], files: _StateFiles,
                           referenced: set[tuple[int, int, int, str]]) -> list[Finding]:
    """``state-unreferenced-files`` when v2 state files of the versions the retained commits
    span are named by none of them."""
    v2_commits = [c for c in cp.commits if c.state_unique_ids]
    if not v2_commits:
        return []
    lo, hi = v2_commits[0].batch_id + 1, v2_commits[-1].batch_id + 1
    stray = sorted(
        (o, p, v, u)
        for (o, p), present in files.present.items()
        for v, u in present
        if lo <= v <= hi and (o, p, v, u) not in referenced
    )
    if not stray:
        return []
    shown = ", ".join(f"operator {o} partition {p} version {v} ({u})" for o, p, v, u in stray[:3])
    more = f" (+{len(stray) - 3} more)" if len(stray) > 3 else ""
    return [Finding(
        "info", "state-unreferenced-files",
        f"{len(stray)} state file(s) of versions {lo}–{hi} are named by no retained commit: {shown}{more} "
        "(a retried task's or an aborted batch's; Spark never loads them and maintenance removes them)",
        ops[stray[0][0]].path if stray[0][0] in ops else None)]


def format_switch_findings(cp: Checkpoint, commits_dir: str) -> list[Finding]:
    """``checkpoint-format-switch`` (info) where the state checkpoint format changes between
    two commits: from 1 to 2 (state files from then on carry unique ids) or back. A commit log
    v3 (sink names) carries either format, so the format is the commit's own
    (``CommitLogEntry.checkpoint_format``), not its log version."""
    out = []
    for prev, c in pairwise(cp.commits):
        if prev.checkpoint_format != c.checkpoint_format:
            out.append(Finding(
                "info", "checkpoint-format-switch",
                f"the state checkpoint format switches from v{prev.checkpoint_format} to v{c.checkpoint_format} "
                f"at batch {c.batch_id} (commit log v{prev.version} → v{c.version}): "
                + (f"state files from version {c.batch_id + 1} on carry unique ids (checkpoint format v2)"
                   if c.checkpoint_format == 2 else f"state files from version {c.batch_id + 1} on are plain N.zip/N.changelog (format v1)"),
                f"{commits_dir}/{c.batch_id}"))
    return out
