"""Display forms of decoded state values, shared by ``streamwatch state`` and the dashboard:
timestamps as UTC text, windows (``{start, end}`` structs) as ``start – end``, µs/ms expiry and
timeout fields as UTC text, binary as hex."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

_US_FIELDS = {"expiresAtMicros"}
_MS_FIELDS = {"timeoutTimestamp", "ttlExpirationMs", "expiration_timestamp_ms", "expirationMs"}


def _ts(v: dt.datetime) -> str:
    if v.tzinfo is not None:
        v = v.astimezone(dt.UTC).replace(tzinfo=None)
    return v.isoformat(sep=" ", timespec="microseconds" if v.microsecond else "seconds")


def text(v: Any, field: str = "") -> str:
    """One value as display text: UTC timestamps, windows as ``start – end``, ``null``."""
    if v is None:
        return "null"
    if isinstance(v, dt.datetime):
        return _ts(v)
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int) and field in _US_FIELDS | _MS_FIELDS:
        if v <= 0:
            return f"{v} (none)"
        us = v if field in _US_FIELDS else v * 1000
        try:
            t = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=us)
            if field in _MS_FIELDS and t.microsecond:
                return t.isoformat(sep=" ", timespec="milliseconds")
            return _ts(t)
        except OverflowError:
            return str(v)
    if isinstance(v, dict):
        if set(v) == {"start", "end"}:
            return f"{text(v['start'])} – {text(v['end'])}"
        return "{" + ", ".join(f"{k}: {text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(text(x) for x in v) + "]"
    if isinstance(v, (bytes, bytearray)):
        return "0x" + bytes(v[:32]).hex() + ("…" if len(v) > 32 else "")
    return str(v)


def jsonable(v: Any, field: str = "") -> Any:
    """One value for ``--json``: timestamps as UTC ISO text, decimals as strings, bytes hex."""
    if isinstance(v, dt.datetime):
        return _ts(v).replace(" ", "T") + ("Z" if v.tzinfo is not None else "")
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v
