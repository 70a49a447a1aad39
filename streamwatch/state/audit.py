"""State growth and eviction audit: is each state operator's state bounded (it levels off as
the watermark evicts) or growing (it rises with the input: a leak)? Plus skew across
partitions and the restart cost of each partition's store.

From the state files alone (no JVM): the store of every partition is rebuilt at up to
:data:`MAX_POINTS` recent versions (HDFS: the snapshot and deltas replayed incrementally;
RocksDB: zip + SSTs + changelogs), giving rows and bytes (key + value UnsafeRow bytes) per
version. Version ``V`` is the state after batch ``V - 1``.

Classification (per operator, rows summed over partitions):

- ``growing``: rows rise through the second half of the sampled versions at more than
  :data:`GROWTH_SHARE` of the first half's rate and the last point is above the first;
  the finding says so with the slope (rows/batch, bytes/batch) and a projection to
  :data:`PROJECTION_BYTES`; "no watermark" is added when the offsets log's
  ``batchWatermarkMs`` never moved;
- ``bounded``: otherwise, with at least :data:`MIN_POINTS` versions;
- ``unknown``: fewer versions than that.

With a recording or Spark event log of the query (``recording=``), the progress reports'
``numRowsTotal``/``numRowsRemoved`` per batch (:mod:`streamwatch.state.evidence`) decide
the verdict where they have one: rows that rise while ``numRowsRemoved`` stays ≈ 0 are
``growing`` (even with a watermark that advances), rows kept level by removals ``bounded``.

Restart cost mirrors ``HDFSBackedStateStoreProvider``/``RocksDB`` loading: the files replayed
since the partition's last snapshot (``.snapshot``/``.zip``); a partition lags when that count
exceeds ``spark.sql.streaming.stateStore.minDeltasForSnapshot`` (default 10).
"""

from __future__ import annotations

from dataclasses import dataclass

from streamwatch.model.findings import Finding
from streamwatch.state import hdfs, rocksdb
from streamwatch.state.evidence import MetricsEvidence, classify, progress_of, slope
from streamwatch.state.model import StateReadError
from streamwatch.state.reader import StateContext, open_context, provider_of, store_folder
from streamwatch.state.records import StateFileError

MAX_POINTS = 8
MIN_POINTS = 3
GROWTH_SHARE = 0.5
PROJECTION_BYTES = 10 * 1024**3
MIN_DELTAS_CONF = "spark.sql.streaming.stateStore.minDeltasForSnapshot"


@dataclass(frozen=True, slots=True)
class GrowthPoint:
    """The operator's state after ``batch_id``: ``rows`` and ``bytes`` (key + value bytes),
    summed over partitions and stores; ``largest_partition_rows`` for skew."""

    batch_id: int
    rows: int
    bytes: int
    largest_partition_rows: int = 0


@dataclass(frozen=True, slots=True)
class RestartCost:
    """One partition store at the latest version: ``snapshot`` version it loads from (None:
    none, everything is replayed), ``replay_files`` deltas/changelogs after it and their
    ``replay_bytes``; ``lagging`` when more than minDeltasForSnapshot."""

    partition: int
    store: str
    snapshot: int | None
    replay_files: int
    replay_bytes: int
    lagging: bool


@dataclass(frozen=True, slots=True)
class OperatorGrowth:
    """The audit of one state operator (see module docstring): ``verdict`` is ``bounded``,
    ``growing`` or ``unknown``; slopes in rows/batch and bytes/batch (least squares over
    ``points``); ``batches_to_projection`` until :data:`PROJECTION_BYTES` at that rate (None
    unless growing); ``skew_share`` the largest partition's share of rows at the last point."""

    operator_id: int
    name: str | None
    verdict: str
    points: tuple[GrowthPoint, ...]
    rows_per_batch: float
    bytes_per_batch: float
    batches_to_projection: int | None
    skew_share: float | None
    partitions: int
    restart: tuple[RestartCost, ...]
    watermark_moved: bool | None = None
    error: str | None = None
    path: str | None = None
    evidence: MetricsEvidence | None = None


