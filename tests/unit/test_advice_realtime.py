"""``advise-real-time-mode`` (streamwatch.analysis.advice_realtime.real_time_mode) on checkpoints
written here in Spark's on-disk format (``offsets/N`` with a Kafka or file offset, ``commits/N``
v1 or v3 with a named sink, ``state/0/``) and on progress dicts in the shape of
``StreamingQueryProgress.json``: every number asserted is one this file wrote, and the trigger is
the one given, never inferred."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamwatch.analysis.advice import Confidence, Verdict, progress_durations
from streamwatch.analysis.advice_realtime import ADVISED_INTERVAL, query_shape, real_time_mode
from streamwatch.analysis.triggers import parse_trigger
from streamwatch.checkpoint import read_checkpoint
from streamwatch.model.events import QueryProgress

QID = "0a0d0v15-0000-4000-8000-000000000039"
KAFKA = '{"clicks":{"0":10,"1":12,"2":9}}'
KAFKA_SINK = "org.apache.spark.sql.kafka010.KafkaSourceProvider$KafkaTable@5b2f4c1"
T0 = 1_790_000_000_000


def write_cp(root: Path, offset: str = KAFKA, state: bool = False, sink_v3: str | None = None) -> Path:
    """A 3-batch checkpoint whose one source's offset is ``offset``; ``state`` adds
    ``state/0/0/``; ``sink_v3`` (a provider class) writes v3 commits naming it the active sink."""
    cp = root / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    for b in range(3):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + b * 1_000, "conf": {}}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + offset)
        commit = {"nextBatchWatermarkMs": 0}
        if sink_v3:
            commit["sinkMetadataMap"] = {"out": {"sinkName": "out", "commitOffset": "-", "providerName": sink_v3,
                                                 "apiVersion": "DSv2", "isActive": True}}
        (cp / "commits" / str(b)).write_text(("v3\n" if sink_v3 else "v1\n") + json.dumps(commit))
    if state:
        (cp / "state" / "0" / "0").mkdir(parents=True)
    return cp


def prog(batch: int, ms: int = 300, spacing: int = 1_000, sink: str = KAFKA_SINK, source: str = "KafkaV2[Subscribe[clicks]]",
         end: str = KAFKA, latest: str = KAFKA) -> QueryProgress:
    ts = T0 + batch * spacing
    stamp = f"2026-09-21T{(ts // 3_600_000) % 24:02d}:{(ts // 60_000) % 60:02d}:{(ts // 1000) % 60:02d}.{ts % 1000:03d}Z"
    return QueryProgress.from_dict({"id": QID, "runId": "r", "batchId": batch, "timestamp": stamp,
                                    "durationMs": {"triggerExecution": ms}, "batchDuration": ms,
                                    "sources": [{"description": source, "endOffset": end, "latestOffset": latest}],
                                    "sink": {"description": sink}})


def judge(cp: Path | None, progress: list[QueryProgress], trigger: str | None = "processingTime=1s"):
    return real_time_mode(parse_trigger(trigger) if trigger else None, read_checkpoint(cp) if cp else None,
                          progress, progress_durations(progress))


def _ev(a) -> dict[str, int | float]:
    return {e.what: e.value for e in a.evidence}


def test_a_stateless_kafka_to_kafka_micro_batch_query_is_advised_real_time_mode(tmp_path):
    a = judge(write_cp(tmp_path), [prog(b) for b in range(4)])
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, Confidence.LIKELY, None)
    ev = _ev(a)
    assert (ev["Kafka partitions"], ev["median batch time"], ev["spacing of batch starts"]) == (3, 300, 1_000)
    assert ev["trigger interval"] == 1_000
    assert "about 800 ms (up to 1,300 ms)" in a.summary  # 1,000 / 2 + 300
    assert a.action is not None and f'trigger(realTime="{ADVISED_INTERVAL}")' in a.action and "one core per Kafka partition (3)" in a.action


def test_the_sink_comes_from_the_progress_or_a_v3_commit_and_is_unknown_otherwise(tmp_path):
    assert query_shape(read_checkpoint(write_cp(tmp_path / "a")), [prog(0)]).sink == "KafkaTable"
    v3 = read_checkpoint(write_cp(tmp_path / "b", sink_v3="org.apache.spark.sql.execution.streaming.sources.ForeachWriterTable"))
    shape = query_shape(v3, [])
    assert (shape.sink, shape.sink_from) == ("ForeachWriterTable", "commits/2 sinkMetadataMap")
    a = judge(write_cp(tmp_path / "c"), [])
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)
    assert a.needs is not None and "sink" in a.needs


@pytest.mark.parametrize("sink", ["org.apache.spark.sql.execution.datasources.noop.NoopTable$@1",
                                  "DeltaSink[/tmp/out]", "ForeachBatchSink"])
def test_an_unsupported_sink_is_kept(tmp_path, sink):
    a = judge(write_cp(tmp_path), [prog(b, sink=sink) for b in range(3)])
    assert a.verdict is Verdict.KEEP and "Kafka, foreach or console only" in a.summary


def test_a_file_source_is_kept_saying_why(tmp_path):
    a = judge(write_cp(tmp_path, offset='{"logOffset":2}'), [prog(b, source="FileStreamSource[file:/in]") for b in range(3)])
    assert a.verdict is Verdict.KEEP and "reads a file source (offsets/2)" in a.summary


def test_a_stateful_query_is_kept(tmp_path):
    a = judge(write_cp(tmp_path, state=True), [prog(b) for b in range(3)])
    assert a.verdict is Verdict.KEEP and "state/ in the checkpoint" in a.summary


@pytest.mark.parametrize(("spec", "words"), [("realTime=5s", "already runs in real-time mode"),
                                             ("availableNow", "one-shot"), ("continuous=1s", "continuous")])
def test_triggers_where_real_time_mode_does_not_apply_are_kept(tmp_path, spec, words):
    a = judge(write_cp(tmp_path), [prog(b) for b in range(3)], spec)
    assert a.verdict is Verdict.KEEP and words in a.summary


def test_a_progress_event_read_past_its_latest_offset_proves_real_time_mode_without_the_trigger(tmp_path):
    past = prog(2, end='{"clicks":{"0":20,"1":12,"2":9}}', latest=KAFKA)
    a = judge(write_cp(tmp_path), [prog(0), prog(1), past], None)
    assert a.verdict is Verdict.KEEP and "read past its source's latest offset" in a.summary


def test_without_the_trigger_the_verdict_is_unknown(tmp_path):
    a = judge(write_cp(tmp_path), [prog(b) for b in range(3)], None)
    assert a.verdict is Verdict.UNKNOWN and a.needs is not None and "--trigger" in a.needs


def test_without_batches_measured_the_verdict_is_unknown(tmp_path):
    cp = read_checkpoint(write_cp(tmp_path))
    a = real_time_mode(parse_trigger("1s"), cp, [prog(0)], ())
    assert a.verdict is Verdict.UNKNOWN and a.needs is not None and "committed batches" in a.needs


def test_sources_come_from_the_progress_without_a_checkpoint():
    a = judge(None, [prog(b) for b in range(3)])
    assert a.verdict is Verdict.CHANGE and "progress sources[].description: kafka" in [e.source for e in a.evidence][0]
