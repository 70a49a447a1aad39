"""Spark's hash partitioning of state keys, without a JVM: which partition a key's state lives in.

Mirrors ``org.apache.spark.unsafe.hash.Murmur3_x86_32`` and the ``Murmur3Hash`` expression
(``hash()`` in SQL, ``Murmur3HashFunction``): a running 32-bit Murmur3 hash, seed 42, folded
through the key columns in order; ``HashPartitioning.partitionIdExpression`` is
``pmod(hash(cols), numPartitions)``. Per type:

- null: the seed passes through unchanged;
- boolean (as int 1/0), byte, short, int, date (days): ``hashInt``;
- long, timestamp, timestamp_ntz (µs): ``hashLong`` (low 32 bits, then high);
- float / double: ``hashInt(floatToIntBits)`` / ``hashLong(doubleToLongBits)``, -0.0 as 0.0;
- decimal of precision ≤ 18: ``hashLong`` of the unscaled value, larger ones
  ``hashUnsafeBytes`` of the unscaled value's two's-complement big-endian bytes;
- string (UTF-8 bytes), binary: ``hashUnsafeBytes`` — whole little-endian 4-byte words, then
  each tail byte (sign-extended) as a word of its own; this is *not* standard Murmur3, whose
  tail bytes are folded into one word (``mmh3`` hashes the tail the standard way);
- struct: its fields in order, each seeded with the hash so far.
"""

from __future__ import annotations

import datetime as dt
import struct
from decimal import Decimal
from typing import Any

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.state.types import DataType, StructType

SEED = 42
_M = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_EPOCH_NTZ = dt.datetime(1970, 1, 1)
_EPOCH_DAY = dt.date(1970, 1, 1)


class HashError(StreamwatchError, ValueError):
    """A key value whose type Spark's hash is not mirrored for here (message: one line).
    Exit 4: the state cannot be read for that key."""

    exit_code = ExitCode.UNREADABLE


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M


def _mix_k1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _M, 15) * _C2) & _M


def _mix_h1(h1: int, k1: int) -> int:
    return (_rotl(h1 ^ k1, 13) * 5 + 0xE6546B64) & _M


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M
    return h1 ^ (h1 >> 16)


def _signed(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def hash_int(value: int, seed: int) -> int:
    """``Murmur3_x86_32.hashInt``: a signed 32-bit hash of a 32-bit int."""
    h1 = _mix_h1(seed & _M, _mix_k1(value & _M))
    return _signed(_fmix(h1, 4))


def hash_long(value: int, seed: int) -> int:
    """``Murmur3_x86_32.hashLong``: a signed 32-bit hash of a 64-bit long."""
    v = value & 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed & _M, _mix_k1(v & _M))
    h1 = _mix_h1(h1, _mix_k1(v >> 32))
    return _signed(_fmix(h1, 8))


def hash_unsafe_bytes(data: bytes, seed: int) -> int:
    """``Murmur3_x86_32.hashUnsafeBytes`` (Spark's own tail handling: module docstring)."""
    n = len(data)
    aligned = n - n % 4
    h1 = seed & _M
    for (word,) in struct.iter_unpack("<I", data[:aligned]):
        h1 = _mix_h1(h1, _mix_k1(word))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((b - 256 if b > 127 else b) & _M))
    return _signed(_fmix(h1, n))


def _micros(v: Any, ntz: bool) -> int:
    if isinstance(v, int):
        return v
    if isinstance(v, dt.datetime):
        base = _EPOCH_NTZ if ntz else _EPOCH
        if not ntz and v.tzinfo is None:
            v = v.replace(tzinfo=dt.UTC)
        d = v - base
        return int((d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds)
    raise HashError(f"{v!r} is not a timestamp")


def hash_value(t: DataType, v: Any, seed: int) -> int:
    """Spark's ``Murmur3Hash`` of one value of type ``t`` with the running ``seed`` (values
    as the UnsafeRow decoder gives them: int, str, bytes, datetime, date, Decimal, dict for
    structs). Raises :class:`HashError` for arrays, maps, intervals and variants."""
    if v is None:
        return seed
    n = t.name
    if n == "boolean":
        return hash_int(1 if v else 0, seed)
    if n in ("byte", "short", "integer"):
        return hash_int(int(v), seed)
    if n == "date":
        return hash_int(v if isinstance(v, int) else (v - _EPOCH_DAY).days, seed)
    if n == "long":
        return hash_long(int(v), seed)
    if n in ("timestamp", "timestamp_ntz"):
        return hash_long(_micros(v, n == "timestamp_ntz"), seed)
    if n == "float":
        x = 0.0 if v == 0 else float(v)
        return hash_int(int(struct.unpack("<i", struct.pack("<f", x))[0]), seed)
    if n == "double":
        x = 0.0 if v == 0 else float(v)
        return hash_long(int(struct.unpack("<q", struct.pack("<d", x))[0]), seed)
    if n == "decimal":
        unscaled = int(Decimal(v).scaleb(t.scale))
        if t.precision <= 18:
            return hash_long(unscaled, seed)
        # BigInteger.toByteArray: bitLength() // 8 + 1 bytes (Java's bitLength of a negative n is ~n's)
        size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
        return hash_unsafe_bytes(unscaled.to_bytes(size, "big", signed=True), seed)
    if n == "string":
        return hash_unsafe_bytes(str(v).encode("utf-8"), seed)
    if n == "binary":
        return hash_unsafe_bytes(bytes(v), seed)
    if n == "struct":
        for f in t.fields:
            seed = hash_value(f.type, v.get(f.name) if isinstance(v, dict) else None, seed)
        return seed
    raise HashError(f"Spark's hash of a {t.simple()} value is not mirrored by streamwatch")


def hash_row(schema: StructType, values: tuple[Any, ...], seed: int = SEED) -> int:
    """``hash(col1, col2, …)``: the signed 32-bit Murmur3 hash of a row's columns."""
    for f, v in zip(schema.fields, values, strict=True):
        seed = hash_value(f.type, v, seed)
    return seed


def partition_of(schema: StructType, values: tuple[Any, ...], num_partitions: int) -> int:
    """``pmod(hash(cols), num_partitions)``: the shuffle (and state store) partition of a key."""
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return hash_row(schema, values) % num_partitions