def _size(rows: dict[bytes, bytes]) -> int:
    return sum(len(k) + len(v) for k, v in rows.items())


def _series(ctx: StateContext, folder: str, provider: str, versions: list[int]) -> dict[int, tuple[int, int]]:
    """version → (rows, bytes) of one store folder."""
    out: dict[int, tuple[int, int]] = {}
    if provider == "rocksdb":
        for v in versions:
            rows, _ = rocksdb.load(ctx.storage, folder, v, ctx.codec)
            out[v] = (len(rows), _size(rows))
        return out
    rows, _ = hdfs.load(ctx.storage, folder, versions[0], ctx.codec)
    out[versions[0]] = (len(rows), _size(rows))
    files = hdfs.list_files(ctx.storage, folder)
    last = versions[0]
    for v in versions[1:]:
        for step in range(last + 1, v + 1):
            cands = files.get((step, "delta"))
            if not cands:
                raise StateFileError(f"{folder}: {step}.delta is missing")
            hdfs.apply_file(ctx.storage, folder, cands[0][1], ctx.codec, rows)
        out[v] = (len(rows), _size(rows))
        last = v
    return out


def _restart(ctx: StateContext, folder: str, provider: str, partition: int, store: str, version: int, min_deltas: int) -> RestartCost:
    if provider == "rocksdb":
        files = rocksdb.list_files(ctx.storage, folder)
        snap_kind, log_kind = "zip", "changelog"
    else:
        files = hdfs.list_files(ctx.storage, folder)  # type: ignore[assignment]
        snap_kind, log_kind = "snapshot", "delta"
    snaps = [v for v, k in files if k == snap_kind and v <= version]
    snap = max(snaps) if snaps else None
    logs = [(v, files[(v, log_kind)]) for v in range((snap or 0) + 1, version + 1) if (v, log_kind) in files]
    size = sum(c[0][2] for _, c in logs)
    return RestartCost(partition, store, snap, len(logs), size, len(logs) > min_deltas)


