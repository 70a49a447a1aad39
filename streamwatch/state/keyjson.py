"""A state key given as JSON (``streamwatch state CP --key '{"key": "user42"}'``), typed by the
operator's key schema: :func:`parse_key`. Raises :class:`KeyUsageError` (exit 2) naming the
key columns when the JSON does not fit them."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation
from typing import Any

import orjson

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.state.types import DataType, StructType


class KeyUsageError(StreamwatchError):
    """A ``--key`` that does not fit the operator's key schema, or an operator to pick
    (message: one line naming the key columns; exit status 2)."""

    exit_code = ExitCode.USAGE


def describe(schema: StructType) -> str:
    """``name (type), …`` of the key columns, for messages."""
    return ", ".join(f"{f.name} ({f.type.simple()})" for f in schema.fields)


def _timestamp(v: Any, ntz: bool) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return v  # µs since the epoch
    if isinstance(v, str):
        t = dt.datetime.fromisoformat(v.strip())
        if not ntz and t.tzinfo is None:
            t = t.replace(tzinfo=dt.UTC)
        return t
    raise ValueError("an ISO 8601 timestamp or µs since the epoch")


def _typed(t: DataType, v: Any, where: str) -> Any:
    if v is None:
        return None
    n = t.name
    try:
        if n == "string":
            if isinstance(v, str):
                return v
        elif n in ("byte", "short", "integer", "long"):
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        elif n == "boolean":
            if isinstance(v, bool):
                return v
        elif n in ("float", "double"):
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
        elif n in ("timestamp", "timestamp_ntz"):
            return _timestamp(v, n == "timestamp_ntz")
        elif n == "date":
            if isinstance(v, str):
                return dt.date.fromisoformat(v.strip())
        elif n == "decimal":
            if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                return Decimal(str(v))
        elif n == "binary":
            if isinstance(v, str):
                return bytes.fromhex(v)
        elif n == "struct":
            if isinstance(v, dict):
                return _object(StructType(t.fields), v, where + ".")
        else:
            raise KeyUsageError(f"--key: column {where} is a {t.simple()}, which streamwatch does not look up by")
    except (ValueError, InvalidOperation) as e:
        raise KeyUsageError(f"--key: {where} = {v!r} is not a {t.simple()} ({e})") from None
    raise KeyUsageError(f"--key: {where} = {orjson.dumps(v).decode()} is not a {t.simple()}")


def _object(schema: StructType, doc: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    names = [f.name for f in schema.fields]
    extra = [k for k in doc if k not in names]
    missing = [n for n in names if n not in doc]
    if extra or missing:
        what = "; ".join(filter(None, [f"unknown {', '.join(prefix + k for k in extra)}" if extra else "",
                                       f"missing {', '.join(prefix + k for k in missing)}" if missing else ""]))
        raise KeyUsageError(f"--key: {what}: the key columns are {describe(schema)}")
    return {f.name: _typed(f.type, doc[f.name], prefix + f.name) for f in schema.fields}


def parse_key(text: str, schema: StructType) -> tuple[Any, ...]:
    """The key columns' values (schema order) of ``text``, a JSON object with one member per
    key column (timestamps as ISO 8601 text — UTC when no offset is given — or µs; dates ISO;
    structs as objects; decimals as text or numbers; binary as hex). A key of one column may
    also be given as its bare JSON value. Raises :class:`KeyUsageError` (naming the columns)."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise KeyUsageError(f"--key: {text!r} is not JSON; the key columns are {describe(schema)} "
                            f"(e.g. --key '{{\"{schema.fields[0].name if schema.fields else 'k'}\": …}}')") from None
    if not isinstance(doc, dict):
        if len(schema.fields) != 1:
            raise KeyUsageError(f"--key: give a JSON object; the key columns are {describe(schema)}")
        doc = {schema.fields[0].name: doc}
    obj = _object(schema, doc)
    return tuple(obj[f.name] for f in schema.fields)
