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
from dataclasses import dataclass
from typing import IO, Iterator

from streamwatch.events.codecs import UnsupportedCodec, decompressed

_INT = struct.Struct(">i")
PUT, DELETE, MERGE = "put", "delete", "merge"
_TYPES = {0x01: PUT, 0x10: DELETE, 0x11: MERGE}
MAX_RECORD = 1 << 30


class StateFileError(ValueError):
    """A state file that cannot be read to its end (message: one line, names the file;
    line breaks in a library's message are folded)."""

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

    def int(self) -> int:
        return _INT.unpack(self.take(4))[0]

    def utf(self) -> str:
        n = struct.unpack(">H", self.take(2))[0]
        return self.take(n).decode("utf-8", "replace")

    def sized(self, n: int, what: str) -> bytes:
        if n < 0 or n > MAX_RECORD:
            raise StateFileError(f"{self.name}: impossible {what} length {n}")
        return self.take(n)


def _v1(buf: _Buf) -> Iterator[Record]:
    while True:
        klen = buf.int()
        if klen == -1:
            return
        key = buf.sized(klen, "key")
        vlen = buf.int()
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
        key = buf.sized(buf.int(), "key")
        vlen = buf.int()
        if op == DELETE or vlen == -1:
            yield Record(DELETE, key, None)
        else:
            yield Record(op, key, buf.sized(vlen, "value"))


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
    fh = open_stream(raw, codec, name)
    try:
        buf = _Buf(fh.read(), name)
        version = 1
        if changelog:
            head = buf.data[:4]
            # writeUTF("vN"): 00 02 'v' digit; a v1 changelog starts with a key length instead
            if len(head) == 4 and head[:3] == b"\x00\x02v" and 0x30 <= head[3] <= 0x39:
                version = int(buf.utf()[1:])
                if version not in (2, 3, 4):
                    raise StateFileError(f"{name}: unknown changelog version v{version}")
                if version >= 3:
                    buf.utf()  # lineage JSON
        yield from (_v2 if version in (2, 4) else _v1)(buf)
    except StateFileError:
        raise
    except Exception as e:  # noqa: BLE001 - a codec error (LZ4BlockError…) is an unreadable file
        raise StateFileError(f"{name}: unreadable ({type(e).__name__}: {e})") from None
    finally:
        fh.close()
