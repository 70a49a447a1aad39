"""State schema files: the key and value schema of each store (column family) of a state
operator.

Mirrors ``SchemaHelper`` (``SchemaV1Reader``/``SchemaV2Reader``/``SchemaV3Reader``) and
``StateSchemaV3File``:

- ``<op>/<partition>/[<store>/]_metadata/schema``: ``writeUTF("v1")`` then ``writeUTF`` of the
  key and value ``StructType`` JSON (v1), or ``writeUTF("v2")`` then, for key and value, an
  int chunk count and that many ``writeUTF`` chunks (v2);
- ``<op>/_stateSchema/<store>/<batchId>_<uuid>``: ``v3`` (as a text line, or ``writeUTF``),
  then one JSON object per column family — ``columnFamilyName``, ``keySchema``,
  ``valueSchema``, ``keyStateEncoderSpec`` (prefix-scan column count, range-scan ordinals),
  ``userKeyEncoderSchema``; or (Spark 4.1+, ``SchemaV3Writer``) ``writeUTF("v3")``, an int
  column-family count, then per column family ``writeUTF(name)``, a short key schema id, the
  key schema (int chunk count + ``writeUTF`` chunks), a short value schema id, the value
  schema, the key encoder spec JSON and the user-key schema JSON (chunked likewise).

Errors: :class:`~streamwatch.state.types.SchemaError` (one line).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import orjson

from streamwatch.state.types import SchemaError, StructType, parse_struct

DEFAULT_CF = "default"


@dataclass(frozen=True, slots=True)
class ColumnFamilySchema:
    """One store's (or transformWithState variable's) schemas: ``name``, ``key``/``value``
    StructTypes, ``encoder`` (``noPrefix``, ``prefixScan``, ``rangeScan``, or join state
    format 4's ``eventTimePostfix``/``eventTimePrefix``: the key's event time, its last field,
    stored as 8 big-endian bytes after/before the rest of the key row),
    ``prefix_cols`` (prefix-scan key columns), ``ordinals`` (range-scan key ordinals),
    ``version`` of the schema file it came from, ``raw`` spec JSON."""

    name: str
    key: StructType
    value: StructType
    encoder: str = "noPrefix"
    prefix_cols: int = 0
    ordinals: tuple[int, ...] = ()
    version: int = 2
    raw: dict[str, Any] = field(default_factory=dict)


def _utf(data: bytes, pos: int) -> tuple[str, int]:
    if pos + 2 > len(data):
        raise SchemaError("schema file truncated")
    n = struct.unpack_from(">H", data, pos)[0]
    if pos + 2 + n > len(data):
        raise SchemaError("schema file truncated")
    return data[pos + 2:pos + 2 + n].decode("utf-8", "replace"), pos + 2 + n


def _chunks(data: bytes, pos: int) -> tuple[str, int]:
    if pos + 4 > len(data):
        raise SchemaError("schema file truncated")
    n = struct.unpack_from(">i", data, pos)[0]
    if n < 0 or n > 10_000:
        raise SchemaError(f"schema file has an impossible chunk count {n}")
    pos += 4
    parts = []
    for _ in range(n):
        s, pos = _utf(data, pos)
        parts.append(s)
    return "".join(parts), pos


def _spec(doc: Any) -> tuple[str, int, tuple[int, ...]]:
    if not isinstance(doc, dict):
        return "noPrefix", 0, ()
    kind = str(doc.get("keyStateEncoderType") or doc.get("type") or "NoPrefixKeyStateEncoderSpec")
    # join state format 4 (Spark 4.2+): the event time travels beside the key row, big-endian,
    # after it (``TimestampAsPostfix…``) or before it (``TimestampAsPrefix…``); checked before
    # the prefix-scan test, whose "Prefix" the latter also contains
    if kind.startswith(("TimestampAs", "EventTimeAs")):
        return ("eventTimePostfix" if "Postfix" in kind else "eventTimePrefix"), 0, ()
    if "Prefix" in kind and "NoPrefix" not in kind:
        return "prefixScan", int(doc.get("numColsPrefixKey", 0) or 0), ()
    if "Range" in kind:
        ords = doc.get("orderingOrdinals") or []
        return "rangeScan", 0, tuple(int(o[0] if isinstance(o, list) else o) for o in ords)
    return "noPrefix", 0, ()


def _binary_v3(data: bytes, pos: int) -> list[ColumnFamilySchema]:
    n = struct.unpack_from(">i", data, pos)[0]
    if n <= 0 or n > 10_000:
        raise SchemaError(f"schema v3 file has an impossible column family count {n}")
    pos += 4
    out = []
    for _ in range(n):
        name, pos = _utf(data, pos)
        if pos + 2 > len(data):
            raise SchemaError("schema file truncated")
        key_id = struct.unpack_from(">h", data, pos)[0]
        key, pos = _chunks(data, pos + 2)
        if pos + 2 > len(data):
            raise SchemaError("schema file truncated")
        value_id = struct.unpack_from(">h", data, pos)[0]
        value, pos = _chunks(data, pos + 2)
        spec_s, pos = _chunks(data, pos)
        user_s, pos = _chunks(data, pos)
        try:
            spec = orjson.loads(spec_s) if spec_s.strip() else {}
            user = orjson.loads(user_s) if user_s.strip() else {}
        except orjson.JSONDecodeError as e:
            raise SchemaError(f"schema v3 column family {name!r}: encoder spec is not JSON ({e})") from None
        enc, prefix, ords = _spec(spec)
        raw = {"columnFamilyName": name, "keySchemaId": key_id, "valueSchemaId": value_id,
               "keyStateEncoderSpec": spec, "userKeyEncoderSchema": user or None}
        out.append(ColumnFamilySchema(name, parse_struct(key), parse_struct(value), enc, prefix, ords, 3, raw))
    return out


def parse_schema_file(data: bytes) -> list[ColumnFamilySchema]:
    """The column families of one schema file (v1, v2 or v3; see module docstring).
    Raises :class:`SchemaError` for an unknown version or malformed content."""
    if data[:2] == b"\x00\x02" and data[2:3] == b"v":
        version_s, pos = _utf(data, 0)
    else:
        nl = data.find(b"\n")
        if not data.startswith(b"v") or nl < 0:
            raise SchemaError("schema file without a version header")
        version_s, pos = data[:nl].decode("ascii", "replace").strip(), nl + 1
    if not version_s[1:].isdigit():
        raise SchemaError(f"schema file version {version_s!r} is not vN")
    version = int(version_s[1:])
    if version == 1:
        key, pos = _utf(data, pos)
        value, pos = _utf(data, pos)
        return [ColumnFamilySchema(DEFAULT_CF, parse_struct(key), parse_struct(value), version=1)]
    if version == 2:
        key, pos = _chunks(data, pos)
        value, pos = _chunks(data, pos)
        return [ColumnFamilySchema(DEFAULT_CF, parse_struct(key), parse_struct(value), version=2)]
    if version == 3 and len(data) >= pos + 4 and data[pos:pos + 2] == b"\x00\x00":
        return _binary_v3(data, pos)
    if version == 3:
        out = []
        for line in data[pos:].splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise SchemaError(f"schema v3 line is not JSON ({e})") from None
            docs = doc.get("stateStoreColFamilySchema", [doc]) if isinstance(doc, dict) else []
            for d in docs:
                if not isinstance(d, dict):
                    raise SchemaError("schema v3 entry is not an object")
                enc, prefix, ords = _spec(d.get("keyStateEncoderSpec"))
                out.append(ColumnFamilySchema(
                    str(d.get("columnFamilyName", DEFAULT_CF)),
                    parse_struct(d.get("keySchema")), parse_struct(d.get("valueSchema")),
                    enc, prefix, ords, 3, d))
        if not out:
            raise SchemaError("schema v3 file lists no column family")
        return out
    raise SchemaError(f"unknown state schema file version v{version} (streamwatch reads v1–v3)")
