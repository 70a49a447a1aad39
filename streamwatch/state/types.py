"""Spark SQL data types as the state schema files record them (``StructType.json``), parsed
into small frozen dataclasses the UnsafeRow and Avro decoders walk.

Mirrors ``org.apache.spark.sql.types.DataType.fromJson``: atomic types are JSON strings
(``"long"``, ``"decimal(38,18)"``, ``"timestamp"``…), complex types are objects with a
``type`` of ``struct``/``array``/``map``/``udt`` (a UDT is read as its ``sqlType``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from streamwatch.errors import ExitCode, StreamwatchError

_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$")
_CHAR = re.compile(r"^(?:var)?char\(\s*\d+\s*\)$")
ATOMIC = frozenset({
    "boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary",
    "date", "timestamp", "timestamp_ntz", "null", "calendarinterval", "variant",
})
_ALIASES = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte", "void": "null"}
# fixed-width types: stored in the 8-byte slot of an UnsafeRow
FIXED = frozenset({"boolean", "byte", "short", "integer", "long", "float", "double", "date",
                   "timestamp", "timestamp_ntz", "null"})
_ELEMENT_SIZE = {"boolean": 1, "byte": 1, "short": 2, "integer": 4, "date": 4, "float": 4,
                 "long": 8, "double": 8, "timestamp": 8, "timestamp_ntz": 8, "null": 8}


class SchemaError(StreamwatchError, ValueError):
    """A schema that cannot be parsed (message: one line). Exit 4."""

    exit_code = ExitCode.UNREADABLE


@dataclass(frozen=True, slots=True)
class DataType:
    """One Spark SQL type: ``name`` is the atomic name (``long``, ``string``…) or ``struct``,
    ``array``, ``map``, ``decimal``; ``fields`` for structs, ``element`` for arrays, ``key``
    and ``value`` for maps, ``precision``/``scale`` for decimals."""

    name: str
    fields: tuple[Field, ...] = ()
    element: DataType | None = None
    key: DataType | None = None
    value: DataType | None = None
    precision: int = 0
    scale: int = 0

    @property
    def is_fixed(self) -> bool:
        """Whether an UnsafeRow stores the value inside its 8-byte slot (decimals up to
        precision 18 are stored as their unscaled long)."""
        return self.name in FIXED or (self.name == "decimal" and self.precision <= 18)

    @property
    def element_size(self) -> int:
        """Bytes per element in an UnsafeArrayData of this type (8 for variable-length)."""
        if self.name == "decimal":
            return 8
        return _ELEMENT_SIZE.get(self.name, 8)

    def simple(self) -> str:
        """Spark's ``simpleString`` spelling (``bigint``, ``struct<start:timestamp,…>``)."""
        if self.name == "struct":
            return "struct<" + ",".join(f"{f.name}:{f.type.simple()}" for f in self.fields) + ">"
        if self.name == "array":
            return f"array<{self.element.simple() if self.element else '?'}>"
        if self.name == "map":
            return f"map<{self.key.simple() if self.key else '?'},{self.value.simple() if self.value else '?'}>"
        if self.name == "decimal":
            return f"decimal({self.precision},{self.scale})"
        return {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(self.name, self.name)


@dataclass(frozen=True, slots=True)
class Field:
    """One ``StructField``: ``name``, ``type``, ``nullable``."""

    name: str
    type: DataType
    nullable: bool = True


@dataclass(frozen=True, slots=True)
class StructType:
    """A row schema: its ``fields`` in order (the UnsafeRow field ordinals)."""

    fields: tuple[Field, ...] = field(default_factory=tuple)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def as_type(self) -> DataType:
        return DataType("struct", fields=self.fields)

    def __len__(self) -> int:
        return len(self.fields)


def parse_type(doc: Any) -> DataType:
    """A ``DataType`` from its JSON form (string or object). Raises :class:`SchemaError`."""
    if isinstance(doc, str):
        name = _ALIASES.get(doc, doc)
        if name in ATOMIC:
            return DataType(name)
        if name == "decimal":
            return DataType("decimal", precision=10, scale=0)
        m = _DECIMAL.match(name)
        if m:
            return DataType("decimal", precision=int(m.group(1)), scale=int(m.group(2)))
        if _CHAR.match(name):
            return DataType("string")
        if name.startswith("interval") or name.startswith("timestamp"):
            # year-month intervals are ints, day-time intervals longs
            return DataType("integer" if "year" in name or "month" in name else "long")
        if name.startswith("string"):  # collated strings: "string collate X"
            return DataType("string")
        raise SchemaError(f"unknown data type {doc!r}")
    if not isinstance(doc, dict):
        raise SchemaError(f"data type is not a string or object: {type(doc).__name__}")
    kind = doc.get("type")
    if kind == "struct":
        return DataType("struct", fields=parse_struct(doc).fields)
    if kind == "array":
        return DataType("array", element=parse_type(doc.get("elementType")))
    if kind == "map":
        return DataType("map", key=parse_type(doc.get("keyType")), value=parse_type(doc.get("valueType")))
    if kind == "udt":
        return parse_type(doc.get("sqlType"))
    raise SchemaError(f"unknown data type {kind!r}")


def parse_struct(doc: Any) -> StructType:
    """A ``StructType`` from its JSON object or JSON text. Raises :class:`SchemaError`."""
    if isinstance(doc, (str, bytes)):
        try:
            doc = orjson.loads(doc)
        except orjson.JSONDecodeError as e:
            raise SchemaError(f"schema is not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("type") != "struct" or not isinstance(doc.get("fields"), list):
        raise SchemaError("schema is not a JSON StructType")
    fields = []
    for f in doc["fields"]:
        if not isinstance(f, dict) or not isinstance(f.get("name"), str):
            raise SchemaError("struct field without a name")
        fields.append(Field(f["name"], parse_type(f.get("type")), bool(f.get("nullable", True))))
    return StructType(tuple(fields))
