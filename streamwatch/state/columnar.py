"""Decode many UnsafeRows of one schema at once, column by column, with numpy: the fast path
of :mod:`streamwatch.state.unsaferow` (same layout, same Python values) for the types whose
slots decode column-wise.

The rows' bytes are joined into one buffer; each row's null bitset and fixed-width slots are
gathered into an ``(rows, words + fields)`` int64 matrix, so one column is one matrix column:
longs as they are, ints/shorts/bytes/floats from their low bytes, booleans from the first
byte, doubles by reinterpreting the bits; timestamps, dates and compact decimals convert their
distinct values once. Variable-length values (strings, binaries) are sliced by their
``offset << 32 | size`` words; nested structs decode recursively from their offsets, and a
struct of fixed-width fields (a window) once per distinct value: rows with equal bytes there
share one dict (values are read, never mutated, downstream).

Supported: ``long``, ``integer``, ``short``, ``byte``, ``boolean``, ``double``, ``float``,
``timestamp``, ``timestamp_ntz``, ``date``, ``null``, ``decimal`` of precision ≤ 18,
``string``, ``binary`` and structs of these. :func:`compile_columns` returns None for any other
schema (arrays, maps, intervals, wide decimals…): the per-row decoder reads those.

A row whose bytes break the layout's rules (shorter than its slots, a variable-length value
pointing into the slots or past the row's end) is not decoded here: it is flagged, and the
per-row decoder (which raises :class:`~streamwatch.state.unsaferow.RowError` for it) has the
last word, so both paths agree on every input.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from operator import itemgetter
from typing import Any

import numpy as np

from streamwatch.state.model import BatchError
from streamwatch.state.types import DataType, StructType
from streamwatch.state.unsaferow import _DEC_CTX, EPOCH, EPOCH_DAY, EPOCH_NTZ, bitset_words

#: (buffer, row starts, row sizes, rows present) → (one value list per field, rows decoded)
ColumnsFn = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[list[list[Any]], np.ndarray]]

_FIXED = frozenset({"long", "integer", "short", "byte", "boolean", "double", "float", "timestamp",
                    "timestamp_ntz", "date", "null"})
_VAR = frozenset({"string", "binary"})
_LOW32 = np.int64(0xFFFFFFFF)



def supported(t: DataType) -> bool:
    """Whether values of type ``t`` decode column-wise."""
    if t.name in _FIXED or t.name in _VAR:
        return True
    if t.name == "decimal":
        return t.precision <= 18
    if t.name == "struct":
        return all(supported(f.type) for f in t.fields)
    return False


def _max_fixed(schema: StructType) -> int:
    n = len(schema.fields)
    own = (bitset_words(n) + n) * 8
    return max([own] + [_max_fixed(StructType(f.type.fields)) for f in schema.fields if f.type.name == "struct"])


def _distinct(values: np.ndarray, convert: Callable[[int], Any]) -> list[Any]:
    """``convert`` of each value, computed once per distinct value (windows, event times and
    dates repeat across rows)."""
    if len(values) == 0:
        return []
    uniq, inverse = np.unique(values, return_inverse=True)
    try:
        done = [convert(v) for v in uniq.tolist()]
    except (OverflowError, ValueError, ArithmeticError) as e:
        raise BatchError(str(e)) from None
    idx = inverse.ravel().tolist()
    if len(done) == 1:
        return done * len(idx)
    return list(itemgetter(*idx)(done)) if len(idx) > 1 else [done[idx[0]]]


def _converter(t: DataType) -> Callable[[np.ndarray], list[Any]]:
    """Slot column (int64) → Python values of fixed-width type ``t``."""
    n = t.name
    if n == "long":
        return lambda c: c.tolist()
    if n == "integer":
        return lambda c: c.astype(np.int32).tolist()
    if n == "short":
        return lambda c: c.astype(np.int16).tolist()
    if n == "byte":
        return lambda c: c.astype(np.int8).tolist()
    if n == "boolean":
        return lambda c: ((c & 0xFF) != 0).tolist()
    if n == "double":
        return lambda c: np.ascontiguousarray(c).view(np.float64).tolist()
    if n == "float":
        return lambda c: c.astype(np.uint32).view(np.float32).astype(np.float64).tolist()
    if n == "timestamp":
        return lambda c: _distinct(c, lambda v: EPOCH + dt.timedelta(microseconds=v))
    if n == "timestamp_ntz":
        return lambda c: _distinct(c, lambda v: EPOCH_NTZ + dt.timedelta(microseconds=v))
    if n == "date":
        return lambda c: _distinct(c.astype(np.int32), lambda v: EPOCH_DAY + dt.timedelta(days=v))
    if n == "decimal":
        scale = t.scale
        return lambda c: _distinct(c, lambda v: Decimal(v).scaleb(-scale, _DEC_CTX))
    return lambda c: [None] * len(c)  # null


def _gather(buf: np.ndarray, starts: np.ndarray, width: int) -> np.ndarray:
    """The ``width`` bytes at each start, as an ``(rows, width // 8)`` int64 matrix. Raises
    ``IndexError`` for a start whose ``width`` bytes run past the buffer."""
    words = width // 8
    if words == 0:
        return np.zeros((len(starts), 0), dtype=np.int64)
    # one row of a read-only (positions, width) view per start: a single gather of whole rows,
    # whatever each start's alignment (gathering 8-byte words from misaligned views, or from
    # an aligned copy of the buffer per alignment, is 10-50x slower)
    windows: np.ndarray = np.lib.stride_tricks.as_strided(buf, shape=(max(len(buf) - width + 1, 0), width),
                                                          strides=(buf.strides[0], buf.strides[0]), writeable=False)
    rows: np.ndarray = windows[starts]
    return rows.view("<i8").astype(np.int64, copy=False)


def _slices(buf: np.ndarray, at: np.ndarray, lengths: np.ndarray, binary: bool) -> list[Any]:
    """The byte ranges ``[at, at + lengths)`` of ``buf`` as ``bytes`` or UTF-8 text (invalid
    sequences replaced, as the per-row decoder does)."""
    n = len(at)
    total = int(lengths.sum())
    ends = np.cumsum(lengths)
    src = np.repeat(at - (ends - lengths), lengths) + np.arange(total, dtype=np.int64)
    data = buf[src]
    if n and not (data == 0).any():
        # no NUL inside any value: join them with one between and split the whole in one call
        joined = np.zeros(total + n - 1, dtype=np.uint8)
        joined[src - np.repeat(at, lengths) + np.repeat(ends - lengths + np.arange(n), lengths)] = data
        raw = joined.tobytes()
        if binary:
            return raw.split(b"\0")
        try:
            return raw.decode("utf-8").split("\0")
        except UnicodeDecodeError:
            pass
    blob = data.tobytes()
    lo = (ends - lengths).tolist()
    hi = ends.tolist()
    if binary:
        return [blob[a:b] for a, b in zip(lo, hi, strict=True)]
    return [blob[a:b].decode("utf-8", "replace") for a, b in zip(lo, hi, strict=True)]


def _struct_values(names: tuple[str, ...], cols: list[list[Any]]) -> list[Any]:
    # literal dicts for the common small structs (windows: start, end) are twice as fast
    if len(names) == 1:
        (a,) = names
        return [{a: x} for x in cols[0]]
    if len(names) == 2:
        a, b = names
        return [{a: x, b: y} for x, y in zip(*cols, strict=True)]
    if len(names) == 3:
        a, b, c = names
        return [{a: x, b: y, c: z} for x, y, z in zip(*cols, strict=True)]
    # a row's values are one per name by construction; strict= per row would cost speed
    return [dict(zip(names, vals)) for vals in zip(*cols, strict=True)]  # noqa: B905


@dataclass(frozen=True, slots=True)
class _Step:
    """How one field decodes: ``kind`` ``fixed`` (its slot column through ``convert``),
    ``string``/``binary`` (sliced by its slot's offset and size) or ``struct`` (``inner``
    decodes the nested rows, whose field ``names`` make each value's dict)."""

    kind: str
    convert: Callable[[np.ndarray], list[Any]] | None = None
    inner: ColumnsFn | None = None
    names: tuple[str, ...] = ()
    #: a struct whose fields are all fixed-width: the bytes of its bitset and slots (what its
    #: values depend on), else 0
    flat: int = 0


def _steps(schema: StructType) -> list[_Step]:
    out = []
    for f in schema.fields:
        t = f.type
        if t.name == "struct":
            inner = compile_columns(StructType(t.fields))
            assert inner is not None  # supported() held for every nested field
            flat = (bitset_words(len(t.fields)) + len(t.fields)) * 8 if all(x.type.name in _FIXED or x.type.name == "decimal"
                                                                         for x in t.fields) else 0
            out.append(_Step("struct", inner=inner, names=tuple(x.name for x in t.fields), flat=flat))
        elif t.name in _VAR:
            out.append(_Step(t.name))
        else:
            out.append(_Step("fixed", convert=_converter(t)))
    return out


def _null_columns(mat: np.ndarray, n: int, live: np.ndarray) -> list[np.ndarray]:
    """Per field, the rows (of those ``live``) whose null bit is set (bool arrays)."""
    nulls = []
    for i in range(n):
        word = mat[:, i // 64]
        nulls.append(((word >> np.int64(i % 64)) & 1).astype(bool) & live)
    return nulls


def _var_spans(steps: list[_Step], mat: np.ndarray, words: int, fixed: int, sizes: np.ndarray, live: np.ndarray,
               nulls: list[np.ndarray]) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """(field → (offset, length) of each row's variable-length value, the rows where one lies
    in the slots or past the row's end: left to the per-row decoder, which checks the same)."""
    var: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    bad = np.zeros(len(mat), dtype=bool)
    for i, step in enumerate(steps):
        if step.kind == "fixed":
            continue
        slot = mat[:, words + i]
        off = (slot >> np.int64(32)) & _LOW32
        length = slot & _LOW32
        used = live & ~nulls[i]
        bad |= used & ((off < fixed) | (off + length > sizes))
        var[i] = (off, length)
    return var, bad


def _struct_column(step: _Step, buf: np.ndarray, at: np.ndarray, lengths: np.ndarray,
                   used: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The values (dicts) of a struct field whose nested rows start at ``at`` and are
    ``lengths`` bytes long, and which of them decoded. A struct of fixed-width fields (a
    window: start, end) repeats across rows: its distinct nested rows are decoded once and rows
    with equal bytes share one (read-only) dict."""
    assert step.inner is not None
    if step.flat and len(at) > 1:
        # what a nested row's values depend on: its bitset and slots, its length, whether it is used
        mat = np.concatenate([_gather(buf, at, step.flat), lengths[:, None], used[:, None].astype(np.int64)], axis=1)
        coef = np.random.default_rng(0x5EED).integers(1, 1 << 63, size=mat.shape[1], dtype=np.uint64) | np.uint64(1)
        with np.errstate(over="ignore"):
            h = (mat.view(np.uint64) * coef).sum(axis=1, dtype=np.uint64)
        uniq, first, inverse = np.unique(h, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        # equal hashes of different bytes: every row decoded on its own below
        if len(uniq) < len(at) and (mat[first[inverse]] == mat).all():
            cols, inner_ok = step.inner(buf, at[first], lengths[first], used[first])
            done = _struct_values(step.names, cols)
            idx = inverse.tolist()
            shared = list(itemgetter(*idx)(done)) if len(done) > 1 else done * len(idx)
            return shared, inner_ok[inverse]
    cols, inner_ok = step.inner(buf, at, lengths, used)
    return _struct_values(step.names, cols), inner_ok


def compile_columns(schema: StructType) -> ColumnsFn | None:
    """The column-wise decoder of UnsafeRows of ``schema`` (None: a type it does not
    handle). It takes the buffer (uint8, padded past its last row with at least
    :func:`padding` zero bytes), each row's start and size (int64 arrays) and which rows to
    decode (bool array; others are skipped), and returns one list of values per field (values
    of skipped rows are placeholders) and a bool array: the rows decoded — False for a row
    present whose bytes break the layout (the per-row decoder raises its error). Raises
    :class:`BatchError` for a value it cannot convert."""
    if not all(supported(f.type) for f in schema.fields):
        return None
    n = len(schema.fields)
    words = bitset_words(n)
    fixed = (words + n) * 8
    steps = _steps(schema)

    def decode(buf: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
               present: np.ndarray) -> tuple[list[list[Any]], np.ndarray]:
        ok = sizes >= fixed
        live = present & ok
        # rows not decoded read the zero padding: every value there is in range
        at = np.where(live, starts, len(buf) - fixed)
        mat = _gather(buf, at, fixed) if len(starts) else np.zeros((0, words + n), dtype=np.int64)
        nulls = _null_columns(mat, n, live)
        var, bad = _var_spans(steps, mat, words, fixed, sizes, live, nulls)
        ok &= ~bad
        live &= ok
        out: list[list[Any]] = []
        for i, step in enumerate(steps):
            null = nulls[i]
            if step.convert is not None:
                # a null's slot (and a skipped row's) may hold anything: converted as 0
                col = step.convert(np.where(null | ~live, 0, mat[:, words + i]))
            else:
                off, length = var[i]
                used = live & ~null
                span_at, span_len = np.where(used, at + off, 0), np.where(used, length, 0)
                if step.inner is not None:
                    col, inner_ok = _struct_column(step, buf, span_at, span_len, used)
                    # a nested row that breaks the layout takes its row (and later fields) out
                    bad_inner = used & ~inner_ok
                    if bad_inner.any():
                        ok &= ~bad_inner
                        live &= ~bad_inner
                else:
                    col = _slices(buf, span_at, span_len, step.kind == "binary")
            if null.any():
                for r in np.flatnonzero(null).tolist():
                    col[r] = None
            out.append(col)
        return out, ok | ~present
    return decode


def padding(schema: StructType) -> int:
    """Zero bytes :func:`compile_columns`' decoder needs after the last row of its buffer."""
    return max(8, _max_fixed(schema))


def join_rows(blobs: Sequence[bytes], skip: Sequence[int] | np.ndarray | int, pad: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(buffer, starts, sizes) of ``blobs`` joined, each row starting ``skip`` bytes into its
    blob (a version byte, a column family id…), the buffer padded with ``pad`` zero bytes."""
    lens = np.fromiter(map(len, blobs), dtype=np.int64, count=len(blobs))
    ends = np.cumsum(lens)
    starts = ends - lens
    buf = np.frombuffer(b"".join(blobs) + bytes(pad), dtype=np.uint8)
    return buf, starts + skip, lens - skip


#: (buffer, row starts, row lengths) → (one value list per field, rows decoded)
SpansFn = Callable[[np.ndarray, np.ndarray, np.ndarray], tuple[list[list[Any]], np.ndarray]]
#: blobs → (one value list per field, rows decoded: False where the per-row decoder decides)
BatchFn = Callable[[Sequence[bytes]], tuple[list[list[Any]], np.ndarray]]


def compile_spans(schema: StructType, *, versioned: bool) -> SpansFn | None:
    """The column-wise decoder of byte ranges of one buffer (uint8, padded past its last range
    with :func:`padding` zero bytes), each one UnsafeRow of ``schema`` given by its start and
    length (int64 arrays); with ``versioned``, preceded by as many bytes — a version byte, a
    column family id — as its length exceeds a multiple of 8, up to 3, as
    :mod:`streamwatch.state.encoding` reads RocksDB keys and values. None when
    :func:`compile_columns` is. Raises :class:`BatchError`."""
    columns = compile_columns(schema)
    if columns is None:
        return None

    def decode(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> tuple[list[list[Any]], np.ndarray]:
        if not versioned:
            cols, ok = columns(buf, starts, lens, np.ones(len(starts), dtype=bool))
            return cols, ok
        skip = lens % 8
        present = skip <= 3
        skip = np.where(present, skip, 0)
        cols, ok = columns(buf, starts + skip, lens - skip, present)
        return cols, ok & present
    return decode


def compile_batch(schema: StructType, *, versioned: bool) -> BatchFn | None:
    """:func:`compile_spans` over whole blobs (each one UnsafeRow of ``schema``, as there)."""
    spans = compile_spans(schema, versioned=versioned)
    if spans is None:
        return None
    pad = padding(schema)

    def decode(blobs: Sequence[bytes]) -> tuple[list[list[Any]], np.ndarray]:
        buf, starts, sizes = join_rows(blobs, 0, pad)
        return spans(buf, starts, sizes)
    return decode
