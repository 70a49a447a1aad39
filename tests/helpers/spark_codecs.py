"""Compressed event logs as Spark writes them, for tests of the readers."""

from __future__ import annotations

import struct


def lz4java(data: bytes, block: int = 4096) -> bytes:
    """``data`` in lz4-java's ``LZ4BlockOutputStream`` framing (what Spark's lz4 codec writes):
    ``block``-byte chunks, each an ``LZ4Block`` header (magic, method | level — lz4-java's
    level of the block size, 5 for Spark's default 32 KB —, compressed and original length,
    checksum 0) plus the LZ4 block, or the chunk itself (raw method) when LZ4 does not shrink
    it, as lz4-java does; then an end block."""
    import lz4.block

    level = max(0, (block - 1).bit_length() - 10)
    out = b""
    for i in range(0, len(data), block):
        chunk = data[i : i + block]
        comp = lz4.block.compress(chunk, store_size=False)
        method, body = (0x20, comp) if len(comp) < len(chunk) else (0x10, chunk)
        out += struct.pack("<8sBiii", b"LZ4Block", method | level, len(body), len(chunk), 0) + body
    return out + struct.pack("<8sBiii", b"LZ4Block", 0x10 | level, 0, 0, 0)
