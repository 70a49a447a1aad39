"""State growth and eviction audit: is each state operator's state bounded (it levels off as
the watermark evicts) or growing (it rises with the input: a leak)? Plus skew across
partitions and the restart cost of each partition's store.

From the state files alone (no JVM): the store of every partition is rebuilt at up to
:data:`MAX_POINTS` recent versions (HDFS: the snapshot and deltas replayed incrementally;
RocksDB: zip + SSTs + changelogs), giving rows and bytes (key + value UnsafeRow bytes) per
version. Version ``V`` is the state after batch ``V - 1``. Rows are counted as Spark's
``numRowsTotal`` counts them: every entry of a store, except for a stream-stream join, whose
rows are the input rows both sides buffer (:mod:`streamwatch.state.join`: the
``keyWithIndexToValue`` entries, or format 4's ``keyWithTsToValues`` ones — not the
``keyToNumValues``/``tsWithKey`` indexes beside them, whose bytes still count).

Classification (per operator, rows summed over partitions):

- ``growing``: rows rise through the second half of the sampled versions at more than
  :data:`GROWTH_SHARE` of the first half's rate, the last point is above the first, and
  (as :mod:`~streamwatch.state.evidence` judges ``numRowsRemoved``) the entries gone between
  sampled versions are at most :data:`~streamwatch.state.evidence.REMOVED_SHARE` of those
  added — state that evicts while it rises is warming up, or caught at a peak;
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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streamwatch.state import hdfs, join, rocksdb, tws_reader
from streamwatch.state.evidence import REMOVED_SHARE, MetricsEvidence, classify, progress_of, slope
from streamwatch.state.model import StateReadError
from streamwatch.state.reader import open_context
from streamwatch.state.records import StateFileError
from streamwatch.state.stores import StateContext, provider_of, store_folder

if TYPE_CHECKING:
    from streamwatch.model.checkpoint import Checkpoint
    from streamwatch.model.statestore import StateOperator

MAX_POINTS = 8
MIN_POINTS = 3
GROWTH_SHARE = 0.5
PROJECTION_BYTES = 10 * 1024**3
MIN_DELTAS_CONF = "spark.sql.streaming.stateStore.minDeltasForSnapshot"


@dataclass(frozen=True, slots=True)
class GrowthPoint:
    """The operator's state after ``batch_id``: ``rows`` and ``bytes`` (key + value bytes),
    summed over partitions and stores; ``largest_partition_rows`` for skew; ``removed`` the
    counted rows (their keys) present at the previous point and gone at this one — evictions
    (0 at the first point; not taken for transformWithState)."""

    batch_id: int
    rows: int
    bytes: int
    largest_partition_rows: int = 0
    removed: int = 0


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
    unless growing); ``skew_share`` the largest partition's share of rows at the last point;
    ``growing_parts`` the join sides (``left``/``right``) whose buffered rows grow."""

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
    growing_parts: tuple[str, ...] = ()


def _size(rows: dict[bytes, bytes]) -> int:
    return sum(len(k) + len(v) for k, v in rows.items())


#: (entries of a store at a version, its RocksDB column family mapping) → the rows Spark counts
Counter = Callable[[dict[bytes, bytes], tuple[tuple[str, int], ...]], int]
#: the same → the keys of those rows per part of the operator whose growth is judged on its own
#: (a join's ``left``/``right`` side; ``""``: the whole operator)
Parts = Callable[[dict[bytes, bytes], tuple[tuple[str, int], ...]], dict[str, set[bytes]]]
#: one sampled version of one store folder: (bytes, part → (rows, removed))
Sample = tuple[int, dict[str, tuple[int, int]]]


class _Sampler:
    """Samples one store folder version after version: its bytes and, per part, its rows and
    ``removed`` — the keys present at the previous sampled version and gone at this one
    (evictions the files show; 0 at the first). ``parts`` picks the counted keys (default:
    every entry, one part ``""``); ``count`` instead counts rows and takes no removals."""

    def __init__(self, parts: Parts | None, count: Counter | None) -> None:
        self.parts, self.count = parts, count
        self.prev: dict[str, set[bytes]] = {}

    def __call__(self, rows: dict[bytes, bytes], mapping: tuple[tuple[str, int], ...]) -> Sample:
        if self.count is not None:
            return _size(rows), {"": (self.count(rows, mapping), 0)}
        keys = self.parts(rows, mapping) if self.parts is not None else {"": set(rows)}
        out = {}
        for part, now in keys.items():
            before = self.prev.get(part)
            out[part] = (len(now), len(before - now) if before is not None else 0)
        self.prev = keys
        return _size(rows), out


