"""Record streams of state store files, decompressed: HDFS-backed ``N.delta``/``N.snapshot``
and RocksDB ``N.changelog`` (versions 1–4).

Mirrors ``HDFSBackedStateStoreProvider`` (``writeUpdateToDeltaFile``/``writeRemoveToDeltaFile``/
``writeSnapshotFile``) and ``StateStoreChangelogWriterV1…V4``: a ``CompressionCodec`` stream
(lz4 by default, ``spark.sql.streaming.stateStore.compression.codec``) of big-endian
``DataOutputStream`` records:

- v1 (HDFS files, changelog v1): ``key length, key, value length, value``; value length −1 is
  a delete; key length −1 ends the file;
- changelog v2: ``writeUTF("v2")`` first, then records prefixed with a type byte (0x01 put,
  0x10 delete, 0x11 merge — a list-state append), a 0x00 byte ends the file;
- changelog v3/v4 (checkpoint format v2): as v1/v2 with ``writeUTF("v3"|"v4")`` and a
  ``writeUTF`` JSON lineage line (``[{"version":…, "checkpointUniqueId":…}]``) first.

Errors: :class:`StateFileError` (one line) for truncated or malformed files.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.events.codecs import UnsupportedCodec, decompressed

_INT = struct.Struct(">i")
PUT, DELETE, MERGE = "put", "delete", "merge"
_TYPES = {0x01: PUT, 0x10: DELETE, 0x11: MERGE}
MAX_RECORD = 1 << 30


class StateFileError(StreamwatchError, ValueError):
    """A state file that cannot be read to its end (message: one line, names the file;
    line breaks in a library's message are folded). Exit 4."""

    exit_code = ExitCode.UNREADABLE

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


@dataclass(frozen=True, slots=True)
class Record:
    """One change: ``op`` (``put``/``delete``/``merge``), ``key`` bytes, ``value`` bytes (None
    for a delete)."""

    op: str
    key: bytes
    value: bytes | None


class _Buf:
    """A cursor over the decompressed bytes of one file (reads are slices, not stream calls)."""

    __slots__ = ("data", "pos", "name")

    def __init__(self, data: bytes, name: str) -> None:
        self.data, self.pos, self.name = data, 0, name

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise StateFileError(f"{self.name}: truncated (wanted {n} bytes at {self.pos}, the file has {len(self.data) - self.pos} left)")
        out = self.data[self.pos:end]
        self.pos = end
        return out

    def int32(self) -> int:
        value: int = _INT.unpack(self.take(4))[0]
        return value

    def utf(self) -> str:
        n: int = struct.unpack(">H", self.take(2))[0]
        return self.take(n).decode("utf-8", "replace")

    def sized(self, n: int, what: str) -> bytes:
        if n < 0 or n > MAX_RECORD:
            raise StateFileError(f"{self.name}: impossible {what} length {n}")
        return self.take(n)


def _v1(buf: _Buf) -> Iterator[Record]:
    while True:
        klen = buf.int32()
        if klen == -1:
            return
        key = buf.sized(klen, "key")
        vlen = buf.int32()
        if vlen == -1:
            yield Record(DELETE, key, None)
        else:
            yield Record(PUT, key, buf.sized(vlen, "value"))


def _v2(buf: _Buf) -> Iterator[Record]:
    while True:
        t = buf.take(1)[0]
        if t == 0:
            return
        op = _TYPES.get(t)
        if op is None:
            raise StateFileError(f"{buf.name}: unknown changelog record type {t:#x}")
        key = buf.sized(buf.int32(), "key")
        vlen = buf.int32()
        if op == DELETE or vlen == -1:
            yield Record(DELETE, key, None)
        else:
            yield Record(op, key, buf.sized(vlen, "value"))


def _apply_v1(buf: _Buf, rows: dict[bytes, bytes]) -> None:
    # the loop of _v1 without a Record per entry (the bulk of a snapshot's read time); any
    # irregularity is handed to _v1 at that record, whose checks raise the error it raises
    data, pos, end = buf.data, buf.pos, len(buf.data)
    unpack = _INT.unpack_from
    try:
        while True:
            (klen,) = unpack(data, pos)
            if klen < 0:
                if klen == -1:
                    buf.pos = pos + 4
                    return
                break
            kend = pos + 4 + klen
            if kend + 4 > end or klen > MAX_RECORD:
                break
            (vlen,) = unpack(data, kend)
            if vlen < 0:
                if vlen != -1:
                    break
                rows.pop(data[pos + 4:kend], None)
                pos = kend + 4
                continue
            nxt = kend + 4 + vlen
            if nxt > end or vlen > MAX_RECORD:
                break
            rows[data[pos + 4:kend]] = data[kend + 4:nxt]
            pos = nxt
    except struct.error:  # fewer than 4 bytes left where a length starts
        pass
    buf.pos = pos
    for rec in _v1(buf):  # raises the error of the irregular record at buf.pos
        _apply(rec, rows, b",")


def _apply_v2(buf: _Buf, rows: dict[bytes, bytes], delimiter: bytes) -> None:
    data, pos, end = buf.data, buf.pos, len(buf.data)
    unpack = _INT.unpack_from
    while True:
        if pos + 5 > end:
            break
        t = data[pos]
        if t == 0:
            buf.pos = pos + 1
            return
        if t not in _TYPES:
            break
        klen = unpack(data, pos + 1)[0]
        if klen < 0 or klen > MAX_RECORD or pos + 9 + klen > end:
            break
        key = data[pos + 5:pos + 5 + klen]
        pos += 5 + klen
        vlen = unpack(data, pos)[0]
        if t == 0x10 or vlen == -1:
            rows.pop(key, None)
            pos += 4
            continue
        if vlen < 0 or vlen > MAX_RECORD or pos + 4 + vlen > end:
            break
        value = data[pos + 4:pos + 4 + vlen]
        pos += 4 + vlen
        old = rows.get(key) if t == 0x11 else None
        rows[key] = value if old is None else old + delimiter + value
    buf.pos = pos
    for rec in _v2(buf):
        _apply(rec, rows, delimiter)


def _apply(rec: Record, rows: dict[bytes, bytes], delimiter: bytes) -> None:
    value = rec.value
    if rec.op == DELETE or value is None:  # the readers give a delete, and only a delete, no value
        rows.pop(rec.key, None)
    elif rec.op == MERGE and rec.key in rows:
        rows[rec.key] = rows[rec.key] + delimiter + value
    else:
        rows[rec.key] = value


def open_stream(raw: IO[bytes], codec: str, name: str) -> IO[bytes]:
    """``raw`` decompressed by ``codec``. Raises :class:`StateFileError`."""
    try:
        return decompressed(raw, codec)
    except UnsupportedCodec as e:
        raise StateFileError(f"{name}: {e}") from None


def read_records(raw: IO[bytes], codec: str, name: str, *, changelog: bool = False) -> Iterator[Record]:
    """The records of one state file (``name`` is used in messages). ``changelog`` reads the
    RocksDB changelog header (versions 1–4); otherwise the HDFS delta/snapshot format.
    Raises :class:`StateFileError` for a truncated file, an unknown version or a bad codec
    stream."""
    with _decoded(raw, codec, name, changelog) as (buf, version):
        yield from (_v2 if version in (2, 4) else _v1)(buf)


@contextmanager
def _decoded(raw: IO[bytes], codec: str, name: str, changelog: bool) -> Iterator[tuple[_Buf, int]]:
    """The decompressed body of one state file past its header, and its format version (1 for
    an HDFS delta/snapshot); whatever fails while it is read is a :class:`StateFileError`."""
    fh = open_stream(raw, codec, name)
    try:
        buf = _Buf(fh.read(), name)
        yield buf, (_header(buf, name) if changelog else 1)
    except StateFileError:
        raise
    except Exception as e:  # noqa: BLE001 - a codec error (LZ4BlockError…) is an unreadable file
        raise StateFileError(f"{name}: unreadable ({type(e).__name__}: {e})") from None
    finally:
        fh.close()


def _header(buf: _Buf, name: str) -> int:
    """The changelog version (1–4), past its header in ``buf``."""
    head = buf.data[:4]
    # writeUTF("vN"): 00 02 'v' digit; a v1 changelog starts with a key length instead
    if len(head) == 4 and head[:3] == b"\x00\x02v" and 0x30 <= head[3] <= 0x39:
        version = int(buf.utf()[1:])
        if version not in (2, 3, 4):
            raise StateFileError(f"{name}: unknown changelog version v{version}")
        if version >= 3:
            buf.utf()  # lineage JSON
        return version
    return 1


def read_body(raw: IO[bytes], codec: str, name: str, *, changelog: bool = False) -> tuple[bytes, int, int]:
    """(decompressed bytes, where the records start, format version) of one state file: version
    1 for an HDFS delta/snapshot, 1–4 for a changelog (``changelog``: its header read). Raises
    :class:`StateFileError` as :func:`read_records` does."""
    with _decoded(raw, codec, name, changelog) as (buf, version):
        return buf.data, buf.pos, version


def apply_body(data: bytes, pos: int, version: int, name: str, rows: dict[bytes, bytes], *,
               delimiter: bytes = b",") -> None:
    """Apply the records of a :func:`read_body` result to ``rows`` (see :func:`apply_records`).
    Raises :class:`StateFileError` for a truncated or malformed record."""
    buf = _Buf(data, name)
    buf.pos = pos
    try:
        if version in (2, 4):
            _apply_v2(buf, rows, delimiter)
        else:
            _apply_v1(buf, rows)
    except StateFileError:
        raise
    except Exception as e:  # noqa: BLE001 - as _decoded: never a traceback for a corrupt file
        raise StateFileError(f"{name}: unreadable ({type(e).__name__}: {e})") from None


def apply_records(raw: IO[bytes], codec: str, name: str, rows: dict[bytes, bytes], *, changelog: bool = False,
                  delimiter: bytes = b",") -> None:
    """Apply the records of one state file to ``rows`` (key bytes → value bytes): puts set,
    deletes remove, merges append to an existing value after ``delimiter`` (else set) — the
    result of replaying :func:`read_records` in order, without a :class:`Record` per entry.
    Raises :class:`StateFileError` as :func:`read_records` does (records before the bad one
    are applied)."""
    data, pos, version = read_body(raw, codec, name, changelog=changelog)
    apply_body(data, pos, version, name, rows, delimiter=delimiter)
