"""Epoch milliseconds → UTC text: the one formatter every front-end and report uses."""

from __future__ import annotations

from datetime import UTC, datetime

STAMP = "%Y-%m-%d %H:%M:%S"


def utc_text(ms: int | None, pattern: str = STAMP, millis: bool = False) -> str | None:
    """``ms`` (epoch ms) as UTC text in the ``strftime`` ``pattern``, with ``.mmm`` appended
    when ``millis``; None for None and for values outside the years 1–9999 (a corrupted
    watermark)."""
    if ms is None:
        return None
    try:
        t = datetime.fromtimestamp(ms / 1000, tz=UTC)
        return t.strftime(pattern) + (f".{t.microsecond // 1000:03d}" if millis else "")
    except (OverflowError, ValueError, OSError):
        return None
