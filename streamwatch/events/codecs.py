"""Decompression of Spark event-log files, by file suffix as Spark names them.

Spark's ``EventLogFileWriter`` appends the codec's short name: ``.zstd`` (``ZstdOutputStream``,
standard zstd frames; Spark 4's default ``spark.eventLog.compression.codec``), ``.lz4``
(lz4-java's ``LZ4BlockOutputStream`` framing, decoded here), ``.gz`` (gzip, e.g. compressed by
hand). ``.snappy`` and ``.lzf`` use snappy-java/compress-lzf framings that are not supported:
opening them raises :class:`UnsupportedCodec`.
"""

from __future__ import annotations

import gzip
import io
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from streamwatch.errors import ExitCode, StreamwatchError

CODECS = {".zstd": "zstd", ".zst": "zstd", ".lz4": "lz4", ".gz": "gzip", ".snappy": "snappy", ".lzf": "lzf"}
_LZ4_MAGIC = b"LZ4Block"
_LZ4_HEADER = struct.Struct("<8sBiii")  # magic, token, compressed len, decompressed len, checksum


class UnsupportedCodec(StreamwatchError):
    """The event log uses a codec streamwatch cannot decompress (message: one line)."""

    exit_code = ExitCode.UNREADABLE


def codec_for(path: Path) -> str | None:
    """``zstd``/``lz4``/``gzip``/``snappy``/``lzf`` from the suffix, None for plain text.
    The ``.inprogress`` suffix of a log still being written is ignored."""
    name = path.name.removesuffix(".inprogress")
    return CODECS.get(Path(name).suffix.lower())


def _lz4_blocks(raw: IO[bytes]) -> Iterator[bytes]:
    """Mirrors lz4-java's ``LZ4BlockInputStream``: blocks of a 21-byte header (``LZ4Block``,
    method|level token, compressed/decompressed length LE, xxhash32 checksum) and a body that
    is raw (0x10) or an LZ4 block (0x20); a zero-length block ends a stream, and streams may be
    concatenated. A truncated final block (log still being written) ends the iteration."""
    import lz4.block

    while True:
        head = raw.read(_LZ4_HEADER.size)
        if len(head) < _LZ4_HEADER.size:
            return
        magic, token, clen, dlen, _check = _LZ4_HEADER.unpack(head)
        if magic != _LZ4_MAGIC:
            raise ValueError("not an lz4-java LZ4Block stream")
        if dlen == 0:
            continue  # end mark of one stream; another may follow
        body = raw.read(clen)
        if len(body) < clen:
            return
        method = token & 0xF0
        if method == 0x10:
            yield body
        elif method == 0x20:
            yield lz4.block.decompress(body, uncompressed_size=dlen)
        else:
            raise ValueError(f"unknown LZ4Block compression method {method:#x}")


def _zstd_frames(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompressed chunks of concatenated zstd frames (``ZstdOutputStream`` output). Raises
    ``EOFError`` when the input ends inside a frame (a log still being written)."""
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    obj = dctx.decompressobj()
    pending = False
    while True:
        chunk = raw.read(1 << 16)
        if not chunk:
            if pending:
                raise EOFError("truncated zstd frame")
            return
        while chunk:
            out = obj.decompress(chunk)
            pending = True
            if out:
                yield out
            if obj.eof:
                chunk = obj.unused_data
                obj = dctx.decompressobj()
                pending = False
            else:
                chunk = b""


class _Chunks(io.RawIOBase):
    """A raw stream over an iterator of byte chunks; closing it closes ``underlying``."""

    def __init__(self, chunks: Iterator[bytes], underlying: IO[bytes] | None = None) -> None:
        self._chunks = chunks
        self._underlying = underlying
        self._buf = b""

    def close(self) -> None:
        if self._underlying is not None:
            self._underlying.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def decompressed(raw: IO[bytes], codec: str) -> IO[bytes]:
    """A binary stream of ``raw`` decompressed as Spark's ``CompressionCodec`` named ``codec``
    writes it (``lz4``: lz4-java ``LZ4BlockOutputStream`` blocks; ``zstd``: zstd frames) —
    what event logs and state store files (``N.delta``, ``N.snapshot``, ``N.changelog``) use.
    Closing it closes ``raw``. Raises :class:`UnsupportedCodec` for other codecs."""
    if codec == "lz4":
        return io.BufferedReader(_Chunks(_lz4_blocks(raw), raw), buffer_size=1 << 16)
    if codec == "zstd":
        return io.BufferedReader(_Chunks(_zstd_frames(raw), raw), buffer_size=1 << 16)
    raise UnsupportedCodec(f"{codec}-compressed streams are not supported (lz4 and zstd are)")


def open_decompressed(path: Path) -> IO[bytes]:
    """A binary stream of the decompressed event log at ``path``. Raises
    :class:`UnsupportedCodec` for snappy/lzf and ``OSError`` when the file cannot be opened."""
    codec = codec_for(path)
    if codec in ("snappy", "lzf"):
        raise UnsupportedCodec(
            f"{path.name}: {codec}-compressed event logs are not supported; "
            "use spark.eventLog.compression.codec=zstd or lz4"
        )
    fh = open(path, "rb")  # noqa: SIM115 - returned (or wrapped) open: the caller closes it
    if codec is None:
        return fh
    if codec == "gzip":
        # GzipFile is a binary file object; typeshed has it a BufferedIOBase, not an IO[bytes]
        return gzip.GzipFile(fileobj=fh)  # type: ignore[return-value]
    if codec == "zstd":
        import zstandard  # noqa: F401 - fail here, not mid-read, when the codec is missing

        return io.BufferedReader(_Chunks(_zstd_frames(fh), fh), buffer_size=1 << 16)
    return io.BufferedReader(_Chunks(_lz4_blocks(fh), fh), buffer_size=1 << 16)
