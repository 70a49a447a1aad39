"""A store's entries as offsets into the decompressed bytes of its files: the same key → value
map :func:`streamwatch.state.records.apply_records` builds, without a ``bytes`` object per key
and value — what :mod:`streamwatch.state.columnar` decodes column-wise in place.

Record boundaries of a v1 body (``key length, key, value length, value`` big-endian, value
length −1 a delete, key length −1 the end: HDFS ``N.delta``/``N.snapshot``, RocksDB changelog
v1/v3) are found by one walk over the length words — or, where every record has the length of
the first (fixed-width keys and values), with numpy in one go. Replaying several files (last
write wins, deletes remove) groups equal keys by a 64-bit hash of their bytes, verified byte
for byte; the result keeps the order ``dict`` insertion gives (a key re-inserted after its
delete moves to the end), so rows come out as the per-record replay gives them. Anything
irregular (a length out of range, a truncated file, a hash shared by different keys) returns
None: the caller replays record by record, whose checks raise the error to report.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field

import numpy as np

from streamwatch.state.records import MAX_RECORD, apply_body, read_body

_INT = struct.Struct(">i")
#: keys × 8-byte words gathered at most to compare keys column-wise (else: record by record)
MAX_KEY_WORDS = 1 << 25
_MUL = np.uint64(0x9E3779B97F4A7C15)
_MIX = np.uint64(0xBF58476D1CE4E5B9)
#: records of one length in a row before :func:`_walk` checks the next ones at once
_GATE = 8


@dataclass(frozen=True, slots=True)
class Spans:
    """The records of one decompressed body: key start and length, value start and length
    (−1: a delete), byte offsets into the body (int64 arrays of one length)."""

    kstart: np.ndarray
    klen: np.ndarray
    vstart: np.ndarray
    vlen: np.ndarray


@dataclass(frozen=True, slots=True)
class Entries:
    """A store's live entries (insertion order) as byte ranges of ``buf`` (uint8, ending with
    ``pad`` zero bytes past every range): ``kstart``/``klen``, ``vstart``/``vlen`` int64 arrays."""

    buf: np.ndarray
    kstart: np.ndarray
    klen: np.ndarray
    vstart: np.ndarray
    vlen: np.ndarray
    pad: int

    def __len__(self) -> int:
        return len(self.kstart)

    def key(self, i: int) -> bytes:
        a = int(self.kstart[i])
        return self.buf[a:a + int(self.klen[i])].tobytes()

    def value(self, i: int) -> bytes:
        a = int(self.vstart[i])
        return self.buf[a:a + int(self.vlen[i])].tobytes()

    def pairs(self, lo: int, hi: int) -> tuple[list[bytes], list[bytes]]:
        """(keys, values) of entries ``lo``…``hi - 1`` as bytes."""
        if hi <= lo:
            return [], []
        ka, kn = self.kstart[lo:hi], self.klen[lo:hi]
        va, vn = self.vstart[lo:hi], self.vlen[lo:hi]
        base = int(min(ka.min(), va.min()))
        raw = self.buf[base:int(max((ka + kn).max(), (va + vn).max()))].tobytes()
        ks = [raw[a:a + n] for a, n in zip((ka - base).tolist(), kn.tolist(), strict=True)]
        vs = [raw[a:a + n] for a, n in zip((va - base).tolist(), vn.tolist(), strict=True)]
        return ks, vs

    def to_dict(self) -> dict[bytes, bytes]:
        """Key bytes → value bytes, as :func:`~streamwatch.state.records.apply_records` gives."""
        ks, vs = self.pairs(0, len(self))
        return dict(zip(ks, vs, strict=True))

    def padded(self, pad: int) -> Entries:
        """These entries in a buffer with at least ``pad`` zero bytes past its end."""
        if pad <= self.pad:
            return self
        buf = np.concatenate([self.buf, np.zeros(pad - self.pad, dtype=np.uint8)])
        return Entries(buf, self.kstart, self.klen, self.vstart, self.vlen, pad)

    def where(self, keep: np.ndarray) -> Entries:
        """The entries flagged in the bool array ``keep`` (same order)."""
        return Entries(self.buf, self.kstart[keep], self.klen[keep], self.vstart[keep], self.vlen[keep], self.pad)

    def with_prefix(self, prefix: bytes) -> Entries:
        """The entries whose key starts with the 2 bytes ``prefix`` (a virtual column family id)."""
        ks = self.kstart
        keep = (self.klen >= 2) & (self.buf[ks] == prefix[0]) & (self.buf[np.minimum(ks + 1, len(self.buf) - 1)] == prefix[1])
        return self.where(keep)

    @classmethod
    def of_pairs(cls, keys: list[bytes], values: list[bytes], pad: int) -> Entries:
        """Entries of ``keys``/``values`` (bytes, same length) joined into one buffer."""
        lens = np.fromiter(map(len, keys + values), dtype=np.int64, count=2 * len(keys))
        starts = np.cumsum(lens) - lens
        buf = np.frombuffer(b"".join(keys) + b"".join(values) + bytes(pad), dtype=np.uint8)
        n = len(keys)
        return cls(buf, starts[:n], lens[:n], starts[n:], lens[n:], pad)


def _be32(b: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The signed big-endian int32 at each offset ``at`` of ``b`` (int64)."""
    return b[at[:, None] + np.arange(4)].view(">i4")[:, 0].astype(np.int64)