def _series(ctx: StateContext, folder: str, provider: str, versions: list[int],
            parts: Parts | None = None, count: Counter | None = None) -> dict[int, Sample]:
    """version → :data:`Sample` of one store folder (see :class:`_Sampler`)."""
    out: dict[int, Sample] = {}
    sample = _Sampler(parts, count)
    if provider == "rocksdb":
        for v in versions:
            rows, rep = rocksdb.load(ctx.storage, folder, v, ctx.codec)
            out[v] = sample(rows, rep.cf_mapping)
        return out
    rows, _ = hdfs.load(ctx.storage, folder, versions[0], ctx.codec)
    out[versions[0]] = sample(rows, ())
    files = hdfs.list_files(ctx.storage, folder)
    last = versions[0]
    for v in versions[1:]:
        for step in range(last + 1, v + 1):
            cands = files.get((step, "delta"))
            if not cands:
                raise StateFileError(f"{folder}: {step}.delta is missing")
            hdfs.apply_file(ctx.storage, folder, cands[0][1], ctx.codec, rows)
        out[v] = sample(rows, ())
        last = v
    return out


def _restart(ctx: StateContext, folder: str, provider: str, partition: int, store: str, version: int, min_deltas: int) -> RestartCost:
    if provider == "rocksdb":
        files = rocksdb.list_files(ctx.storage, folder)
        snap_kind, log_kind = "zip", "changelog"
    else:
        files = hdfs.list_files(ctx.storage, folder)
        snap_kind, log_kind = "snapshot", "delta"
    snaps = [v for v, k in files if k == snap_kind and v <= version]
    snap = max(snaps) if snaps else None
    logs = [(v, files[(v, log_kind)]) for v in range((snap or 0) + 1, version + 1) if (v, log_kind) in files]
    size = sum(c[0][2] for _, c in logs)
    return RestartCost(partition, store, snap, len(logs), size, len(logs) > min_deltas)


def _plan(op: StateOperator, store: str, folder: str) -> tuple[Parts | None, Counter | None]:
    """How one store of ``op`` counts toward ``numRowsTotal``: (parts, count) for
    :class:`_Sampler`."""
    if tws_reader.is_tws(op):
        # its deletes include timers that fired and TTL index entries, which say nothing of
        # whether its state is evicted: rows counted, no removals taken
        return None, tws_reader.count_rows
    if not join.is_join(op):
        return None, None
    if join.has_store_folders(op):
        # a side's rows are its keyWithIndexToValue entries; keyToNumValues adds bytes only
        side = store.split("-", 1)[0]
        return (lambda rows, mapping: {side: set(rows)}) if join.counts_rows(store) else (lambda rows, mapping: {}), None
    return (lambda rows, mapping: join.buffered_keys(rows, mapping, folder)), None


def _rises(xs: list[int], ys: list[int], removed: int) -> bool:
    """Whether a series of rows grows: it rises through its second half at more than
    :data:`GROWTH_SHARE` of the first half's rate and ends above its start, while (as
    :func:`~streamwatch.state.evidence.classify` judges numRowsRemoved) at most
    :data:`REMOVED_SHARE` of what came in was evicted — rows that rise while the files show
    evictions are a warm-up, or a sawtooth caught on a data batch, not a leak."""
    half = len(xs) // 2
    early = slope(xs[: half + 1], ys[: half + 1])
    late = slope(xs[half:], ys[half:])
    rising = ys[-1] > ys[0] and late > 0 and late >= GROWTH_SHARE * max(early, 0.0)
    return rising and removed <= REMOVED_SHARE * (max(0, ys[-1] - ys[0]) + removed)


@dataclass(slots=True)
class _Collected:
    """What the partitions' samples add up to, per sampled version: ``rows`` per partition,
    ``bytes``; ``by_part`` per part (a join's side, or ``""`` for the whole operator):
    version → [rows, removed]; ``restart`` costs; ``error`` the first unreadable store."""

    rows: dict[int, dict[int, int]]
    bytes: dict[int, int]
    by_part: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    restart: list[RestartCost] = field(default_factory=list)
    error: str | None = None


def _min_deltas(ctx: StateContext) -> int:
    """``spark.sql.streaming.stateStore.minDeltasForSnapshot`` of the offsets conf (default 10)."""
    try:
        return int(ctx.conf.get(MIN_DELTAS_CONF, "10"))
    except ValueError:
        return 10


