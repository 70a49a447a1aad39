"""``streamwatch compat``'s reading of the changed query's shape, without running a batch:
its sources, stateful operators (key/value schemas), watermark delays, sink, output mode
and query name from the analyzed logical plan (``QueryExecution.analyzed``), and the
writer's settings — private fields of ``org.apache.spark.sql.classic.DataStreamWriter``
(source, outputMode, extraOptions) — read through JVM reflection (py4j)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from streamwatch.checkpoint.ops.compat_rules import OPERATOR_NAMES, RESTORED_CONFS, NewOperator, NewQuery, NewSource

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql.streaming.readwriter import DataStreamWriter

#: Spark's StructType JSON (``DataType.json``): ``{"type": "struct", "fields": [...]}``
SchemaJson = dict[str, Any]


def private_field(obj: Any, name: str) -> Any:
    """A private field of a JVM object (py4j), read through reflection."""
    f = obj.getClass().getDeclaredField(name)
    f.setAccessible(True)
    return f.get(obj)


def _seq(s: Any) -> list[Any]:
    return [s.apply(i) for i in range(s.size())]


def scala_map(m: Any) -> dict[str, str]:
    """A Scala ``Map[String, String]`` (py4j) as a dict (e.g. a writer's ``extraOptions``)."""
    out: dict[str, str] = {}
    it = m.iterator()
    while it.hasNext():
        kv = it.next()
        out[str(kv._1())] = str(kv._2())
    return out


_UNITS = {"millisecond": 1, "second": 1000, "minute": 60_000, "hour": 3_600_000, "day": 86_400_000, "week": 604_800_000}


def _delay_ms(text: str) -> int | None:
    total, found = 0, False
    for n, unit in re.findall(r"(\d+)\s*(millisecond|second|minute|hour|day|week)s?", text):
        total += int(n) * _UNITS[unit]
        found = True
    return total if found else None


def _agg_value_schema(node: Any) -> SchemaJson:
    fields: list[dict[str, Any]] = []

    def walk(e: Any) -> None:
        if e.nodeName() == "AggregateExpression":
            for a in _seq(e.aggregateFunction().aggBufferAttributes()):
                fields.append({"name": a.name(), "type": orjson.loads(a.dataType().json()), "nullable": a.nullable(), "metadata": {}})
            return
        for c in _seq(e.children()):
            walk(c)

    for e in _seq(node.aggregateExpressions()):
        walk(e)
    return {"type": "struct", "fields": fields}


def _key_schema(exprs: list[Any]) -> SchemaJson:
    return {"type": "struct", "fields": [{"name": str(e.toString()), "type": orjson.loads(e.dataType().json()), "nullable": e.nullable(), "metadata": {}} for e in exprs]}


def shape(writer: DataStreamWriter) -> NewQuery:
    """The changed query's shape (sources, stateful operators with key/value schemas,
    watermark delays, sink format/path, output mode, query name, restored confs' session
    values). Reads the analyzed plan only: no batch runs, nothing is written."""
    jw = writer._jwrite
    ds = private_field(jw, "ds")
    plan = ds.queryExecution().analyzed()
    sources: list[NewSource] = []
    operators: list[NewOperator] = []
    delays: list[int] = []

    def walk(n: Any) -> None:  # pre-order: Spark numbers stateful operators from the sink down
        name = n.nodeName()
        if name == "StreamingRelation":
            d = n.dataSource()
            opts = scala_map(d.options())
            kind = "file" if "FileSource[" in n.toString() else str(d.className()).lower()
            sources.append(NewSource(kind, opts.get("path"), opts, _source_name(n)))
        elif name in ("StreamingRelationV2", "StreamingDataSourceV2Relation", "StreamingDataSourceV2ScanRelation"):
            text = n.toString()
            short = text.split(",")[1].strip() if name == "StreamingRelationV2" and "," in text else text
            sources.append(NewSource(short.lower(), None, {}, _source_name(n) if name == "StreamingRelationV2" else None))
        elif name == "EventTimeWatermark":
            ms = _delay_ms(str(n.delay().toString()))
            if ms is not None:
                delays.append(ms)
        elif n.isStreaming() and name in OPERATOR_NAMES:
            if name == "Join":
                kids = _seq(n.children())
                if not all(k.isStreaming() for k in kids):
                    name = ""
            if name == "Aggregate":
                operators.append(NewOperator(OPERATOR_NAMES[name], _key_schema(_seq(n.groupingExpressions())), _agg_value_schema(n)))
            elif name in ("Deduplicate", "DeduplicateWithinWatermark"):
                operators.append(NewOperator(OPERATOR_NAMES[name], _key_schema(_seq(n.keys())), None))
            elif name:
                operators.append(NewOperator(OPERATOR_NAMES[name]))
        for c in _seq(n.children()):
            walk(c)

    walk(plan)
    opts = scala_map(private_field(jw, "extraOptions"))
    mode = str(private_field(jw, "outputMode").toString()).lower()
    conf = writer._spark.conf
    return NewQuery(
        sources=tuple(sources),
        operators=tuple(operators),
        sink_format=str(private_field(jw, "source")),
        sink_path=opts.get("path"),
        output_mode=mode,
        query_name=opts.get("queryName") or _opt(private_field(jw, "extraOptions"), "queryName"),
        watermark_delays_ms=tuple(delays),
        conf={k: v for k in RESTORED_CONFS if (v := conf.get(k, None)) is not None},
    )


def _source_name(relation: Any) -> str | None:
    """The name a streaming relation was given with ``DataStreamReader.name`` (Spark 4.2+:
    ``HasStreamingSourceIdentifyingName.sourceIdentifyingName().nameOpt()``); None for an
    unnamed source, and on a Spark without source names (the JVM has no such method)."""
    from py4j.protocol import Py4JError

    try:
        name = relation.sourceIdentifyingName().nameOpt()
    except Py4JError:
        return None
    return str(name.get()) if name.isDefined() else None


def _opt(m: Any, key: str) -> str | None:
    try:
        v = m.get(key)
        return str(v.get()) if v.isDefined() else None
    except Exception:  # noqa: BLE001 - a missing key is not an error
        return None
