"""The per-partition loop every state table shares: rebuild each partition's store, keep the
entries of one column family (transformWithState variables, join state formats 3–4: keys
start with the family's 2-byte id from the snapshot zip's ``columnFamilyMapping``), decode
them (column-wise through :mod:`streamwatch.state.columnar` where a batch decoder is given,
else entry by entry), count the rows and the entries that do not decode, and stop decoding
at the row limit when rows are counted as entries.

Rows are yielded as they are decoded, in chunks of :data:`CHUNK` entries, so a caller that
writes them as they come holds one partition's store and one chunk of decoded rows, never the
whole table. What the loop saw (per-partition sizes, findings, totals) fills a
:class:`ScanStats` as the iteration goes.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from itertools import chain, islice, repeat
from typing import TYPE_CHECKING, Any

from streamwatch.model.findings import Finding
from streamwatch.model.statestore import StateOperator
from streamwatch.state import rocksdb
from streamwatch.state.model import BatchError, Column, PartitionSize, StateTable
from streamwatch.state.records import StateFileError
from streamwatch.state.stores import StateContext, store_folder
from streamwatch.state.unsaferow import RowError

if TYPE_CHECKING:  # numpy only where rows are decoded column-wise
    import numpy as np

    from streamwatch.state import hdfs
    from streamwatch.state.encoding import BatchDecoder
    from streamwatch.state.entries import Entries

CHUNK = 65_536
#: (key bytes, value bytes) → the output rows of one entry (without ``partition_id``)
EntryRows = Callable[[bytes, bytes], list[tuple[Any, ...]]]
#: (partition, store folder) → (key bytes → value bytes, or the same as Entries; the rebuild's Replay)
Loader = Callable[[int, str], "tuple[dict[bytes, bytes] | Entries, hdfs.Replay | rocksdb.Replay]"]
#: what a decoder raises for bytes that do not fit the schema
DECODE_ERRORS: tuple[type[Exception], ...] = (RowError, struct.error, ValueError, IndexError, OverflowError)


@dataclass(slots=True)
class ScanStats:
    """What :func:`scan_rows` saw, filled as it goes: ``sizes`` (one per partition),
    ``findings``, ``total`` rows (entries when counted as entries), ``bad`` entries that did
    not decode, ``shown`` rows yielded."""

    sizes: list[PartitionSize] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    total: int = 0
    bad: int = 0
    shown: int = 0


@dataclass(frozen=True, slots=True)
class ScanSpec:
    """How to read one table: ``folder_store`` the store folder under each partition
    (``default``, ``left-keyToNumValues``…), ``size_label`` the store/variable named in each
    :class:`PartitionSize`, ``family`` the virtual column family whose entries to keep (None:
    every entry), ``entry_rows`` the per-entry decoder (raising one of ``errors`` for bytes
    that do not fit), ``batch`` the column-wise decoder of the same rows (None: entry by
    entry), ``count_entries`` (rows = entries, decoding stops at the limit; else every entry
    is decoded and its rows counted), ``label`` prefixed to a row error ("left-keyWithTsToValues
    "), ``bad_message`` the summary of ``n`` undecodable entries, ``unmapped_variable``: a
    partition whose mapping lacks the family is ``state-variable-unmapped`` (a transformWithState
    variable), else ``state-store-unreadable``; ``empty_unmapped_ok`` (an empty store
    without the family is 0 rows, not a finding)."""

    folder_store: str
    size_label: str
    entry_rows: EntryRows
    bad_message: Callable[[int], str]
    family: str | None = None
    batch: BatchDecoder | None = None
    count_entries: bool = False
    label: str = ""
    errors: tuple[type[Exception], ...] = DECODE_ERRORS
    unmapped_variable: bool = False
    empty_unmapped_ok: bool = False


@dataclass(frozen=True, slots=True)
class _Source:
    """The entries of one partition to decode, in order: from a ``dict`` (``keys``/``values``
    lists) or column-wise :class:`~streamwatch.state.entries.Entries`."""

    n: int
    keys: list[bytes] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)
    entries: Entries | None = None

    @classmethod
    def of(cls, raw: dict[bytes, bytes] | Entries, prefix: bytes | None, pad: int) -> _Source:
        """The entries of ``raw`` whose key starts with ``prefix`` (None: every entry), in a
        buffer with ``pad`` zero bytes past its end (what the column-wise decoder reads)."""
        if not isinstance(raw, dict):
            mine = (raw if prefix is None else raw.with_prefix(prefix)).padded(pad)
            return cls(len(mine), entries=mine)
        keys = list(raw) if prefix is None else [k for k in raw if k[:2] == prefix]
        return cls(len(keys), keys, [raw[k] for k in keys])

    def pairs(self, lo: int, hi: int) -> tuple[list[bytes], list[bytes]]:
        if self.entries is not None:
            return self.entries.pairs(lo, hi)
        return self.keys[lo:hi], self.values[lo:hi]

    def pair(self, i: int) -> tuple[bytes, bytes]:
        if self.entries is not None:
            return self.entries.key(i), self.entries.value(i)
        return self.keys[i], self.values[i]

    def decode(self, batch: BatchDecoder, lo: int, hi: int) -> tuple[list[list[Any]], np.ndarray]:
        if self.entries is not None:
            return batch.decode(self.entries, lo, hi)
        from streamwatch.state.entries import Entries

        return batch.decode(Entries.of_pairs(self.keys[lo:hi], self.values[lo:hi], batch.pad), 0, hi - lo)


def scan_rows(ctx: StateContext, op: StateOperator, partitions: list[int], spec: ScanSpec, load: Loader,
              limit: int | None, stats: ScanStats) -> Iterator[tuple[Any, ...]]:
    """The rows (``+ (partition_id,)``) of ``spec``'s table over ``partitions``, at most
    ``limit`` (None: all), as they are decoded (:func:`scan_chunks` flattened)."""
    return chain.from_iterable(scan_chunks(ctx, op, partitions, spec, load, limit, stats))


def scan_chunks(ctx: StateContext, op: StateOperator, partitions: list[int], spec: ScanSpec, load: Loader,
                limit: int | None, stats: ScanStats) -> Iterator[list[tuple[Any, ...]]]:
    """The rows (``+ (partition_id,)``) of ``spec``'s table over ``partitions``, at most
    ``limit`` (None: all), a list per chunk of up to :data:`CHUNK` entries, as they are
    decoded; ``stats`` is complete once the iterator is exhausted. A partition that cannot be
    rebuilt, lacks the column family, or holds entries that do not decode is a finding in
    ``stats``, never an exception."""
    op_folder = ctx.storage.join(ctx.root, "state", str(op.operator_id))
    for p in partitions:
        folder = store_folder(ctx, op, p, spec.folder_store)
        try:
            raw, rep = load(p, folder)
        except (StateFileError, OSError) as e:
            stats.sizes.append(PartitionSize(p, spec.size_label, error=str(e)))
            stats.findings.append(Finding("error", "state-store-unreadable", str(e), folder))
            continue
        except Exception as e:  # noqa: BLE001 - a corrupt store is a finding, never a traceback
            msg = " ".join(f"{folder}: unreadable ({type(e).__name__}: {e})".split())
            stats.sizes.append(PartitionSize(p, spec.size_label, error=msg))
            stats.findings.append(Finding("error", "state-store-unreadable", msg, folder))
            continue
        replayed = rep.changelogs if isinstance(rep, rocksdb.Replay) else rep.deltas
        prefix: bytes | None = None
        if spec.family is not None:
            # column families are RocksDB's: an HDFS-backed store has none
            mapping = dict(rep.cf_mapping) if isinstance(rep, rocksdb.Replay) else {}
            if spec.family not in mapping:
                if spec.empty_unmapped_ok and not raw:
                    stats.sizes.append(PartitionSize(p, spec.size_label, 0, rep.bytes, rep.snapshot, replayed))
                    continue
                msg = (f"partition {p}: no column family id for {spec.family!r} (the snapshot zip's columnFamilyMapping "
                       f"lists {', '.join(sorted(mapping)) or 'none'})")
                stats.sizes.append(PartitionSize(p, spec.size_label, error=msg))
                if spec.unmapped_variable:
                    stats.findings.append(Finding("error", "state-variable-unmapped", msg, folder))
                else:
                    stats.findings.append(Finding("error", "state-store-unreadable", msg, folder))
                continue
            prefix = int(mapping[spec.family]).to_bytes(2, "little", signed=True)
        src = _Source.of(raw, prefix, spec.batch.pad if spec.batch is not None else 0)
        n_rows = yield from _partition(spec, src, p, folder, limit, stats)
        if spec.count_entries:
            n_rows = src.n
        stats.total += n_rows
        stats.sizes.append(PartitionSize(p, spec.size_label, n_rows, rep.bytes, rep.snapshot, replayed))
    if stats.bad > 1:
        stats.findings.append(Finding("error", "state-row-undecodable", spec.bad_message(stats.bad), op_folder))


def _partition(spec: ScanSpec, src: _Source, p: int, folder: str, limit: int | None,
               stats: ScanStats) -> Generator[list[tuple[Any, ...]], None, int]:
    """Rows of one partition's entries, a list per chunk; returns the rows decoded (counting
    those past the limit unless ``spec.count_entries``). The column-wise decoder reads a chunk
    when it can; entries it flags (and whole chunks it cannot convert) go entry by entry."""
    n_rows = 0

    def bad(e: Exception) -> None:
        stats.bad += 1
        if stats.bad == 1:
            stats.findings.append(Finding("error", "state-row-undecodable", f"{spec.label}partition {p}: {e}", folder))

    lo = 0
    while lo < src.n:
        room = None if limit is None else limit - stats.shown
        if spec.count_entries and room is not None and room <= 0:
            return n_rows
        size = CHUNK if room is None or not spec.count_entries else min(CHUNK, room)
        hi = min(lo + size, src.n)
        chunk, lo = range(lo, hi), hi
        fast = _fast_rows(spec, src, chunk, p, room) if spec.batch is not None else None
        if fast is not None and fast[1] is None:
            out = fast[0]
            n_rows += len(chunk)
            stats.shown += len(out)
            yield out
            continue
        if fast is not None:
            assert fast[1] is not None
            todo: Iterator[tuple[int, tuple[Any, ...] | None]] = zip(chunk, fast[1], strict=True)
            keys: list[bytes] = []
            values: list[bytes] = []
        else:
            todo = zip(chunk, repeat(None))
            keys, values = src.pairs(chunk.start, chunk.stop)
        out = []
        for i, row in todo:
            if fast is None and spec.count_entries and limit is not None and stats.shown >= limit:
                break
            if row is not None:
                rows = [row]
            else:
                k, v = src.pair(i) if fast is not None else (keys[i - chunk.start], values[i - chunk.start])
                try:
                    rows = [r + (p,) for r in spec.entry_rows(k, v)]
                except spec.errors as e:
                    bad(e)
                    continue
            n_rows += len(rows)
            for r in rows:
                if limit is None or stats.shown < limit:
                    stats.shown += 1
                    out.append(r)
        yield out
    return n_rows


def _fast_rows(spec: ScanSpec, src: _Source, chunk: range, p: int,
               room: int | None) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...] | None] | None] | None:
    """The rows of ``chunk`` decoded column-wise: (rows up to ``room``, None) when every entry
    decoded, else ([], one row or None per entry: None for an entry left to
    ``spec.entry_rows``); None when the chunk cannot be converted column-wise."""
    assert spec.batch is not None
    # a chunk allocates a container or more per row and frees none: the collector's passes over
    # them while it is built find nothing to free (they are a third of the decoding time)
    enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            cols, ok = src.decode(spec.batch, chunk.start, chunk.stop)
        except BatchError:
            return None
        rows_iter = zip(*cols, repeat(p))
        if ok.all():
            take = len(chunk) if room is None else max(0, min(room, len(chunk)))
            return (list(rows_iter) if take == len(chunk) else list(islice(rows_iter, take))), None
        return [], [row if good else None for row, good in zip(rows_iter, ok.tolist(), strict=True)]
    finally:
        if enabled:
            gc.enable()


@dataclass(slots=True)
class StateStream:
    """One state table whose rows are decoded as ``rows`` is iterated (once): the fields of
    :class:`~streamwatch.state.model.StateTable` but ``rows``, whose ``total_rows``,
    ``partitions`` and ``findings`` are in ``stats`` once ``rows`` is exhausted."""

    operator_id: int
    operator_name: str | None
    store: str
    provider: str
    encoding: str
    batch_id: int
    version: int
    columns: tuple[Column, ...]
    rows: Iterator[tuple[Any, ...]]
    stats: ScanStats
    variable: str | None = None

    def table(self) -> StateTable:
        """The whole table (every row iterated into memory)."""
        rows = tuple(self.rows)
        s = self.stats
        return StateTable(self.operator_id, self.operator_name, self.store, self.provider, self.encoding, self.batch_id,
                          self.version, self.columns, rows, s.total, tuple(s.sizes), tuple(s.findings),
                          variable=self.variable)