def _sampled(op: StateOperator, latest: int, cp: Checkpoint | None) -> list[int]:
    """Up to :data:`MAX_POINTS` versions evenly spread from the first present to ``latest``
    (which is always one)."""
    known = cp.state_versions(op) if cp is not None else op.versions
    present = [v for v in known if v <= latest] or [latest]
    span = list(range(min(present), latest + 1))
    step = max(1, -(-len(span) // MAX_POINTS))
    return sorted(set(span[::-1][::step]))


def _collect(ctx: StateContext, op: StateOperator, provider: str, versions: list[int], latest: int,
             layout: Callable[[int], int | None]) -> _Collected:
    """Every partition store of ``op`` sampled at ``versions`` (those its layout has), and its
    restart cost at ``latest``; stops at the first store that cannot be read."""
    acc = _Collected({v: {} for v in versions}, {v: 0 for v in versions})
    min_deltas = _min_deltas(ctx)
    for part in op.partitions:
        folder = store_folder(ctx, op, part.partition_id, part.store_name)
        mine = [v for v in versions if (n := layout(v)) is None or part.partition_id < n]
        if not mine:
            continue
        try:
            series = _series(ctx, folder, provider, mine, *_plan(op, part.store_name, folder))
        except (StateFileError, OSError) as e:
            acc.error = str(e)
            return acc
        except Exception as e:  # noqa: BLE001 - a corrupt store is a finding, never a traceback
            acc.error = " ".join(f"{folder}: unreadable ({type(e).__name__}: {e})".split())
            return acc
        for v, (b, counted) in series.items():
            acc.bytes[v] += b
            for name, (n, gone) in counted.items():
                acc.rows[v][part.partition_id] = acc.rows[v].get(part.partition_id, 0) + n
                rows_removed = acc.by_part.setdefault(name, {}).setdefault(v, [0, 0])
                rows_removed[0] += n
                rows_removed[1] += gone
        if (n := layout(latest)) is None or part.partition_id < n:
            acc.restart.append(_restart(ctx, folder, provider, part.partition_id, part.store_name, latest, min_deltas))
    return acc


def _growing_parts(xs: list[int], versions: list[int], by_part: dict[str, dict[int, list[int]]]) -> list[str]:
    """The parts whose rows grow (:func:`_rises`), each judged on its own: a join whose one
    side evicts must not hide the other's leak."""
    out = []
    for name, series in sorted(by_part.items()):
        ys = [series.get(v, [0, 0])[0] for v in versions]
        if _rises(xs, ys, sum(series.get(v, [0, 0])[1] for v in versions)):
            out.append(name)
    return out


def audit_operator(ctx: StateContext, op: StateOperator, watermarks: list[int], last_batch: int,
                   cp: Checkpoint | None = None) -> OperatorGrowth:
    """The audit of one :class:`~streamwatch.model.statestore.StateOperator`; ``cp`` (the
    checkpoint) gives the partition layout in effect for each version after an offline
    repartition — a version counts the partitions that existed for it, no others."""
    provider = provider_of(op, ctx.conf)
    latest = last_batch + 1
    layout: Callable[[int], int | None] = cp.partitions_for_version if cp is not None else (lambda _v: None)
    versions = _sampled(op, latest, cp)
    acc = _collect(ctx, op, provider, versions, latest, layout)
    parts = len({p.partition_id for p in op.partitions})
    if acc.error is not None:
        return OperatorGrowth(op.operator_id, op.name, "unknown", (), 0.0, 0.0, None, None, parts, tuple(acc.restart),
                              error=acc.error, path=op.path)
    removed_v = {v: sum(s.get(v, [0, 0])[1] for s in acc.by_part.values()) for v in versions}
    points = tuple(GrowthPoint(v - 1, sum(acc.rows[v].values()), acc.bytes[v], max(acc.rows[v].values(), default=0),
                               removed_v[v])
                   for v in versions)
    xs = [p.batch_id for p in points]
    rps = slope(xs, [p.rows for p in points])
    bps = slope(xs, [p.bytes for p in points])
    moved = len(set(watermarks)) > 1 or any(w > 0 for w in watermarks) if watermarks else None
    verdict = "unknown"
    growing_parts: list[str] = []
    if len(points) >= MIN_POINTS:
        growing_parts = _growing_parts(xs, versions, acc.by_part)
        verdict = "growing" if growing_parts else "bounded"
    proj = None
    if verdict == "growing" and bps > 0:
        proj = max(0, int((PROJECTION_BYTES - points[-1].bytes) / bps))
    last = points[-1] if points else None
    skew = (last.largest_partition_rows / last.rows) if last and last.rows else None
    return OperatorGrowth(op.operator_id, op.name, verdict, points, rps, bps, proj, skew, parts, tuple(acc.restart),
                          moved, path=op.path, growing_parts=tuple(p for p in growing_parts if p))


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
    return replace(a, verdict=verdict, evidence=evidence, batches_to_projection=proj if verdict == "growing" else None,
                   growing_parts=a.growing_parts if verdict == "growing" else ())


def audit_state(path: str, storage_options: dict[str, Any] | None = None, *, recording: str | None = None,
                checkpoint: Checkpoint | None = None) -> list[OperatorGrowth]:
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
        a = audit_operator(ctx, op, watermarks, cp.commit_batch_ids[-1], cp)
        out.append(with_evidence(a, classify(op.operator_id, reports)) if reports else a)
    return out


__all__ = ["GrowthPoint", "OperatorGrowth", "RestartCost", "StateReadError", "audit_operator", "audit_state"]
