"""Health findings that need the whole checkpoint: offsets vs commits, conf drift, watermark
progress, state versions vs the commit log, sink vs commits.

Each check takes model objects and returns findings; none reads files. Codes (stable, see
docs/inspect.md): ``in-flight-batch``, ``offsets-gap``, ``previous-offsets-missing``,
``commit-without-offsets``, ``commits-gap``, ``commits-behind``, ``no-commits``,
``conf-drift``, ``conf-not-recorded``, ``watermark-stalled``, ``state-version-missing``,
``state-orphan-versions``, ``sink-behind-commits``, ``source-log-behind-offsets``.
"""

from __future__ import annotations

from itertools import pairwise

from streamwatch.model.checkpoint import Checkpoint, OffsetLogEntry, Repartition, StatePartition
from streamwatch.model.findings import Finding, Severity

#: Confs Spark restores from the offsets log on restart (``OffsetSeqMetadata.relevantSQLConfs``);
#: a change between batches means the log no longer describes one query's physical plan.
RESTART_CONFS: dict[str, Severity] = {
    "spark.sql.shuffle.partitions": "error",
    "spark.sql.streaming.stateStore.providerClass": "error",
    "spark.sql.streaming.aggregation.stateFormatVersion": "error",
    "spark.sql.streaming.join.stateFormatVersion": "error",
    "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "error",
    "spark.sql.streaming.stateStore.encodingFormat": "error",
    "spark.sql.streaming.stateStore.rocksdb.formatVersion": "error",
    "spark.sql.streaming.stateStore.checkpointFormatVersion": "error",
    "spark.sql.streaming.stateStore.compression.codec": "warning",
    "spark.sql.streaming.multipleWatermarkPolicy": "warning",
    "spark.sql.streaming.statefulOperator.useStrictDistribution": "warning",
}
#: Batches without watermark progress before ``watermark-stalled`` is reported.
STALLED_BATCHES = 5


def _ranges(ids: list[int]) -> str:
    out: list[str] = []
    start: int | None = None
    prev: int | None = None
    for i in ids:
        if start is None:
            start = prev = i
        elif prev is not None and i == prev + 1:
            prev = i
        else:
            out.append(f"{start}" if start == prev else f"{start}–{prev}")
            start = prev = i
    if start is not None:
        out.append(f"{start}" if start == prev else f"{start}–{prev}")
    shown = ", ".join(out[:5])
    return shown + (f" (+{len(out) - 5} more ranges)" if len(out) > 5 else "")


def _gaps(ids: list[int]) -> str:
    """The ids missing between the first and last of sorted ``ids``, as :func:`_ranges` writes
    them (empty when none). O(len(ids)), whatever the ids' spread."""
    spans = [(a + 1, b - 1) for a, b in pairwise(ids) if b - a > 1]
    out = [f"{a}" if a == b else f"{a}–{b}" for a, b in spans]
    shown = ", ".join(out[:5])
    return shown + (f" (+{len(out) - 5} more ranges)" if len(out) > 5 else "")


def planned_batch(batch_id: int) -> str:
    """How a planned, uncommitted batch is said everywhere (inspector, ``watch``):
    ``batch 7 planned, not committed: Spark runs it again on restart (offsets/7 without commits/7)``."""
    return (f"batch {batch_id} planned, not committed: Spark runs it again on restart "
            f"(offsets/{batch_id} without commits/{batch_id})")


def log_findings(cp: Checkpoint, offsets_dir: str, commits_dir: str) -> list[Finding]:
    """Offsets vs commits (mirrors the checks in ``MicroBatchExecution.populateStartOffsets``
    and SPARK-38033)."""
    offs, commits = list(cp.offset_batch_ids), list(cp.commit_batch_ids)
    if not offs and not commits:
        return [Finding("info", "no-batches", "no batch planned yet (offsets/ is empty)", offsets_dir)]
    out = _offsets_log_findings(offs, offsets_dir) + _commit_log_findings(offs, commits, commits_dir)
    if offs:
        out += _restart_findings(cp, offs[-1], commits[-1] if commits else None, offsets_dir, commits_dir)
    return out


def _offsets_log_findings(offs: list[int], offsets_dir: str) -> list[Finding]:
    """``previous-offsets-missing`` and ``offsets-gap`` of the sorted offsets log ids ``offs``."""
    if not offs:
        return []
    out: list[Finding] = []
    latest = offs[-1]
    present = set(offs)
    missing = _gaps(sorted(present))
    if latest > 0 and (latest - 1) not in present:
        out.append(
            Finding(
                "error",
                "previous-offsets-missing",
                f"offsets/{latest - 1} is missing: Spark cannot restart from batch {latest} "
                f"(it needs the previous batch's offsets)",
                offsets_dir,
            )
        )
    if missing:
        out.append(Finding("warning", "offsets-gap", f"offsets log has gaps: batches {missing} missing", offsets_dir))
    return out


