"""Reading values out of Spark's listener JSON (``StreamingQueryProgress.json`` and the event
log's Jackson form) into plain Python values, never raising.

Spark writes an undefined rate as ``"NaN"`` (or leaves it out), numbers sometimes as strings,
offsets as JSON objects, numbers or strings, and timestamps as ISO-8601 UTC text
(``2026-11-20T21:57:09.123Z``). These helpers are what :mod:`streamwatch.model.events` and
:mod:`streamwatch.model.progress` build their records with.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any


def iso_to_epoch_ms(ts: str | None) -> int | None:
    """Parse Spark's ISO-8601 UTC timestamp (``2026-11-20T21:57:09.123Z``) to epoch ms.

    Returns None for None or an unparsable string (never raises).
    """
    if not ts:
        return None
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def json_rate(value: Any) -> float | None:
    """A rate (rows/s) or any finite number; Spark writes an undefined rate as "NaN" (or omits
    it): None here, so "no rate" is never confused with a number and events compare equal
    after a round trip."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def json_int(value: Any, default: int = 0) -> int:
    """A count, id or duration (ms/bytes) as int; ``default`` for None, booleans and text that
    is not a number."""
    if isinstance(value, bool) or value is None:
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def sum_rates(rates: Iterable[float | None]) -> float | None:
    """Spark's ``sources.map(_.inputRowsPerSecond).sum`` (rows/s): None (NaN) when any is None;
    0.0 for no sources (Spark's empty sum)."""
    total = 0.0
    for r in rates:
        if r is None:
            return None
        total += r
    return total


def offset_text(value: Any) -> str | None:
    """Offsets arrive as JSON objects, numbers or strings; keep them as compact JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=False)
