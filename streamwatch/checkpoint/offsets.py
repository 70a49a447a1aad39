"""Per-source offsets from ``offsets/N`` lines, parsed by kind (no Spark needed).

Mirrors the offsets' JSON forms: ``FileStreamSourceOffset`` (``{"logOffset":N}``, or a bare
long in Spark 2.1's long format), ``KafkaSourceOffset`` (``{"topic":{"partition":offset}}``),
``DeltaSourceOffset`` (``{"sourceVersion":1,"reservoirId":…,"reservoirVersion":…,"index":…,
"isStartingVersion":…}``), ``RatePerMicroBatchStreamOffset`` (``{"offset":N,"timestamp":ms}``),
``RateStreamOffset`` (``{"0":{"value":v,"runTimeMs":ms}}``) and ``LongOffset`` (a bare long).
"""

from __future__ import annotations

import re

import orjson

from streamwatch.model.checkpoint import SourceOffset

_LONG = re.compile(r"-?[0-9]+")


def parse_source_offset(text: str) -> SourceOffset:
    """Classify one offset text (never raises; unknown shapes are ``kind="raw"``)."""
    t = text.strip()
    if _LONG.fullmatch(t) and -(1 << 63) <= int(t) < (1 << 63):  # LongOffset: a Java long
        return SourceOffset("number", t, {"value": int(t)})
    try:
        obj = orjson.loads(t)
    except orjson.JSONDecodeError:
        return SourceOffset("raw", t)
    if not isinstance(obj, dict):
        return SourceOffset("raw", t)
    if "logOffset" in obj:
        return SourceOffset("file", t, obj)
    if "reservoirId" in obj or "reservoirVersion" in obj:
        return SourceOffset("delta", t, obj)
    if set(obj) <= {"offset", "timestamp"} and "offset" in obj:
        return SourceOffset("rate", t, obj)
    if obj and all(isinstance(v, dict) and set(v) <= {"value", "runTimeMs"} and v for v in obj.values()):
        return SourceOffset("rate", t, obj)
    if obj and all(
        isinstance(v, dict) and all(isinstance(k, str) and _LONG.fullmatch(k) and isinstance(o, int) for k, o in v.items())
        for v in obj.values()
    ):
        return SourceOffset("kafka", t, obj)
    return SourceOffset("raw", t, obj)