def _commit_log_findings(offs: list[int], commits: list[int], commits_dir: str) -> list[Finding]:
    """``commit-without-offsets`` (a commit of a batch the offsets log never had: not one
    purged before its first id) and ``commits-gap`` of the sorted commit log ids ``commits``."""
    if not commits:
        return []
    out: list[Finding] = []
    present_offs = set(offs)
    orphan = [b for b in commits if b not in present_offs and (not offs or b > offs[0])]
    if orphan:
        out.append(Finding("error", "commit-without-offsets", f"commits without offsets: batches {_ranges(orphan)}", commits_dir))
    gaps = _gaps(sorted(set(commits)))
    if gaps:
        out.append(Finding("warning", "commits-gap", f"commit log has gaps: batches {gaps} missing", commits_dir))
    return out


def _restart_findings(cp: Checkpoint, latest: int, done: int | None, offsets_dir: str, commits_dir: str) -> list[Finding]:
    """What a restart does given the latest offsets batch ``latest`` and the last commit
    ``done`` (None: none): no commits yet, a commit log ahead or more than one batch behind,
    or the batch in flight that re-runs."""
    out: list[Finding] = []
    if done is None:
        if latest > 0:  # batch 0 alone planned: the in-flight batch below says all there is
            out.append(Finding("warning", "no-commits", f"no batch has committed; batches up to {latest} were planned", commits_dir))
    elif done > latest:
        out.append(Finding("error", "commit-without-offsets", f"commit log ({done}) is ahead of the offsets log ({latest})", commits_dir))
    elif latest - done > 1:
        out.append(
            Finding(
                "error",
                "commits-behind",
                f"commit log ends at batch {done} but offsets at {latest}: more than one batch "
                f"without a commit (SPARK-38033; the restart may fail or re-run {latest - done} batches)",
                commits_dir,
            )
        )
    # an uncommitted offline-repartition batch is not run again but refused on restart
    # (spark4.repartition_findings says so: state-repartition-unfinished)
    repartition = done is not None and latest in {r.batch_id for r in cp.repartitions}
    if latest > (done if done is not None else -1) and not repartition:
        # what every stop in the middle of a batch leaves (StreamingQuery.stop() interrupts
        # it; a crash too): MicroBatchExecution.populateStartOffsets runs batch `latest` again
        # from offsets/`latest` on restart — nothing is lost, so not a warning
        out.append(
            Finding(
                "info",
                "in-flight-batch",
                planned_batch(latest),
                f"{offsets_dir}/{latest}" if "://" not in offsets_dir else offsets_dir,
            )
        )
    return out


def drift_finding(key: str, a: str, b: str, prev_id: int, batch_id: int, offsets_dir: str) -> Finding:
    """``conf-drift`` for ``key`` changing from ``a`` (batch ``prev_id``) to ``b`` (batch
    ``batch_id``), with the severity :data:`RESTART_CONFS` gives it."""
    return Finding(
        RESTART_CONFS.get(key, "warning"),
        "conf-drift",
        f"{key} changed from {a} to {b} between batch {prev_id} and {batch_id}; "
        f"state written under one value cannot be read under the other",
        f"{offsets_dir}/{batch_id}",
    )


def conf_findings(entries: tuple[OffsetLogEntry, ...], offsets_dir: str, repartitions: tuple[Repartition, ...] = ()) -> list[Finding]:
    """Conf drift between consecutive batches, and confs an old Spark did not record. The
    shuffle-partition change a batch in ``repartitions`` carries is not drift here: pass the
    repartitions that finished; :func:`streamwatch.checkpoint.spark4.repartition_findings`
    says the drift of one passed here that did not (the reader passes every batch the offsets
    log shows as a repartition — this check sees no commit log or state)."""
    out: list[Finding] = []
    seen: set[str] = set()
    rebatches = {r.batch_id for r in repartitions}
    prev: OffsetLogEntry | None = None
    for e in entries:
        if prev is not None and prev.conf and e.conf and prev.conf != e.conf:
            for key in RESTART_CONFS:
                a, b = prev.conf.get(key), e.conf.get(key)
                if key == "spark.sql.shuffle.partitions" and e.batch_id in rebatches:
                    continue
                if a != b and key not in seen and (a is not None and b is not None):
                    seen.add(key)
                    out.append(drift_finding(key, a, b, prev.batch_id, e.batch_id, offsets_dir))
        prev = e
    if entries:
        last = entries[-1]
        if "spark.sql.shuffle.partitions" not in last.conf:
            out.append(
                Finding(
                    "info",
                    "conf-not-recorded",
                    "the offsets log does not record spark.sql.shuffle.partitions (Spark ≤ 2.1): a stateful "
                    "query must restart with the same value it was started with (SPARK-19873)",
                    f"{offsets_dir}/{last.batch_id}",
                )
            )
    return out


