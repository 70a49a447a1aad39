"""A query's chart history: a bounded ring of :class:`Sample` records stored column-wise.

A :class:`Sample` as a tuple of Python numbers costs ~560 bytes (the tuple, its ``durations``
tuple and a boxed int or float per field; more once the allocator fragments under a steady
flood of progress events); :class:`SampleHistory` keeps the same numbers in two flat machine
arrays, 152 bytes a sample, and builds ``Sample`` tuples only for what is read (the charts
read the newest few hundred). Pure Python, no textual.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple, overload

from streamwatch.model.progress import OffsetsBehindLatest

#: The phases of ``progress.durationMs`` charted as stacked batch duration (ms), in order.
OPERATIONS = ("addBatch", "getBatch", "latestOffset", "queryPlanning", "walCommit", "commitOffsets")


class Sample(NamedTuple):
    """One progress update, compact: ``timestamp_ms`` (epoch ms), rates in rows/s (None when
    Spark reported NaN), ``batch_duration_ms``, ``durations`` (ms, one per :data:`OPERATIONS`),
    ``watermark_gap_ms`` (eventTime.max − watermark, ms; None without a watermark), the
    batch's input/output row counts (-1 output when the sink cannot count) and the state
    operators' total rows and memory (bytes; None without state) and, for a query reading
    Kafka, its sources' offsets behind latest (records; None for other sources)."""

    batch_id: int
    timestamp_ms: int | None
    input_rps: float | None
    processed_rps: float | None
    batch_duration_ms: int
    durations: tuple[int, ...]
    watermark_gap_ms: int | None
    num_input_rows: int
    num_output_rows: int
    state_rows: int | None = None
    state_memory_bytes: int | None = None
    offsets_behind: OffsetsBehindLatest | None = None


#: an int field that is None (Spark's counters are Java longs: this one value is never a count)
_NONE = -(2**63)
_MAX = 2**63 - 1
_OPS = len(OPERATIONS)
#: int64 slots of a sample: batch id, timestamp, batch duration, the operations' durations,
#: watermark gap, input rows, output rows, state rows, state memory, offsets behind min and max
_INTS = 3 + _OPS + 7
#: float64 slots: input rate, processed rate, offsets behind avg (NaN is None)
_FLOATS = 3


def _int(v: int | None) -> int:
    """``v`` as an int64 slot: None as the sentinel, values past int64 clamped."""
    if v is None:
        return _NONE
    return _MAX if v > _MAX else (_NONE + 1 if v <= _NONE else v)


def _opt_int(v: int) -> int | None:
    return None if v == _NONE else v


def _float(v: float | None) -> float:
    return math.nan if v is None else v


def _opt_float(v: float) -> float | None:
    return None if v != v else v  # NaN is the one value not equal to itself


class SampleHistory(Sequence[Sample]):
    """The newest ``maxlen`` samples of one query, oldest first, stored in an int64 and a
    float64 :class:`array.array` (152 bytes a sample; the arrays grow to ``maxlen`` samples and
    then the oldest is overwritten in place). Reads return :class:`Sample` tuples equal to the
    ones appended, except: a NaN rate reads as None, and ints are clamped to int64 (Spark's
    counters are Java longs). ``history[-n:]`` builds only the ``n`` newest.

    Raises ValueError for ``maxlen`` < 1."""

    __slots__ = ("_maxlen", "_ints", "_floats", "_start", "_len")

    def __init__(self, maxlen: int, samples: Iterable[Sample] = ()) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be >= 1")
        self._maxlen = maxlen
        self._ints = array("q")
        self._floats = array("d")
        self._start = 0  # the oldest sample's slot once the ring is full
        self._len = 0
        for s in samples:
            self.append(s)

    @property
    def maxlen(self) -> int:
        """Samples kept at most (the oldest is dropped beyond)."""
        return self._maxlen

    @property
    def nbytes(self) -> int:
        """Bytes held by the two arrays' items."""
        return self._ints.itemsize * len(self._ints) + self._floats.itemsize * len(self._floats)

    def resized(self, maxlen: int) -> SampleHistory:
        """A history of ``maxlen`` holding this one's newest samples."""
        return SampleHistory(maxlen, self[-maxlen:])

    def append(self, s: Sample) -> None:
        """Add the newest sample, dropping the oldest when ``maxlen`` are held."""
        behind = s.offsets_behind
        ints = array("q", (
            _int(s.batch_id), _int(s.timestamp_ms), _int(s.batch_duration_ms), *map(_int, s.durations[:_OPS]),
            *(_NONE,) * (_OPS - len(s.durations)),
            _int(s.watermark_gap_ms), _int(s.num_input_rows), _int(s.num_output_rows), _int(s.state_rows),
            _int(s.state_memory_bytes), _int(None if behind is None else behind.min),
            _int(None if behind is None else behind.max),
        ))
        floats = array("d", (_float(s.input_rps), _float(s.processed_rps),
                             math.nan if behind is None else behind.avg))
        if self._len < self._maxlen:
            self._ints.extend(ints)
            self._floats.extend(floats)
            self._len += 1
        else:
            i = self._start
            self._ints[i * _INTS:(i + 1) * _INTS] = ints
            self._floats[i * _FLOATS:(i + 1) * _FLOATS] = floats
            self._start = (i + 1) % self._maxlen

    def _sample(self, slot: int) -> Sample:
        (batch_id, ts, duration, *rest) = self._ints[slot * _INTS:(slot + 1) * _INTS]
        ops = tuple(d for d in rest[:_OPS] if d != _NONE)
        gap, rows_in, rows_out, state_rows, state_mem, b_min, b_max = rest[_OPS:]
        in_rps, proc_rps, b_avg = self._floats[slot * _FLOATS:(slot + 1) * _FLOATS]
        return Sample(batch_id, _opt_int(ts), _opt_float(in_rps), _opt_float(proc_rps), duration, ops,
                      _opt_int(gap), rows_in, rows_out, _opt_int(state_rows), _opt_int(state_mem),
                      None if b_min == _NONE else OffsetsBehindLatest(b_min, b_avg, b_max))

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> Sample: ...

    @overload
    def __getitem__(self, index: slice) -> list[Sample]: ...

    def __getitem__(self, index: int | slice) -> Sample | list[Sample]:
        if isinstance(index, slice):
            return [self._sample((self._start + i) % self._maxlen) for i in range(*index.indices(self._len))]
        if index < 0:
            index += self._len
        if not 0 <= index < self._len:
            raise IndexError("sample index out of range")
        return self._sample((self._start + index) % self._maxlen)

    def __iter__(self) -> Iterator[Sample]:
        for i in range(self._len):
            yield self._sample((self._start + i) % self._maxlen)

    def __repr__(self) -> str:
        return f"SampleHistory(maxlen={self._maxlen}, len={self._len})"
