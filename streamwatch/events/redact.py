"""Secrets never leave the process: Spark conf values whose key matches Spark's redaction
pattern are replaced before anything is recorded, replayed or shown.

Mirrors ``spark.redaction.regex`` (Spark's default ``(?i)secret|password|token|access[.]?key``)
and Spark's replacement text ``*********(redacted)``, shortened here to ``*********``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

REDACTION_PATTERN = re.compile(r"(?i)secret|password|token|access[.]?key")
REDACTED = "*********"


def is_secret_key(key: str) -> bool:
    """True when a Spark conf ``key`` matches the redaction pattern."""
    return bool(REDACTION_PATTERN.search(key))


def redact_conf(conf: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``conf`` (key → value) with the value of every secret key replaced by
    ``*********``. Never raises for non-string keys (they are compared as text)."""
    return {k: (REDACTED if is_secret_key(str(k)) else v) for k, v in conf.items()}


def redact_pairs(pairs: Any) -> Any:
    """Redact Spark's ``[[key, value], …]`` property lists (``SparkListenerEnvironmentUpdate``
    uses both that shape and plain maps); anything else is returned unchanged."""
    if isinstance(pairs, Mapping):
        return redact_conf(pairs)
    if isinstance(pairs, list):
        out = []
        for item in pairs:
            if isinstance(item, (list, tuple)) and len(item) == 2 and is_secret_key(str(item[0])):
                out.append([item[0], REDACTED])
            else:
                out.append(item)
        return out
    return pairs
