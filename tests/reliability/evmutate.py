"""Line mutations for fuzzing recordings (streamwatch JSONL) and Spark event logs.

The bases are real: the recorded flights run the dashboard tests replay
(``tests/tui/data/flights_run.jsonl``), and the same events written as Spark's
``EventLoggingListener`` writes them (``{"Event":"…StreamingQueryListener$QueryProgressEvent",
"progress":{…}}`` between application events and unrelated job/stage events).
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson
from hypothesis import strategies as st

RECORDING = Path(__file__).resolve().parents[1] / "tui" / "data" / "flights_run.jsonl"
PREFIX = "org.apache.spark.sql.streaming.StreamingQueryListener$"
_SPARK_KIND = {"started": "QueryStartedEvent", "progress": "QueryProgressEvent", "idle": "QueryIdleEvent", "terminated": "QueryTerminatedEvent"}


def recording_lines() -> list[bytes]:
    """The recording's lines (each ending in ``\\n``)."""
    return RECORDING.read_bytes().splitlines(keepends=True)


def event_key(kind: str, event: dict) -> tuple:
    """What identifies one listener event across formats: kind, query id, run id, batch id."""
    return (kind, event.get("id"), event.get("runId"), event.get("batchId"))


def eventlog_lines() -> tuple[list[bytes], list[tuple]]:
    """(lines of a Spark event log holding the recording's events, their keys in order)."""
    out = [
        orjson.dumps({"Event": "SparkListenerLogStart", "Spark Version": "4.2.0"}),
        orjson.dumps({"Event": "SparkListenerApplicationStart", "App Name": "flights", "App ID": "local-1767261600000", "Timestamp": 1767261600000, "User": "root"}),
        orjson.dumps({"Event": "SparkListenerEnvironmentUpdate", "JVM Information": {}, "Spark Properties": {"spark.master": "local[2]", "spark.app.name": "flights", "spark.hadoop.fs.s3a.secret.key": "s3cr3t"}}),
    ]
    keys = []
    for i, raw in enumerate(recording_lines()):
        d = orjson.loads(raw)
        kind, ev = d.get("kind"), d.get("event")
        if kind not in _SPARK_KIND:
            continue
        cls = PREFIX + _SPARK_KIND[kind]
        out.append(orjson.dumps({"Event": cls, "progress": ev} if kind == "progress" else {"Event": cls, **ev}))
        keys.append(event_key(kind, ev))
        if i % 3 == 0:
            out.append(orjson.dumps({"Event": "SparkListenerJobStart", "Job ID": i, "Submission Time": 1767261600000 + i, "Stage Infos": [], "Stage IDs": []}))
    out.append(orjson.dumps({"Event": "SparkListenerApplicationEnd", "Timestamp": 1767261700000}))
    return [ln + b"\n" for ln in out], keys


def line_event_key(raw: bytes, fmt: str) -> tuple | None:
    """The event key of an intact line (None for headers and non-streaming lines)."""
    d = orjson.loads(raw)
    if fmt == "recording":
        return event_key(d["kind"], d["event"]) if d.get("kind") in _SPARK_KIND else None
    cls = d.get("Event", "")
    if not cls.startswith(PREFIX):
        return None
    kind = {v: k for k, v in _SPARK_KIND.items()}[cls[len(PREFIX):]]
    return event_key(kind, d["progress"] if kind == "progress" else d)


def _bad_json_type(fmt: str, kind_cls: str) -> st.SearchStrategy[bytes]:
    values = st.sampled_from([b"[]", b'"x"', b"5", b"null", b"true", b"{}", b'{"id":5}', b'{"id":null,"runId":[]}'])
    if fmt == "recording":
        return values.map(lambda v: b'{"v":1,"kind":"' + kind_cls.encode() + b'","t":1,"event":' + v + b"}")
    return values.map(lambda v: b'{"Event":"' + PREFIX.encode() + kind_cls.encode() + b'","progress":' + v + b',"id":' + v + b"}")