def _fixed_stride(data: bytes, b: np.ndarray, pos: int) -> np.ndarray | None:
    """Record starts when every record has the first one's key and value lengths (and the
    terminator follows the last), else None."""
    if pos + 8 > len(data):
        return None
    (k,) = _INT.unpack_from(data, pos)
    if k < 0 or pos + 8 + k > len(data):
        return None
    (v,) = _INT.unpack_from(data, pos + 4 + k)
    if v < 0:
        return None
    stride = 8 + k + v
    n = (len(data) - pos - 4) // stride
    if n < 2 or _INT.unpack_from(data, pos + n * stride)[0] != -1:
        return None
    starts: np.ndarray = pos + np.arange(n, dtype=np.int64) * stride
    if (_be32(b, starts) != k).any() or (_be32(b, starts + 4 + k) != v).any():
        return None
    return starts


def _run(b: np.ndarray, pos: int, k: int, v: int, step: int, most: int) -> int:
    """How many records (at most ``most``) from ``pos`` on, one every ``step`` bytes, have key
    length ``k`` and value length ``v`` — the length words of each are checked, so each one
    ends where the next is checked."""
    room = len(b) - pos - 8 - k  # both length words of the last record checked lie in the body
    if room < 0:
        return 0
    at = pos + step * np.arange(min(most, room // step + 1), dtype=np.int64)
    same = (_be32(b, at) == k) & (_be32(b, at + 4 + k) == v)
    return len(at) if same.all() else int(np.argmin(same))


def _walk(data: bytes, pos: int) -> np.ndarray | None:
    """Record starts from ``pos`` to the −1 terminator (None: an irregular length or no end).
    One record at a time; after :data:`_GATE` records of one length in a row, the length words
    of the next ones at that stride are checked with numpy at once (records of one length come
    in runs: fixed-width values, keys of strings of one 8-byte-rounded length)."""
    unpack = _INT.unpack_from
    b = np.frombuffer(data, dtype=np.uint8)
    parts: list[np.ndarray] = []
    starts: list[int] = []
    append = starts.append
    last, same, gate, most = -1, 0, _GATE, 256
    try:
        while True:
            (k,) = unpack(data, pos)
            if k < 0:
                if k != -1:
                    return None
                parts.append(np.array(starts, dtype=np.int64))
                return np.concatenate(parts)
            (v,) = unpack(data, pos + 4 + k)
            append(pos)
            step = 8 + k + (v if v > 0 else 0)
            pos += step
            if step != last:
                last, same = step, 0
                continue
            same += 1
            if same < gate:
                continue
            n = _run(b, pos, k, v, step, most)
            if n:
                parts.append(np.array(starts, dtype=np.int64))
                parts.append(pos + step * np.arange(n, dtype=np.int64))
                starts = []
                append = starts.append
                pos += n * step
            # a long run: check further ahead next time; a short one: check less often
            gate, most = (_GATE, min(most * 2, 1 << 16)) if n == most else (min(gate * 2, 1 << 12), 256)
            same = 0
    except struct.error:  # a length word past the end: truncated
        return None


def split_v1(data: bytes, pos: int) -> Spans | None:
    """The records of a v1 body that starts at ``pos`` of ``data`` (module docstring); None when
    one is irregular (a length below −1 or above :data:`~streamwatch.state.records.MAX_RECORD`,
    a record past the end, no terminator)."""
    b = np.frombuffer(data, dtype=np.uint8)
    starts = _fixed_stride(data, b, pos)
    if starts is None:
        starts = _walk(data, pos)
        if starts is None:
            return None
    klen = _be32(b, starts) if len(starts) else np.zeros(0, dtype=np.int64)
    vat = starts + 4 + klen
    vlen = _be32(b, vat) if len(starts) else np.zeros(0, dtype=np.int64)
    if len(starts) and ((klen > MAX_RECORD).any() or (vlen < -1).any() or (vlen > MAX_RECORD).any()):
        return None
    return Spans(starts + 4, klen, vat + 4, vlen)


def _key_hashes(buf: np.ndarray, kstart: np.ndarray, klen: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(64-bit hash of each key's bytes, the keys as an (n, words) uint64 matrix, zero past each
    key's end); None when that matrix would exceed :data:`MAX_KEY_WORDS`. Equal keys hash
    equal; the caller verifies keys that share a hash byte for byte."""
    from streamwatch.state.columnar import _gather

    n = len(kstart)
    words = int((int(klen.max()) + 7) // 8) if n else 0
    if n * words > MAX_KEY_WORDS:
        return None
    if not words:
        return klen.astype(np.uint64), np.zeros((n, 0), dtype=np.uint64)
    mat = _gather(buf, kstart, words * 8).view(np.uint64)
    if (klen != words * 8).any():
        # bytes past a key's end belong to the next field or record: zeroed
        full = klen // 8
        mat[np.arange(words)[None, :] >= full[:, None]] = 0
        part = np.flatnonzero(klen % 8)
        if len(part):
            tail = klen[part] % 8
            keep = (np.uint64(1) << (8 * tail).astype(np.uint64)) - np.uint64(1)
            mat[part, full[part]] = _gather(buf, kstart[part] + 8 * full[part], 8).view(np.uint64)[:, 0] & keep
    rng = np.random.default_rng(0x5EED)
    coef = rng.integers(1, 1 << 63, size=words, dtype=np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        h = (mat * coef).sum(axis=1, dtype=np.uint64) + klen.astype(np.uint64) * _MUL
        h ^= h >> np.uint64(29)
        h *= _MIX
    return h, mat


def replay(bodies: list[bytes], spans: list[Spans], pad: int) -> Entries | None:
    """The entries left after applying the records of ``bodies`` (decompressed files, with
    their :func:`split_v1` spans) in order: puts set, deletes remove; None when keys cannot be
    compared column-wise (the caller replays record by record)."""
    offsets = np.cumsum([0] + [len(x) for x in bodies])[:-1]  # where each body starts in the joined buffer
    kstart = np.concatenate([s.kstart + o for s, o in zip(spans, offsets, strict=True)]) if spans else np.zeros(0, dtype=np.int64)
    klen = np.concatenate([s.klen for s in spans]) if spans else np.zeros(0, dtype=np.int64)
    vstart = np.concatenate([s.vstart + o for s, o in zip(spans, offsets, strict=True)]) if spans else np.zeros(0, dtype=np.int64)
    vlen = np.concatenate([s.vlen for s in spans]) if spans else np.zeros(0, dtype=np.int64)
    n = len(kstart)
    words = int((int(klen.max()) + 7) // 8) if n else 0
    if n * words > MAX_KEY_WORDS:
        return None
    tail = max(pad, words * 8 + 8)
    buf = np.frombuffer(b"".join(bodies) + bytes(tail), dtype=np.uint8)
    if n == 0:
        return Entries(buf, kstart, klen, vstart, vlen, tail)
    hashed = _key_hashes(buf, kstart, klen)
    if hashed is None:
        return None
    h, mat = hashed
    hs = np.sort(h)
    if (hs[1:] != hs[:-1]).all():  # every key once: drop the deletes, keep the file order
        keep = vlen >= 0
        return Entries(buf, kstart[keep], klen[keep], vstart[keep], vlen[keep], tail)
    order = np.argsort(h, kind="stable")  # equal keys together, in write order
    hs = h[order]
    first = np.ones(n, dtype=bool)
    first[1:] = hs[1:] != hs[:-1]
    group_start = np.flatnonzero(first)
    gid = np.cumsum(first) - 1
    head = order[group_start[gid]]
    if (klen[order] != klen[head]).any() or (mat[order] != mat[head]).any():
        return None  # a hash shared by different keys
    group_end = np.append(group_start[1:], n) - 1
    last = order[group_end]
    pos = np.arange(n)
    last_delete = np.maximum.reduceat(np.where(vlen[order] < 0, pos, -1), group_start)
    inserted = order[np.where(last_delete >= group_start, np.minimum(last_delete + 1, group_end), group_start)]
    live = vlen[last] >= 0
    last, inserted = last[live], inserted[live]
    at = last[np.argsort(inserted, kind="stable")]
    return Entries(buf, kstart[at], klen[at], vstart[at], vlen[at], tail)


@dataclass(slots=True)
class Replayer:
    """Applies a store's files in order (snapshot, then deltas or changelogs): column-wise
    while every body splits (:func:`split_v1`), else into a ``dict`` as
    :func:`~streamwatch.state.records.apply_records` does (raising its errors)."""

    bodies: list[bytes] = field(default_factory=list)
    spans: list[Spans] = field(default_factory=list)
    versions: list[tuple[int, int]] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    rows: dict[bytes, bytes] | None = None
    delimiter: bytes = b","

    def apply(self, raw: bytes, codec: str, name: str, *, changelog: bool = False) -> None:
        """Apply one file's compressed bytes. Raises :class:`~streamwatch.state.records.StateFileError`."""
        data, pos, version = read_body(io.BytesIO(raw), codec, name, changelog=changelog)
        if self.rows is None and version in (1, 3):
            spans = split_v1(data, pos)
            if spans is not None:
                self.bodies.append(data)
                self.spans.append(spans)
                self.versions.append((pos, version))
                self.names.append(name)
                return
        rows = self._as_dict()
        apply_body(data, pos, version, name, rows, delimiter=self.delimiter)

    def _as_dict(self) -> dict[bytes, bytes]:
        if self.rows is None:
            self.rows = {}
            for data, (pos, version), name in zip(self.bodies, self.versions, self.names, strict=True):
                apply_body(data, pos, version, name, self.rows, delimiter=self.delimiter)
            self.bodies, self.spans = [], []
        return self.rows

    def result(self, pad: int = 8) -> Entries | dict[bytes, bytes]:
        """The entries after every file applied: :class:`Entries` (buffer padded with ``pad``
        zero bytes) when every file split, else key bytes → value bytes."""
        if self.rows is None:
            out = replay(self.bodies, self.spans, pad)
            if out is not None:
                return out
        return self._as_dict()
