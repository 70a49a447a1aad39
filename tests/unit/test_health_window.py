"""The health rules of :mod:`streamwatch.analysis.health_window`, one window per rule, built by
hand (the windows are the account: which batches committed when, what each lag sample said,
which runs failed)."""

from __future__ import annotations

from streamwatch.analysis.health_window import Health, HealthWindow, RunOutcome, backlog_of, judge_health
from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, SourceInput, SourceLag

T0 = 1_700_000_000_000
EVERY = 2_000


def _status(*, last: int | None = 3, committed: int | None = 3, in_flight: int | None = None, stuck: bool = False,
            idle: bool = False, cadence: int | None = EVERY) -> CheckpointStatus:
    return CheckpointStatus("id", "q", "/cp", T0, last, committed, in_flight, 1.0 if in_flight is not None else None,
                            cadence, stuck, idle, 30.0 if idle else None)


def _batch(b: int, files: int = 1) -> CheckpointBatch:
    return CheckpointBatch("id", "q", "/cp", b, T0 + b * EVERY, T0 + b * EVERY + 500, 500,
                           inputs=(SourceInput("0", "file", files=files, bytes=files * 10),))


def _lag(at_ms: int, backlog: int | None, lag_s: float | None, source: str = "0", kind: str = "file") -> SourceLag:
    return SourceLag("id", "q", "/cp", source, kind, at_ms, backlog, None, lag_s,
                     reason=None if backlog is not None else "folder not listed")


def _window(status: CheckpointStatus, batches=(0, 1, 2, 3), lags=(), runs=None, files: int = 1) -> HealthWindow:
    bs = tuple(_batch(b, files) for b in batches)
    return HealthWindow(T0 + 10 * EVERY, status, bs, tuple(lags), runs,
                        tuple((b.batch_id, b.committed_at_ms) for b in bs))


def test_ok_when_batches_commit_and_nothing_rises():
    v = judge_health(_window(_status(), lags=[_lag(T0, 1, 5.0), _lag(T0 + 1, 0, 0.0), _lag(T0 + 2, 1, 1.0)]))
    assert (v.health, v.backlog, v.commits, v.samples, v.batch_id, v.failed_runs) == (Health.OK, 1, 4, 3, 3, None)


def test_lagging_needs_every_one_of_the_last_three_samples_to_rise():
    rising = [_lag(T0 + i, 2, 10.0 + i) for i in range(3)]
    v = judge_health(_window(_status(), lags=rising))
    assert (v.health, v.since_ms, v.lag_s) == (Health.LAGGING, T0, 12.0)
    flat = [_lag(T0, 2, 10.0), _lag(T0 + 1, 2, 11.0), _lag(T0 + 2, 2, 11.0)]  # equal is not rising
    assert judge_health(_window(_status(), lags=flat)).health is Health.OK
    two = rising[1:]  # two samples are not enough evidence of a trend
    assert judge_health(_window(_status(), lags=two)).health is Health.OK
    drained = [*rising[:2], _lag(T0 + 2, 0, 12.0)]  # rising lag with nothing left waiting is not lagging
    assert judge_health(_window(_status(), lags=drained)).health is Health.OK


def test_lagging_on_one_source_of_two():
    lags = [_lag(T0 + i, 0, 0.0, "0") for i in range(3)] + [_lag(T0 + i, 4, 3.0 * i + 1, "1") for i in range(3)]
    v = judge_health(_window(_status(), lags=lags))
    assert v.health is Health.LAGGING and "source 1" in v.reason and v.backlog == 4


def test_stopped_when_the_in_flight_batch_is_stuck():
    v = judge_health(_window(_status(last=4, in_flight=4, stuck=True)))
    assert (v.health, v.batch_id) == (Health.STOPPED, 4)
    assert v.since_ms == T0 + 10 * EVERY - 1000  # planned in_flight_s (1 s) before now


def test_stopped_or_idle_when_nothing_is_planned_by_the_backlog():
    stopped = judge_health(_window(_status(idle=True), lags=[_lag(T0, 3, 40.0)]))
    assert (stopped.health, stopped.backlog, stopped.since_ms) == (Health.STOPPED, 3, T0 + 3 * EVERY + 500)
    idle = judge_health(_window(_status(idle=True), lags=[_lag(T0, 0, 0.0)]))
    assert (idle.health, idle.backlog, idle.since_ms) == (Health.IDLE, 0, T0 + 3 * EVERY + 500)


