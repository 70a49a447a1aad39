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


def _exact(fh: IO[bytes], n: int, name: str) -> bytes:
    b = fh.read(n)
    if len(b) != n:
        raise StateFileError(f"{name}: truncated (wanted {n} bytes, got {len(b)})")
    return b


def _int(fh: IO[bytes], name: str) -> int:
    return _INT.unpack(_exact(fh, 4, name))[0]


def _utf(fh: IO[bytes], name: str) -> str:
    n = struct.unpack(">H", _exact(fh, 2, name))[0]
    return _exact(fh, n, name).decode("utf-8", "replace")


def _sized(fh: IO[bytes], n: int, name: str, what: str) -> bytes:
    if n < 0 or n > MAX_RECORD:
        raise StateFileError(f"{name}: impossible {what} length {n}")
    return _exact(fh, n, name)


def _v1(fh: IO[bytes], name: str) -> Iterator[Record]:
    while True:
        klen = _int(fh, name)
        if klen == -1:
            return
        key = _sized(fh, klen, name, "key")
        vlen = _int(fh, name)
        if vlen == -1:
            yield Record(DELETE, key, None)
        else:
            yield Record(PUT, key, _sized(fh, vlen, name, "value"))


def _v2(fh: IO[bytes], name: str) -> Iterator[Record]:
    while True:
        t = _exact(fh, 1, name)[0]
        if t == 0:
            return
        op = _TYPES.get(t)
        if op is None:
            raise StateFileError(f"{name}: unknown changelog record type {t:#x}")
        key = _sized(fh, _int(fh, name), name, "key")
        vlen = _int(fh, name)
        if op == DELETE or vlen == -1:
            yield Record(DELETE, key, None)
        else:
            yield Record(op, key, _sized(fh, vlen, name, "value"))


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
        version = 1
        if changelog:
            head = fh.peek(8)[:8] if hasattr(fh, "peek") else b""
            # writeUTF("vN"): 00 02 'v' digit; a v1 changelog starts with a key length instead
            if len(head) >= 4 and head[:3] == b"\x00\x02v" and 0x30 <= head[3] <= 0x39:
                version = int(_utf(fh, name)[1:])
                if version not in (2, 3, 4):
                    raise StateFileError(f"{name}: unknown changelog version v{version}")
                if version >= 3:
                    _utf(fh, name)  # lineage JSON
        yield from (_v2 if version in (2, 4) else _v1)(fh, name)
    except StateFileError:
        raise
    except Exception as e:  # noqa: BLE001 - a codec error (LZ4BlockError…) is an unreadable file
        raise StateFileError(f"{name}: unreadable ({type(e).__name__}: {e})") from None
    finally:
        fh.close()