def watermark_findings(cp: Checkpoint) -> list[Finding]:
    """``watermark-stalled`` when the query has a watermark (> 0 at some point) and the last
    :data:`STALLED_BATCHES` committed batches did not move it."""
    entries = [e for e in cp.offsets if e.watermark_ms is not None]
    if len(entries) <= STALLED_BATCHES:
        return []
    tail = entries[-(STALLED_BATCHES + 1) :]
    wms = {e.watermark_ms for e in tail}
    if len(wms) == 1 and tail[-1].watermark_ms and tail[-1].watermark_ms > 0:
        return [
            Finding(
                "warning",
                "watermark-stalled",
                f"watermark has not advanced over the last {STALLED_BATCHES} batches "
                f"(stuck at {tail[-1].watermark_ms} ms since batch {tail[0].batch_id}): no newer event time is arriving, "
                "so windows are not emitted and state is not evicted",
                None,
            )
        ]
    return []


def state_findings(cp: Checkpoint) -> list[Finding]:
    """Every partition must hold state version (last committed batch + 1); versions beyond
    (latest planned batch + 1) are orphans; versions of an uncommitted batch are re-written."""
    out: list[Finding] = []
    done = cp.last_committed_batch_id
    latest = cp.latest_batch_id
    for op in cp.state:
        label = f"state operator {op.operator_id}" + (f" ({op.name})" if op.name else "")
        if done is not None:
            need = done + 1
            n = cp.partitions_for_version(need)  # the layout after an offline repartition
            lacking = [p for p in op.partitions if need not in p.versions and (n is None or p.partition_id < n)]
            if n is not None:
                have = {p.partition_id for p in op.partitions}
                lacking += [StatePartition(i, "default") for i in range(n) if i not in have]
            if not op.partitions:
                out.append(Finding("error", "state-version-missing", f"{label} has no state store files, but batch {done} committed", op.path))
            elif lacking:
                where = ", ".join(f"{p.partition_id}/{p.store_name}" if p.store_name != "default" else str(p.partition_id) for p in lacking[:5])
                more = f" (+{len(lacking) - 5} more)" if len(lacking) > 5 else ""
                out.append(
                    Finding(
                        "error",
                        "state-version-missing",
                        f"{label}: state version {need} (after committed batch {done}) is missing in partition {where}{more}",
                        op.path,
                    )
                )
        limit = (latest if latest is not None else -1) + 1
        beyond = sorted({v for p in op.partitions for v in p.versions if v > limit})
        if beyond:
            out.append(
                Finding(
                    "warning",
                    "state-orphan-versions",
                    f"{label}: state versions {_ranges(beyond)} are beyond the latest planned batch {latest} (left from another run?)",
                    op.path,
                )
            )
        uncommitted = sorted({v for p in op.partitions for v in p.versions if done is not None and done + 1 < v <= limit})
        if uncommitted:
            out.append(
                Finding(
                    "info",
                    "state-uncommitted-version",
                    f"{label}: state version {_ranges(uncommitted)} was written by an uncommitted batch and will be rewritten on restart",
                    op.path,
                )
            )
    return out


def sink_source_findings(cp: Checkpoint) -> list[Finding]:
    """The file sink log must reach the last committed batch; a file source's offset must
    point at a batch its source log holds."""
    out: list[Finding] = []
    done = cp.last_committed_batch_id
    if cp.sink is not None and done is not None:
        last = cp.sink.latest_batch_id
        if last is None or last < done:
            out.append(
                Finding(
                    "error",
                    "sink-behind-commits",
                    f"file sink log ends at batch {last if last is not None else '-'} but batch {done} committed "
                    "(wrong sink folder, or sink metadata lost)",
                    cp.sink.path,
                )
            )
    latest = cp.latest_offsets
    if latest is not None:
        for i, p in enumerate(latest.parsed):
            if p is None or p.log_offset is None:
                continue
            sid = latest.source_id(i)  # the sources/<id>/ folder: a number, or a v2 source's name
            log = next((s for s in cp.sources if s.name == sid), None)
            if log is not None and (log.latest_batch_id is None or log.latest_batch_id < p.log_offset):
                out.append(
                    Finding(
                        "error",
                        "source-log-behind-offsets",
                        f"source {sid}'s offset is logOffset {p.log_offset} but sources/{sid}/ ends at {log.latest_batch_id}",
                        log.path,
                    )
                )
    return out
