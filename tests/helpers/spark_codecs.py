"""Compressed event logs as Spark writes them, for tests of the readers."""

from __future__ import annotations

import struct


def lz4java(data: bytes, block: int = 4096) -> bytes:
    """``data`` in lz4-java's ``LZ4BlockOutputStream`` framing (what Spark's lz4 codec writes):
    ``block``-byte chunks, each an ``LZ4Block`` header (magic, LZ4 method | level 4,
    compressed and original length, checksum 0) plus the raw LZ4 block, then an end block."""
    import lz4.block

    out = b""
    for i in range(0, len(data), block):
        chunk = data[i : i + block]
        comp = lz4.block.compress(chunk, store_size=False)
        out += struct.pack("<8sBiii", b"LZ4Block", 0x20 | 4, len(comp), len(chunk), 0) + comp
    return out + struct.pack("<8sBiii", b"LZ4Block", 0x10, 0, 0, 0)