@st.composite
def line_op(draw, fmt: str):
    """One replacement for a line: (op name, new bytes or None for 'truncate at fraction')."""
    op = draw(st.sampled_from(["garbage", "truncate", "unknown", "newer", "not_object", "nested", "huge", "wrong_types", "crlf", "enormous", "drop_field", "empty"]))
    spark_kinds = list(_SPARK_KIND.values())
    kinds = list(_SPARK_KIND) if fmt == "recording" else spark_kinds
    if op == "garbage":
        return op, draw(st.binary(min_size=1, max_size=200)).replace(b"\n", b" ")
    if op == "truncate":
        return op, draw(st.floats(0.01, 0.99))
    if op == "unknown":
        if fmt == "recording":
            return op, b'{"v":1,"kind":"' + draw(st.sampled_from(["checkpointed", "x", "", "header2"])).encode() + b'","t":1,"event":{}}'
        return op, b'{"Event":"' + draw(st.sampled_from([PREFIX + "QueryFutureEvent", PREFIX + "QueryProgress", "com.acme.MyEvent", PREFIX])).encode() + b'","x":1}'
    if op == "newer":
        return op, (b'{"v":2,"kind":"progress","t":1,"event":{"id":"a","runId":"b"}}' if fmt == "recording" else b'{"Event":"' + PREFIX.encode() + b'QueryProgressEvent"')
    if op == "not_object":
        prefix = b"" if fmt == "recording" else b'"' + PREFIX.encode() + b'QueryIdleEvent" '
        return op, prefix + draw(st.sampled_from([b"[1,2]", b'"x"', b"null", b"1e400", b"-", b"{", b"}"]))
    if op == "nested":
        depth = draw(st.integers(1, 50_000))
        body = b"[" * depth + b"]" * depth
        if fmt == "recording":
            return op, b'{"v":1,"kind":"progress","t":1,"event":' + body + b"}"
        return op, b'{"Event":"' + PREFIX.encode() + b'QueryProgressEvent","progress":' + body + b"}"
    if op == "huge":
        return op, draw(st.sampled_from([b"99999999999999999999999", b"-1", b"1e400", b"9223372036854775808", b"NaN", b"Infinity", b"-0"]))
    if op == "wrong_types":
        return op, draw(_bad_json_type(fmt, draw(st.sampled_from(kinds))))
    if op == "crlf":
        return op, None
    if op == "enormous":
        size = draw(st.integers(1, 2 << 20))
        if fmt == "recording":
            return op, b'{"v":1,"kind":"started","t":1,"event":{"id":"big","runId":"big","name":"' + b"n" * size + b'","timestamp":null}}'
        return op, b'{"Event":"' + PREFIX.encode() + b'QueryStartedEvent","id":"big","runId":"big","name":"' + b"n" * size + b'","timestamp":null}'
    if op == "drop_field":
        return op, draw(st.sampled_from([b"id", b"runId", b"event", b"progress", b"kind", b"v", b"Event", b"batchId", b"timestamp"]))
    return op, b""  # empty line


def apply_op(raw: bytes, op: str, arg) -> bytes:
    """The mutated line (with its newline, except where the op removes it)."""
    body = raw.rstrip(b"\n")
    if op == "truncate":
        return body[: max(1, int(len(body) * arg))] + b"\n"
    if op == "huge":
        nums = list(re.finditer(rb"(?<=:)-?\d+(\.\d+)?", body))
        if not nums:
            return raw
        n = nums[len(nums) // 2]
        return body[: n.start()] + arg + body[n.end() :] + b"\n"
    if op == "crlf":
        return body + b"\r\n"
    if op == "drop_field":
        try:
            d = orjson.loads(body)
        except orjson.JSONDecodeError:
            return raw
        key = arg.decode()
        if isinstance(d, dict):
            d.pop(key, None)
            for v in d.values():
                if isinstance(v, dict):
                    v.pop(key, None)
        return orjson.dumps(d) + b"\n"
    return arg + b"\n"


def mutated_lines(draw, base: list[bytes], fmt: str) -> tuple[list[bytes], set[int], bool]:
    """(new lines, indices of base lines left intact, whether the last line lost its newline)."""
    ops = draw(st.dictionaries(st.integers(0, len(base) - 1), line_op(fmt), max_size=6), label="line ops")
    inserts = draw(st.lists(st.tuples(st.integers(0, len(base)), line_op(fmt)), max_size=3), label="inserted lines")
    lines = list(base)
    intact = set(range(len(base)))
    for i, (op, arg) in ops.items():
        new = apply_op(lines[i], op, arg)
        if new != lines[i]:
            lines[i] = new
            if op != "crlf":  # a CRLF line is still the same event
                intact.discard(i)
    tagged = [(i, ln) for i, ln in enumerate(lines)]
    for pos, (op, arg) in sorted(inserts, reverse=True):
        if op in ("truncate", "huge", "crlf", "drop_field"):
            continue
        tagged.insert(pos, (-1, apply_op(b"", op, arg)))
    cut_last = draw(st.booleans(), label="last line cut (still being written)")
    if cut_last and tagged:
        i, ln = tagged[-1]
        tagged[-1] = (i, ln[: max(0, len(ln) // 2)])
        intact.discard(i)
    return [ln for _, ln in tagged], {i for i in intact}, cut_last