def test_the_reason_counts_each_source_in_its_own_unit():
    kafka = judge_health(_window(_status(idle=True), lags=[_lag(T0, 120, 40.0, "orders", "kafka")]))
    assert kafka.health is Health.STOPPED and kafka.reason.endswith("while 120 Kafka record(s) wait")
    both = judge_health(_window(_status(idle=True), lags=[_lag(T0, 3, 40.0), _lag(T0, 120, 9.0, "orders", "kafka")]))
    assert both.reason.endswith("while 3 file(s) and 120 Kafka record(s) wait") and both.backlog == 123
    ok = judge_health(_window(_status(), lags=[_lag(T0, 5, 1.0, "orders", "kafka")]))
    assert (ok.health, ok.reason) == (Health.OK, "batches commit; backlog 5 Kafka record(s)")


def test_unknown_says_which_evidence_is_missing():
    no_source = judge_health(_window(_status(idle=True)))
    assert no_source.health is Health.UNKNOWN and "no file or Kafka source" in no_source.reason
    unlisted = judge_health(_window(_status(idle=True), lags=[_lag(T0, None, None)]))
    assert unlisted.health is Health.UNKNOWN and "folder not listed" in unlisted.reason
    nothing = judge_health(_window(_status(last=None, committed=None, cadence=None), batches=()))
    assert (nothing.health, nothing.reason) == (Health.UNKNOWN, "no batch committed yet")
    one = judge_health(_window(_status(last=0, committed=0, cadence=None), batches=(0,)))
    assert one.health is Health.UNKNOWN and "cadence" in one.reason


def test_stalled_when_batches_commit_reading_nothing_while_files_wait():
    lags = [_lag(T0 + 2 * EVERY + i, 5, 20.0) for i in range(2)]
    v = judge_health(_window(_status(), lags=lags, files=0))
    assert (v.health, v.since_ms) == (Health.STALLED, T0 + 2 * EVERY)
    emptied = [*lags, _lag(T0 + 3 * EVERY, 0, 0.0)]  # a sample with nothing waiting: not stalled
    assert judge_health(_window(_status(), lags=emptied, files=0)).health is Health.OK


def test_failing_needs_two_runs_failed_on_the_in_flight_batch():
    status = _status(last=4, in_flight=4)
    commit3 = T0 + 3 * EVERY + 500
    runs = (RunOutcome("r1", T0, 3, True, "boom\nat line 1"),  # committed 3, then failed on 4
            RunOutcome("r2", commit3 + 10, None, True, "boom"),  # restarted, failed before any progress
            RunOutcome("r0", T0 - 99, None, True, "older"))  # failed before commits/3: another batch
    v = judge_health(_window(status, runs=runs))
    assert (v.health, v.failed_runs, v.since_ms, v.batch_id) == (Health.FAILING, 2, T0, 4)
    assert v.reason == "batch 4 failed in 2 runs, never committed: boom"
    once = judge_health(_window(status, runs=runs[:1]))
    assert (once.health, once.failed_runs) == (Health.OK, 1)
    clean = (RunOutcome("r1", T0, 3, False), RunOutcome("r2", commit3 + 10, None, False))
    assert judge_health(_window(status, runs=clean)).failed_runs == 0


def test_failing_reason_is_the_innermost_error_line_of_sparks_text():
    text = ("org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the "
            "Python worker: Traceback (most recent call last):\n  File \"u.py\", line 3, in boom\n"
            "    raise ValueError('marker')\nValueError: marker\n\tat org.apache.spark.X(Y.scala:1)")
    runs = (RunOutcome("a", T0, 3, True, text), RunOutcome("b", T0 + 9 * EVERY, None, True, text))
    v = judge_health(_window(_status(last=4, in_flight=4), runs=runs))
    assert v.reason == "batch 4 failed in 2 runs, never committed: ValueError: marker"


def test_failing_wins_over_stopped_and_no_runs_is_no_failing():
    status = _status(last=4, in_flight=4, stuck=True)
    runs = (RunOutcome("a", T0, 3, True, "x"), RunOutcome("b", T0 + 9 * EVERY, None, True, "x"))
    assert judge_health(_window(status, runs=runs)).health is Health.FAILING
    v = judge_health(_window(status, runs=None))
    assert (v.health, v.failed_runs) == (Health.STOPPED, None)


def test_backlog_sums_the_latest_sample_of_each_source():
    lags = (_lag(T0, 5, 1.0, "0"), _lag(T0 + 1, 2, 1.0, "0"), _lag(T0, 3, 1.0, "1"))
    assert backlog_of(lags) == (5, None)
    assert backlog_of(())[0] is None
