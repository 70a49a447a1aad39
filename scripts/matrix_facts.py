"""What Spark itself reports about a version-matrix case (scripts/version_matrix.py): the
progress of every query the case ran (:class:`Recorder`, which runs them), the
``state-metadata`` source's rows and the ``statestore`` source's rows per store, in JSON form
(:func:`norm`). Runs inside a matrix venv's pyspark; imports none of it itself.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any


def norm(v: Any) -> Any:
    """JSON form of a Spark value: timestamps → epoch µs, structs → dicts, decimals → text,
    bytes → hex."""
    if isinstance(v, dt.datetime):
        return round(v.replace(tzinfo=dt.UTC).timestamp() * 1_000_000) if v.tzinfo is None \
            else round(v.timestamp() * 1_000_000)
    if isinstance(v, dt.date):
        return v.isoformat()
    if hasattr(v, "asDict"):
        return {k: norm(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {str(k): norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, Decimal):
        return str(v.normalize())
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).hex()
    return v


class Recorder:
    """Keeps the progress of every query a case starts (``state_queries.run`` wrapped, and the
    named-sink cases' own runs)."""

    def __init__(self) -> None:
        self.progress: list[dict[str, Any]] = []

    def run(self, df: Any, checkpoint: Path, mode: str = "update", sink_name: str | None = None) -> Path:
        """Run ``df`` to the end (``availableNow``, a noop sink in ``mode``) on ``checkpoint``,
        keep its progress, unload its state stores (so the checkpoint is final) and return
        ``checkpoint``. ``sink_name`` names the sink (``DataStreamWriter.name``, Scala API only
        in 4.3: commit log v3); raises where this Spark cannot name a sink or the query fails."""
        w = df.writeStream.format("noop").outputMode(mode).option("checkpointLocation", str(checkpoint))
        if sink_name is not None:
            w._jwrite = w._jwrite.name(sink_name)
        q = w.trigger(availableNow=True).start()
        q.awaitTermination(600)
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
        self.progress.extend(_progress(q))
        df.sparkSession._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
        return checkpoint

    def wrap(self, Q: Any) -> None:
        """Have ``Q.run`` (``tests.helpers.state_queries.run``) record: :meth:`run` in its place."""
        Q.run = self.run


RECORDER = Recorder()


def progress_facts(progress: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for p in progress:
        if "addBatch" not in (p.get("durationMs") or {}):
            continue
        out.append({
            "batchId": p["batchId"],
            "numInputRows": p.get("numInputRows"),
            "watermark": (p.get("eventTime") or {}).get("watermark"),
            "sources": [{"description": s.get("description"), "endOffset": s.get("endOffset"),
                         "numInputRows": s.get("numInputRows")} for s in p.get("sources") or []],
            "stateOperators": [
                {k: op.get(k) for k in ("operatorName", "numRowsTotal", "numRowsUpdated", "numRowsRemoved",
                                         "numShufflePartitions", "numStateStoreInstances")}
                for op in p.get("stateOperators") or []
            ],
        })
    return out


def _err(e: BaseException) -> str:
    """One line naming the error: the JVM exception's own message for a Py4J error."""
    java = getattr(e, "java_exception", None)
    if java is not None:
        return f"{java.getClass().getName()}: {str(java.getMessage() or '').splitlines()[0]}"[:400]
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:400]


def _progress(q: Any) -> list[dict[str, Any]]:
    """The query's progress as JSON dicts, as the JVM writes them (``StreamingQueryProgress.json``):
    pyspark 4.0's Python objects turn a source's JSON offsets into Python reprs."""
    return [json.loads(p.json()) for p in q._jsq.recentProgress()]


def metadata_facts(spark: Any, cp: Path) -> Any:
    try:
        rows = spark.read.format("state-metadata").load(str(cp)).collect()
    except Exception as e:  # noqa: BLE001 - the error is the fact
        return {"error": _err(e)}
    return [norm(r.asDict()) for r in rows]


def _rows(spark: Any, cp: Path, opts: dict[str, str]) -> Any:
    r = spark.read.format("statestore")
    for k, v in opts.items():
        r = r.option(k, v)
    try:
        rows = r.load(str(cp)).collect()
    except Exception as e:  # noqa: BLE001 - the error is the fact
        return {"options": opts, "error": _err(e)}
    got = sorted((norm(x.asDict()) for x in rows), key=lambda d: json.dumps(d, sort_keys=True))
    return {"options": opts, "count": len(got), "rows": got}


def store_facts(spark: Any, cp: Path, metadata: Any) -> list[Any]:
    """The statestore source's rows per store, chosen from the operator metadata; joins by
    side and by store, transformWithState per state variable."""
    out: list[Any] = []
    if not isinstance(metadata, list):
        return out
    seen: set[tuple[int, str]] = set()
    for m in metadata:
        op, store, name = int(m["operatorId"]), str(m["stateStoreName"]), str(m.get("operatorName") or "")
        if (op, store) in seen:
            continue
        seen.add((op, store))
        base = {"operatorId": str(op)}
        if "Join" in name:
            if store.startswith("left-") or store.startswith("right-"):
                out.append(_rows(spark, cp, {**base, "storeName": store}))
            continue
        if "transformWithState" in name:
            for var in _tws_variables(m):
                out.append(_rows(spark, cp, {**base, "stateVarName": var}))
            continue
        out.append(_rows(spark, cp, {**base, "storeName": store}))
    for m in metadata:
        if "Join" in str(m.get("operatorName") or "") and (int(m["operatorId"]), "__sides") not in seen:
            seen.add((int(m["operatorId"]), "__sides"))
            for side in ("left", "right"):
                out.append(_rows(spark, cp, {"operatorId": str(m["operatorId"]), "joinSide": side}))
    return out


def _tws_variables(m: dict[str, Any]) -> list[str]:
    info = m.get("operatorProperties")
    try:
        props = json.loads(info) if isinstance(info, str) else (info or {})
    except ValueError:
        return []
    names = [str(v.get("stateName")) for v in props.get("stateVariables", []) if isinstance(v, dict)]
    return [n for n in names if not n.startswith("$")]
