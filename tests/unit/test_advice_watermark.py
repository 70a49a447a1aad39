"""``advise-watermark-delay`` (streamwatch.analysis.advice_watermark.watermark_delay) on progress
events written here in ``StreamingQueryProgress.json``'s shape (``eventTime`` min/max/watermark
as Spark formats them, ``stateOperators[].numRowsDroppedByWatermark``) and through the CLI with
a recording: every number asserted is computed here from the event times this file wrote."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

from streamwatch.analysis.advice import Confidence, Verdict
from streamwatch.analysis.advice_watermark import delay_text, watermark_delay
from streamwatch.cli import main
from streamwatch.model.events import QueryProgress

T0 = 1_790_000_000_000
QID = "0a0d0v15-0000-4000-8000-000000000039"


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _p(batch: int, lo: int, hi: int, wm: int, dropped: int = 0) -> dict:
    """A progress event of ``batch`` whose rows' event times span [T0+lo, T0+hi] ms, run with
    watermark T0+wm (0: Spark's epoch, no watermark yet)."""
    return {"id": QID, "runId": "r1", "batchId": batch, "timestamp": _iso(T0), "numInputRows": 10,
            "durationMs": {"triggerExecution": 100},
            "eventTime": {"min": _iso(T0 + lo), "max": _iso(T0 + hi), "avg": _iso(T0 + lo),
                          "watermark": _iso(T0 + wm if wm else 0)},
            "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 5, "numShufflePartitions": 2,
                                "numRowsDroppedByWatermark": dropped}]}


def _judge(events: list[dict], delay_ms: int | None = None):
    return watermark_delay([QueryProgress.from_dict(e) for e in events], delay_ms=delay_ms)


def _ev(a) -> dict[str, int | float]:
    return {e.what: e.value for e in a.evidence}


# a 60 s delay; batch k holds event times [10 s·k, 10 s·k + 9 s] and one row 2 s behind 10 s·k
LONG = [_p(0, 0, 9_000, 0), _p(1, 8_000, 19_000, 9_000 - 60_000), _p(2, 18_000, 29_000, 19_000 - 60_000),
        _p(3, 28_000, 39_000, 29_000 - 60_000)]


def test_an_over_long_delay_is_advised_down_to_the_observed_lateness_with_a_margin():
    a = _judge(LONG)
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY)
    ev = _ev(a)
    assert ev["observed max lateness"] == 1_000  # 9,000 − 8,000: the running max before batch 1 − its min
    assert ev["watermark delay (inferred)"] == 60_000  # 9,000 − (9,000 − 60,000)
    assert ev["smallest event time above the watermark"] == 8_000 - (9_000 - 60_000)
    assert ev["rows dropped by the watermark"] == 0
    assert a.target == 2_000  # 1.5 × 1,000 ms, up to the ladder's 2 s
    assert a.action is not None and 'withWatermark(col, "2 seconds")' in a.action
    assert a.effect is not None and "fewer state rows" in a.effect


def test_rows_dropped_by_the_watermark_advise_a_longer_delay():
    # a 5 s delay: batch 2's oldest row is 25 s behind batch 1's newest event; Spark dropped 7 rows
    events = [_p(0, 0, 10_000, 0), _p(1, 10_000, 20_000, 5_000), _p(2, -5_000, 30_000, 15_000, dropped=7)]
    a = _judge(events)
    assert (a.verdict, a.confidence) == (Verdict.CHANGE, Confidence.LIKELY)
    ev = _ev(a)
    assert ev["rows dropped by the watermark"] == 7
    assert ev["observed lateness of the batches that dropped rows"] == 25_000  # 20,000 − (−5,000)
    assert ev["watermark delay (inferred)"] == 5_000
    assert a.target == 60_000  # 1.5 × 25 s = 37.5 s, up to the ladder's 1 minute
    assert "7 rows dropped" in a.summary and "25,000 ms" in a.summary


def test_a_delay_close_to_the_lateness_is_kept():
    # lateness 4 s, delay 10 s: the advised 6 s (→ 10 s on the ladder) is not at most half the delay
    events = [_p(0, 0, 10_000, 0), _p(1, 6_000, 20_000, 0), _p(2, 16_000, 30_000, 10_000)]
    a = _judge(events)
    assert (a.verdict, a.confidence, a.target, a.action) == (Verdict.KEEP, Confidence.MEASURED, None, None)
    assert "10,000 ms the observed max lateness (4,000 ms) needs" in a.summary
    assert _ev(a)["observed max lateness"] == 4_000 and _ev(a)["watermark delay (inferred)"] == 10_000


def test_a_given_delay_replaces_the_inferred_one():
    a = _judge(LONG, delay_ms=2_000)
    assert a.verdict is Verdict.KEEP and _ev(a)["watermark delay"] == 2_000
    assert "watermark delay (inferred)" not in _ev(a)


def test_without_event_time_stats_the_rule_says_unknown_and_what_it_needs():
    no_wm = [{"id": QID, "runId": "r1", "batchId": b, "numInputRows": 3} for b in range(3)]
    for events in ([], no_wm, LONG[:1]):
        a = _judge(events)
        assert (a.verdict, a.confidence, a.target) == (Verdict.UNKNOWN, Confidence.UNKNOWN, None)
        assert a.needs is not None and "--recording" in a.needs


def test_the_last_progress_of_a_batch_id_counts_once():
    # Spark reports a batch once; a recording of two listeners may hold it twice
    a = _judge([*LONG, _p(3, 28_000, 39_000, 29_000 - 60_000, dropped=0)])
    assert _ev(a)["observed max lateness"] == 1_000 and "over 4 batches" in a.summary


def test_delay_text_is_what_with_watermark_accepts():
    assert [delay_text(x) for x in (500, 1_000, 2_000, 60_000, 3_600_000, 86_400_000, 90_000)] == [
        "500 milliseconds", "1 second", "2 seconds", "1 minute", "1 hour", "1 day", "90 seconds"]


def test_the_cli_reports_the_rule_from_a_recording(tmp_path: Path):
    cp = tmp_path / "cp"
    for d in ("offsets", "commits"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    for b in range(4):
        meta = {"batchWatermarkMs": max(0, T0 + b * 10_000 - 1_000 - 60_000) if b else 0, "batchTimestampMs": T0 + b,
                "conf": {}}
        (cp / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + str(b))
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    rec = tmp_path / "events.jsonl"
    rec.write_text("\n".join(json.dumps({"v": 1, "kind": "progress", "t": 0, "event": e}) for e in LONG) + "\n")
    r = CliRunner().invoke(main, ["advise", str(cp), "--recording", str(rec), "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    assert r.exit_code == 1  # a rule advises a change
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-watermark-delay")
    ev = {e["what"]: e for e in a["evidence"]}
    assert (a["verdict"], a["target"]) == ("change", 2_000)
    assert ev["watermark"] == {"what": "watermark", "value": T0 + 29_000 - 60_000, "unit": "epoch ms",
                               "source": "offsets/3 batchWatermarkMs"}
    human = CliRunner().invoke(main, ["advise", str(cp), "--recording", str(rec)]).stdout
    assert "advise-watermark-delay  [change, likely]  watermark delay (withWatermark(col, delay))" in human
    no_rec = CliRunner().invoke(main, ["advise", str(cp), "--json"])
    b = next(f for f in json.loads(no_rec.stdout)["findings"] if f["code"] == "advise-watermark-delay")
    assert (b["verdict"], b["needs"] is not None) == ("unknown", True)