def audit_operator(ctx: StateContext, op, watermarks: list[int], last_batch: int) -> OperatorGrowth:
    """The audit of one :class:`~streamwatch.model.statestore.StateOperator`."""
    provider = provider_of(op, ctx.conf)
    try:
        min_deltas = int(ctx.conf.get(MIN_DELTAS_CONF, "10"))
    except ValueError:
        min_deltas = 10
    latest = last_batch + 1
    present = [v for v in op.versions if v <= latest] or [latest]
    first_v = min(present)
    span = list(range(first_v, latest + 1))
    step = max(1, -(-len(span) // MAX_POINTS))
    versions = sorted(set(span[::-1][::step]))
    per_version: dict[int, dict[int, int]] = {v: {} for v in versions}
    bytes_v: dict[int, int] = {v: 0 for v in versions}
    restart: list[RestartCost] = []
    error = None
    for part in op.partitions:
        folder = store_folder(ctx, op, part.partition_id, part.store_name)
        try:
            series = _series(ctx, folder, provider, versions)
        except (StateFileError, OSError) as e:
            error = str(e)
            break
        except Exception as e:  # noqa: BLE001 - a corrupt store is a finding, never a traceback
            error = " ".join(f"{folder}: unreadable ({type(e).__name__}: {e})".split())
            break
        for v, (n, b) in series.items():
            per_version[v][part.partition_id] = per_version[v].get(part.partition_id, 0) + n
            bytes_v[v] += b
        restart.append(_restart(ctx, folder, provider, part.partition_id, part.store_name, latest, min_deltas))
    parts = len({p.partition_id for p in op.partitions})
    if error is not None:
        return OperatorGrowth(op.operator_id, op.name, "unknown", (), 0.0, 0.0, None, None, parts, tuple(restart),
                              error=error, path=op.path)
    points = tuple(GrowthPoint(v - 1, sum(per_version[v].values()), bytes_v[v], max(per_version[v].values(), default=0))
                   for v in versions)
    xs = [p.batch_id for p in points]
    rps = slope(xs, [p.rows for p in points])
    bps = slope(xs, [p.bytes for p in points])
    moved = len(set(watermarks)) > 1 or any(w > 0 for w in watermarks) if watermarks else None
    verdict = "unknown"
    if len(points) >= MIN_POINTS:
        half = len(points) // 2
        early = slope(xs[: half + 1], [p.rows for p in points[: half + 1]])
        late = slope(xs[half:], [p.rows for p in points[half:]])
        growing = points[-1].rows > points[0].rows and late > 0 and late >= GROWTH_SHARE * max(early, 0.0)
        verdict = "growing" if growing else "bounded"
    proj = None
    if verdict == "growing" and bps > 0:
        proj = max(0, int((PROJECTION_BYTES - points[-1].bytes) / bps))
    last = points[-1] if points else None
    skew = (last.largest_partition_rows / last.rows) if last and last.rows else None
    return OperatorGrowth(op.operator_id, op.name, verdict, points, rps, bps, proj, skew, parts, tuple(restart), moved,
                          path=op.path)


def with_evidence(a: OperatorGrowth, evidence: MetricsEvidence | None) -> OperatorGrowth:
    """``a`` with the progress reports' ``evidence``; its verdict replaces the files' one
    when it has one (see module docstring)."""
    from dataclasses import replace

    if evidence is None:
        return a
    verdict = evidence.verdict if evidence.verdict and a.error is None else a.verdict
    proj = a.batches_to_projection
    if verdict == "growing" and proj is None and a.bytes_per_batch > 0 and a.points:
        proj = max(0, int((PROJECTION_BYTES - a.points[-1].bytes) / a.bytes_per_batch))
    return replace(a, verdict=verdict, evidence=evidence, batches_to_projection=proj if verdict == "growing" else None)


def audit_state(path: str, storage_options: dict | None = None, *, recording: str | None = None,
                checkpoint=None) -> list[OperatorGrowth]:
    """The audit of every state operator of the checkpoint at ``path`` up to its last
    committed batch; ``recording``: a streamwatch recording (JSONL) or Spark event log of
    the query whose progress reports sharpen the verdict (reports of other queries are
    ignored). Raises :class:`StateReadError` when the checkpoint or the recording cannot
    be read; an operator whose files cannot be read has verdict ``unknown`` and ``error`` set.
    ``checkpoint``: the checkpoint at ``path`` already read (a summary read suffices), so it is
    not read twice."""
    cp, ctx = open_context(path, storage_options, checkpoint)
    if not cp.state or not cp.commit_batch_ids:
        return []
    reports = None
    if recording is not None:
        from streamwatch.events.reader import EventSourceError, read_events

        try:
            reports = progress_of(read_events(recording), cp.query_id)
        except (EventSourceError, OSError) as e:
            raise StateReadError(f"{recording}: {e}") from None
    watermarks = [o.watermark_ms for o in cp.offsets if o.watermark_ms is not None]
    out = []
    for op in cp.state:
        if not op.partitions:
            continue
        a = audit_operator(ctx, op, watermarks, cp.commit_batch_ids[-1])
        out.append(with_evidence(a, classify(op.operator_id, reports)) if reports else a)
    return out


def _gib(n: float) -> str:
    return f"{n / 1024**3:.1f} GiB" if n >= 1024**3 else f"{n / 1024**2:.1f} MiB" if n >= 1024**2 else f"{n / 1024:.1f} KiB"


def audit_findings(audits: list[OperatorGrowth]) -> list[Finding]:
    """Findings for ``streamwatch inspect``: ``state-growing`` (warning), ``state-bounded``
    (info), ``state-skew`` (warning: one partition holds more than half the rows, over 2
    partitions), ``state-snapshot-lag`` (warning), ``state-audit-unreadable`` (warning)."""
    out: list[Finding] = []
    for a in audits:
        where = a.path or f"state/{a.operator_id}"
        label = f"state operator {a.operator_id}{f' ({a.name})' if a.name else ''}"
        if a.error:
            out.append(Finding("warning", "state-audit-unreadable", f"{label}: growth not audited: {a.error}", where))
            continue
        if a.verdict == "growing":
            nowm = "; the watermark never advanced (no watermark?)" if a.watermark_moved is False else ""
            proj = (f"; at this rate it reaches {_gib(PROJECTION_BYTES)} in ~{a.batches_to_projection} batches"
                    if a.batches_to_projection is not None else "")
            span = (f"({a.points[0].rows} → {a.points[-1].rows} rows over batches {a.points[0].batch_id}–{a.points[-1].batch_id})"
                    if a.points else "")
            ev = f"; progress reports: {a.evidence.reason}" if a.evidence is not None and a.evidence.verdict else ""
            out.append(Finding("warning", "state-growing",
                               f"{label}: state grows {a.rows_per_batch:+.1f} rows/batch, {a.bytes_per_batch:+.0f} bytes/batch "
                               f"{span}{nowm if not ev else ''}{ev}{proj}", where))
        elif a.verdict == "bounded" and a.points:
            ev = f"; progress reports: {a.evidence.reason}" if a.evidence is not None and a.evidence.verdict else ""
            out.append(Finding("info", "state-bounded",
                               f"{label}: state is bounded ({a.points[-1].rows} rows, {a.rows_per_batch:+.1f} rows/batch over "
                               f"batches {a.points[0].batch_id}–{a.points[-1].batch_id}){ev}", where))
        if a.skew_share is not None and a.partitions > 2 and a.skew_share > 0.5 and a.points[-1].rows >= 100:
            out.append(Finding("warning", "state-skew",
                               f"{label}: one partition holds {a.skew_share:.0%} of {a.points[-1].rows} state rows", where))
        lag = [r for r in a.restart if r.lagging]
        if lag:
            worst = max(lag, key=lambda r: r.replay_files)
            out.append(Finding("warning", "state-snapshot-lag",
                               f"{label}: {len(lag)} partition store(s) replay more deltas than minDeltasForSnapshot on restart "
                               f"(worst: partition {worst.partition} {worst.store}, {worst.replay_files} files, "
                               f"{worst.replay_bytes} bytes since snapshot {worst.snapshot})", where))
    return out


__all__ = ["GrowthPoint", "OperatorGrowth", "RestartCost", "StateReadError", "audit_findings", "audit_operator", "audit_state"]


AUDIT_BUDGET_BYTES = 256 * 1024**2
#: Without measured sizes (``inspect`` without ``--sizes``) the budget is a file count, so a
#: production-sized checkpoint (tens of thousands of state files) keeps a fast summary.
AUDIT_BUDGET_FILES = 5_000


def with_audit_findings(cp, path: str, storage_options: dict | None = None):
    """``cp`` (a :class:`~streamwatch.model.checkpoint.Checkpoint`) with the audit's findings
    appended — the hook ``streamwatch inspect`` calls. Never raises: a failure is a
    ``state-audit-unreadable`` finding; state over :data:`AUDIT_BUDGET_BYTES` (or, sizes unmeasured, over
    :data:`AUDIT_BUDGET_FILES` files) is skipped
    with a ``state-audit-skipped`` info finding."""
    from dataclasses import replace

    if not any(op.partitions for op in cp.state):
        return cp
    sized = all(op.bytes is not None for op in cp.state)  # None: inspect did not measure sizes
    total = sum(op.bytes or 0 for op in cp.state)
    files = sum(p.files for op in cp.state for p in op.partitions)
    if (total > AUDIT_BUDGET_BYTES) if sized else (files > AUDIT_BUDGET_FILES):
        size = f"{_gib(total)} of state files" if sized else f"{files} state files"
        extra = [Finding("info", "state-audit-skipped",
                         f"state growth not audited: {size} (run `streamwatch state` on one operator)",
                         cp.state[0].path)]
    else:
        try:
            extra = audit_findings(audit_state(path, storage_options, checkpoint=cp))
        except Exception as e:  # noqa: BLE001 - the audit must never break inspect
            extra = [Finding("warning", "state-audit-unreadable",
                             " ".join(f"state growth not audited: {type(e).__name__}: {e}".split()), cp.state[0].path)]
    return replace(cp, findings=tuple(cp.findings) + tuple(extra)) if extra else cp
