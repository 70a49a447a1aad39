"""``advise-trigger-interval`` (streamwatch.analysis.advice_trigger.trigger_interval) on checkpoints
written here in Spark's on-disk format (``offsets/N`` with its ``batchTimestampMs``,
``commits/N`` with a chosen modification time) and on the CLI: every number asserted is one
this file wrote, and the trigger is the one given (``--trigger``), never inferred."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.analysis.advice import BatchDuration, Confidence, Verdict, checkpoint_durations
from streamwatch.analysis.advice_trigger import interval_text, trigger_interval
from streamwatch.analysis.triggers import parse_trigger
from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main

T0 = 1_790_000_000_000


def write_cp(root: Path, spacing_ms: int, took_ms: int, batches: int = 4) -> Path:
    """A stateless checkpoint of ``batches`` batches planned ``spacing_ms`` apart, each committed
    ``took_ms`` after its plan."""
    cp = root / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": "0a0d0v15-0000-4000-8000-000000000039"}))
    for b in range(batches):
        planned = T0 + b * spacing_ms
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": planned, "conf": {}}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + str(b))
        commit = cp / "commits" / str(b)
        commit.write_text('v1\n{"nextBatchWatermarkMs":0}')
        done = (planned + took_ms) * 1_000_000
        os.utime(commit, ns=(done, done))
    return cp


def _judge(root: Path, trigger: str | None, spacing_ms: int, took_ms: int, idle: int | None = None):
    cp = write_cp(root, spacing_ms, took_ms)
    c = read_checkpoint(cp)
    mtimes = {int(p.name): p.stat().st_mtime_ns // 1_000_000 for p in (cp / "commits").iterdir()}
    return trigger_interval(parse_trigger(trigger) if trigger else None, c, checkpoint_durations(c, mtimes), idle)


def _ev(a) -> dict[str, int | float]:
    return {e.what: e.value for e in a.evidence}


def test_batches_overrunning_the_interval_are_advised_one_and_a_half_times_their_median(tmp_path):
    a = _judge(tmp_path, "500ms", spacing_ms=1_000, took_ms=1_000)  # back to back
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, Confidence.MEASURED, 2_000)
    assert _ev(a)["trigger interval"] == 500 and _ev(a)["median batch time"] == 1_000
    assert a.action is not None and 'processingTime="2s"' in a.action


def test_batches_within_the_interval_are_kept(tmp_path):
    a = _judge(tmp_path, "5s", spacing_ms=5_000, took_ms=1_000)
    assert (a.verdict, a.confidence, a.target, a.action) == (Verdict.KEEP, Confidence.MEASURED, None, None)


@pytest.mark.parametrize(("idle", "sure"), [(None, Confidence.LIKELY), (0, Confidence.LIKELY), (3, Confidence.MEASURED)])
def test_a_tiny_interval_on_an_idle_source_is_advised_the_spacing_of_its_batches(tmp_path, idle, sure):
    a = _judge(tmp_path, "100ms", spacing_ms=10_000, took_ms=200, idle=idle)
    assert (a.verdict, a.confidence, a.target) == (Verdict.CHANGE, sure, 10_000)
    assert _ev(a)["observed spacing of batch starts"] == 10_000
    assert "98 triggers find no data" in a.summary  # (10,000 − 200) ÷ 100
    assert a.effect is not None and "600 → 6 triggers a minute" in a.effect


def test_the_default_trigger_polls_every_10_ms_while_idle(tmp_path):
    a = _judge(tmp_path, "default", spacing_ms=30_000, took_ms=200)
    assert (a.verdict, a.target) == (Verdict.CHANGE, 30_000)
    assert "spark.sql.streaming.pollingDelay" in a.summary


def test_the_advised_idle_interval_stays_within_2_s_and_1_minute(tmp_path):
    assert _judge(tmp_path / "a", "100ms", spacing_ms=600, took_ms=100).target == 2_000
    assert _judge(tmp_path / "b", "1s", spacing_ms=3_600_000, took_ms=100).target == 60_000


def test_an_interval_above_1_s_is_not_judged_for_idle_polling(tmp_path):
    a = _judge(tmp_path, "2s", spacing_ms=60_000, took_ms=200)
    assert a.verdict is Verdict.KEEP


def test_a_busy_source_under_the_default_trigger_is_kept(tmp_path):
    a = _judge(tmp_path, "default", spacing_ms=1_000, took_ms=990)  # batches back to back, by design
    assert a.verdict is Verdict.KEEP


def test_without_the_trigger_the_rule_says_unknown_and_gives_the_spacing_as_evidence_only(tmp_path):
    a = _judge(tmp_path, None, spacing_ms=10_000, took_ms=200)
    assert (a.verdict, a.confidence, a.target, a.action) == (Verdict.UNKNOWN, Confidence.UNKNOWN, None, None)
    assert a.needs is not None and "--trigger" in a.needs
    assert _ev(a)["observed spacing of batch starts"] == 10_000 and "trigger interval" not in _ev(a)


@pytest.mark.parametrize("spec", ["availableNow", "once", "continuous=1s", "realTime"])
def test_triggers_without_a_polling_interval_are_not_judged(tmp_path, spec):
    a = _judge(tmp_path, spec, spacing_ms=10_000, took_ms=200)
    assert (a.verdict, a.confidence) == (Verdict.UNKNOWN, Confidence.UNKNOWN)


def test_no_batches_no_verdict():
    a = trigger_interval(parse_trigger("1s"), None, ())
    assert a.verdict is Verdict.UNKNOWN and a.needs is not None


def test_only_the_recent_batches_are_judged():
    old = [BatchDuration(b, 9_000, "progress durationMs.triggerExecution") for b in range(20)]
    new = [BatchDuration(b, 100, "progress durationMs.triggerExecution") for b in range(20, 30)]
    assert trigger_interval(parse_trigger("1s"), None, old + new).verdict is Verdict.KEEP


@pytest.mark.parametrize(("ms", "text"), [(500, "500ms"), (2_000, "2s"), (60_000, "1m"), (90_000, "90s")])
def test_interval_text_parses_back(ms, text):
    assert interval_text(ms) == text and parse_trigger(text).interval_ms == ms


def test_a_bad_trigger_exits_2_with_one_line(tmp_path):
    r = CliRunner().invoke(main, ["advise", str(tmp_path), "--trigger", "every 5 seconds"])
    assert r.exit_code == 2 and r.stdout == ""
    assert len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("streamwatch advise: --trigger: unknown trigger 'every 5 seconds'")


def test_the_cli_gives_the_trigger_finding_and_its_target_in_ms(tmp_path):
    cp = write_cp(tmp_path, 10_000, 200)
    r = CliRunner().invoke(main, ["advise", str(cp), "--trigger", "processingTime=100ms", "--json"])
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-trigger-interval")
    assert (r.exit_code, a["verdict"], a["target"]) == (1, "change", 10_000)
    r = CliRunner().invoke(main, ["advise", str(cp)])
    assert "advise-trigger-interval  [unknown, unknown]" in r.stdout and "needs: the trigger" in r.stdout
