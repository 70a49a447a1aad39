"""``advise-max-offsets-per-trigger`` (streamwatch.analysis.advice_offsets) on checkpoints written
here in Spark's on-disk layout for a Kafka source (``sources/0/0`` the initial offsets as
``KafkaSourceInitialOffsetWriter`` writes them: a zero byte, ``v1``, JSON; ``offsets/N`` with a
``KafkaSourceOffset`` line; ``commits/N``): every record count asserted is one this file wrote.
The broker's backlog is given as the adapter would measure it (the real broker: the Spark test
and the CLI test below with ``--bootstrap`` pointed at a closed port)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from streamwatch.analysis.advice import BatchDuration, Confidence, Verdict
from streamwatch.analysis.advice_offsets import (
    KafkaBacklog,
    max_offsets_per_trigger,
    parse_initial_offsets,
    read_kafka_batches,
)
from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main

T0 = 1_790_000_000_000
TOPIC = "t"


def write_cp(root: Path, reads: list[tuple[int, int]], start: tuple[int, int] = (0, 0), spacing_ms: int = 1000) -> Path:
    """A Kafka checkpoint of one topic of two partitions starting at ``start``; batch N reads
    ``reads[N]`` records (partition 0, partition 1), planned ``spacing_ms`` apart."""
    cp = root / "cp"
    for d in ("offsets", "commits", "sources/0"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": "0a0d0v15-0000-4000-8000-000000000039"}))
    (cp / "sources" / "0" / "0").write_bytes(b"\x00v1\n" + json.dumps({TOPIC: {"0": start[0], "1": start[1]}}).encode())
    at = list(start)
    for b, (r0, r1) in enumerate(reads):
        at = [at[0] + r0, at[1] + r1]
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + b * spacing_ms, "conf": {}}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n"
                                             + json.dumps({TOPIC: {"0": at[0], "1": at[1]}}))
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return cp


def _advise(cp: Path, durations=(), backlogs=None):
    c = read_checkpoint(str(cp))
    return max_offsets_per_trigger(read_kafka_batches(str(cp), c), durations, backlogs, c)


def test_records_per_batch_are_the_offsets_advanced_from_the_initial_offsets(tmp_path):
    cp = write_cp(tmp_path, [(500, 700), (10, 12), (8, 9)], start=(100, 40))
    (r,) = read_kafka_batches(str(cp), read_checkpoint(str(cp)))
    assert [(b.batch_id, b.records) for b in r.batches] == [(0, 1200), (1, 22), (2, 17)]
    assert r.batches[-1].end == {TOPIC: {"0": 618, "1": 761}}


def test_a_purged_offsets_log_does_not_count_from_the_initial_offsets(tmp_path):
    cp = write_cp(tmp_path, [(500, 700), (10, 12), (8, 9), (5, 5)], start=(100, 40))
    for b in (0, 1):  # minBatchesToRetain purged them
        (cp / "offsets" / str(b)).unlink()
        (cp / "commits" / str(b)).unlink()
    (r,) = read_kafka_batches(str(cp), read_checkpoint(str(cp)))
    assert [(b.batch_id, b.records) for b in r.batches] == [(3, 10)]  # batch 2's start (offsets/1) is gone


def test_the_initial_offsets_file_is_parsed_as_spark_writes_it():
    assert parse_initial_offsets(b'\x00v1\n{"t":{"0":5,"1":0}}') == {"t": {"0": 5, "1": 0}}
    assert parse_initial_offsets(b"not a log") is None


def test_one_huge_first_batch_advises_twice_the_later_batches_records(tmp_path):
    cp = write_cp(tmp_path, [(50_000, 50_000), (1_000, 1_000), (1_100, 1_000), (900, 1_000)])
    (a,) = _advise(cp)
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, Confidence.LIKELY, 4_000)
    ev = {e.what: e for e in a.evidence}
    assert ev["records read by the first batch"].value == 100_000
    assert ev["records read by the first batch"].source == "offsets/0 − sources/0/0 initial offsets"
    assert ev["median records of the later batches"].value == 2_000
    assert '.option("maxOffsetsPerTrigger", 4000)' in (a.action or "")


def test_a_first_batch_slow_by_ten_times_and_above_the_target_is_huge(tmp_path):
    cp = write_cp(tmp_path, [(3_000, 3_000), (1_000, 1_000), (1_000, 1_000)])
    times = [BatchDuration(0, 20_000, "t"), BatchDuration(1, 1_000, "t"), BatchDuration(2, 1_500, "t")]
    (a,) = _advise(cp, times)
    assert (a.verdict, a.target) == (Verdict.CHANGE, 4_000)
    (warm,) = _advise(write_cp(tmp_path / "w", [(1_500, 1_500), (1_000, 1_000), (1_000, 1_000)]), times)
    assert warm.verdict is Verdict.UNKNOWN  # slow, but the limit it would advise (4,000) reads it all


def test_without_a_broker_the_backlog_verdict_is_unknown_and_says_what_it_needs(tmp_path):
    (a,) = _advise(write_cp(tmp_path, [(500, 500)] * 5))
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)
    assert a.needs is not None and "--bootstrap" in a.needs


def test_a_binding_limit_over_a_backlog_that_does_not_drain_advises_raising_it(tmp_path):
    cp = write_cp(tmp_path, [(500, 500)] * 6, spacing_ms=2_000)
    # batch 3 planned at T0+6 s with 5,000 records behind; 30 s later 9,000 behind, 24,000 landed
    bl = KafkaBacklog("0", T0 + 36_000, behind=9_000, window_batch=3, window_from_ms=T0 + 6_000,
                      behind_then=5_000, landed=24_000)
    (a,) = _advise(cp, backlogs={"0": bl})
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY)
    assert a.target == 3_200  # 2 × 24,000 records / 30 s × 2 s
    assert {e.what: e.value for e in a.evidence}["backlog"] == 9_000


def test_a_draining_backlog_is_kept_measured(tmp_path):
    cp = write_cp(tmp_path, [(500, 500)] * 6)
    bl = KafkaBacklog("0", T0 + 10_000, behind=2_000, window_batch=3, window_from_ms=T0 + 3_000,
                      behind_then=5_000, landed=1_000)
    (a,) = _advise(cp, backlogs={"0": bl})
    assert (a.verdict, a.confidence) == (Verdict.KEEP, Confidence.MEASURED)


def test_a_backlog_not_draining_under_varying_batches_is_not_a_limit(tmp_path):
    cp = write_cp(tmp_path, [(500, 500), (400, 500), (600, 500), (300, 500), (500, 700)])
    bl = KafkaBacklog("0", T0 + 10_000, behind=9_000, window_batch=2, window_from_ms=T0 + 2_000,
                      behind_then=5_000, landed=10_000)
    (a,) = _advise(cp, backlogs={"0": bl})
    assert (a.verdict, a.confidence, a.target) == (Verdict.KEEP, Confidence.LIKELY, None)


def test_a_query_without_a_kafka_source_gets_no_finding(tmp_path):
    cp = tmp_path / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n5')
    (cp / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert _advise(cp) == ()


def test_the_cli_names_a_broker_that_does_not_answer(tmp_path):
    cp = write_cp(tmp_path, [(500, 500)] * 5)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = CliRunner().invoke(main, ["advise", str(cp), "--bootstrap", f"127.0.0.1:{port}", "--json"])
    assert r.exit_code in (0, 1), r.output
    (a,) = [f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-max-offsets-per-trigger"]
    assert a["verdict"] == "unknown"
    assert f"127.0.0.1:{port} did not answer" in a["summary"]
