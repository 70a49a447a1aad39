"""The dashboard's health window (:mod:`streamwatch.analysis.dashboard_health`) built from the
model objects the dashboard holds — batch timeline rows, listener events, landed files'
journeys — each figure held against the inputs written here (planned times, progress
timestamps + triggerExecution, landing times), and the verdict against the rule it must meet."""

from __future__ import annotations

from streamwatch.analysis.dashboard_health import DashboardHealth, QueryFacts, checkpoint_status, landing_lags
from streamwatch.analysis.health_window import Health, HealthWindow
from streamwatch.analysis.journeys import Consumed, Journey
from streamwatch.model.checkpoint import BatchRow
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.landing import LandedFile
from streamwatch.model.sparkjson import iso_to_epoch_ms

T0 = 1_700_000_000_000  # epoch ms of batch 0's batchTimestampMs
STEP = 2_000  # a 2 s processing-time trigger
TOOK = 500  # each batch's triggerExecution (ms)


def _iso(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _rows(committed: int, in_flight: bool = False) -> tuple[BatchRow, ...]:
    rows = [BatchRow(b, True, True, None, None, None, T0 + b * STEP, files_read=1) for b in range(committed)]
    if in_flight:
        rows.append(BatchRow(committed, True, False, None, None, None, T0 + committed * STEP, files_read=None))
    return tuple(rows)


def _progress(batch: int, run: str = "r1") -> QueryProgress:
    return QueryProgress("q", run, _iso(T0 + batch * STEP), batch_id=batch, duration_ms={"triggerExecution": TOOK})


def _landed(n: int, at_ms: int, read_by: str | None = None) -> tuple[Journey, ...]:
    consumed = None if read_by is None else Consumed(read_by, 0, True)
    return tuple(Journey(LandedFile("flights", f"/l/f{at_ms}_{i}.json", 10, at_ms + i), "landed" if consumed is None
                         else "committed", consumed) for i in range(n))


def _health(batches: int) -> DashboardHealth:
    h = DashboardHealth()
    h.observe_run("bronze", QueryStarted("q", "r1", _iso(T0 - 1_000)))
    for b in range(batches):
        h.observe_run("bronze", _progress(b))
    return h


def test_iso_helper_matches_the_model_parser():
    assert iso_to_epoch_ms(_iso(T0 + 123)) == T0 + 123


def test_window_from_timeline_progress_and_landing():
    h = _health(3)
    now = T0 + 2 * STEP + TOOK + 100  # just after batch 2 committed
    journeys = _landed(1, T0, read_by="bronze") + _landed(2, now - 1_000)
    window = h.window(QueryFacts("bronze", now, _rows(3), journeys, "q", "/cp"))
    assert isinstance(window, HealthWindow)
    assert [b.batch_id for b in window.batches] == [0, 1, 2]
    assert dict(window.commit_ms) == {b: T0 + b * STEP + TOOK for b in range(3)}  # timestamp + triggerExecution
    assert [b.duration_ms for b in window.batches] == [TOOK] * 3
    assert [b.input_files for b in window.batches] == [1, 1, 1]
    s = window.status
    assert (s.last_batch_id, s.last_committed_batch_id, s.in_flight_batch_id) == (2, 2, None)
    assert s.cadence_ms == STEP and s.idle_s == 0.1 and not s.idle and not s.stuck
    (lag,) = window.lags
    assert (lag.source, lag.backlog, lag.oldest_unread_ms, lag.lag_s) == ("flights", 2, now - 1_000, 1.0)
    assert window.runs is not None and [(r.run_id, r.last_batch_id, r.failed) for r in window.runs] == [("r1", 2, False)]
    v = h.verdict(QueryFacts("bronze", now, _rows(3), journeys, "q", "/cp"))
    assert (v.health, v.reason, v.backlog) == (Health.OK, "batches commit; backlog 2 file(s)", 2)


def test_stopped_when_no_batch_for_longer_than_idle_allows_while_files_wait():
    h = _health(3)
    last_commit = T0 + 2 * STEP + TOOK
    now = last_commit + 2 * STEP + 1  # just past IDLE_FACTOR × the 2 s cadence
    journeys = _landed(1, T0, read_by="bronze") + _landed(3, last_commit + 100)
    h.observe_run("bronze", QueryTerminated("q", "r1", _iso(now - 10), stop_requested=True))
    v = h.verdict(QueryFacts("bronze", now, _rows(3), journeys, "q", "/cp"))
    assert v.health is Health.STOPPED and v.since_ms == last_commit and v.backlog == 3
    assert v.reason == "no batch for 4 s while 3 file(s) wait"
    idle = _health(3).verdict(QueryFacts("bronze", now, _rows(3), _landed(1, T0, read_by="bronze"), "q", "/cp"))
    assert idle.health is Health.IDLE and idle.backlog == 0
    # one millisecond inside the limit it is not idle yet
    status = checkpoint_status(QueryFacts("bronze", now - 2, _rows(3)), [], {2: last_commit})
    assert not status.idle and status.idle_s == (2 * STEP - 1) / 1000


def test_unknown_when_the_last_commit_time_was_not_reported():
    h = _health(2)  # batch 2 committed with no progress seen
    v = h.verdict(QueryFacts("bronze", T0 + 10 * STEP, _rows(3), (), "q", "/cp"))
    assert v.health is Health.UNKNOWN
    assert v.reason.startswith("batch 2's commit time is unknown")
    not_read = DashboardHealth().verdict(QueryFacts("bronze", T0, None, error="no such file or directory"))
    assert (not_read.health, not_read.reason) == (Health.UNKNOWN, "checkpoint not read: no such file or directory")


def test_unknown_backlog_without_a_landed_file_the_query_read():
    h = _health(3)
    now = T0 + 2 * STEP + TOOK + 2 * STEP + 1
    v = h.verdict(QueryFacts("bronze", now, _rows(3), _landed(2, T0), "q", "/cp"))
    assert v.health is Health.UNKNOWN and v.backlog is None
    assert v.reason == "no batch for 4 s; no file or Kafka source to count a backlog on"


def test_stuck_in_flight_batch_is_stopped_and_two_failed_runs_are_failing():
    h = _health(3)
    now = T0 + 3 * STEP + 10_001  # batch 3 planned 10 s + 1 ms ago: past MIN_STUCK_MS (10 s)
    facts = QueryFacts("bronze", now, _rows(3, in_flight=True), _landed(1, T0, read_by="bronze"), "q", "/cp")
    window = h.window(facts)
    assert isinstance(window, HealthWindow)
    assert window.status.in_flight_batch_id == 3 and window.status.in_flight_s == 10.001 and window.status.stuck
    assert h.verdict(facts).health is Health.STOPPED
    for run in ("r2", "r3"):  # two runs that started after commits/2 and failed before reporting
        h.observe_run("bronze", QueryStarted("q", run, _iso(T0 + 3 * STEP + 100)))
        h.observe_run("bronze", QueryTerminated("q", run, _iso(T0 + 3 * STEP + 200), exception="ValueError: bad row"))
    v = h.verdict(facts)
    assert (v.health, v.failed_runs) == (Health.FAILING, 2)
    assert v.reason == "batch 3 failed in 2 runs, never committed: ValueError: bad row"


def test_landing_lags_per_source():
    now = T0 + 5_000
    journeys = _landed(2, T0) + (Journey(LandedFile("other", "/o/x.json", 1, T0 + 4_000), "landed", None),)
    lags = landing_lags(QueryFacts("q", now, (), journeys), ["other", "flights", "empty"])
    assert [(g.source, g.backlog, g.oldest_unread_ms, g.lag_s) for g in lags] == [
        ("empty", 0, None, 0.0), ("flights", 2, T0, 5.0), ("other", 1, T0 + 4_000, 1.0)]


def test_lag_samples_are_taken_at_most_every_lag_every_s():
    h = _health(3)
    base = T0 + 2 * STEP + TOOK
    journeys = _landed(1, T0, read_by="bronze")
    for dt in (0, 1_000, 4_999, 5_000, 9_999, 10_000):
        window = h.window(QueryFacts("bronze", base + dt, _rows(3), journeys, "q", "/cp"))
    assert isinstance(window, HealthWindow)
    assert [lag.at_ms - base for lag in window.lags] == [0, 5_000, 10_000]


# -- the verdict kept from frame to frame (DashboardHealth.verdict_of) ----------------------------


class _Clock:
    """The dashboard model's clock (epoch ms), set by the test."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class _Frames:
    """A dashboard model holding query ``bronze``'s scan (a checkpoint with no file source) and
    listener events, and a twin :class:`DashboardHealth` fed the same events and judging afresh
    at every frame: each frame's kept verdict must equal the twin's (the oracle)."""

    def __init__(self, now: int, committed: int) -> None:
        from streamwatch.analysis.dashboard import DashboardModel
        from streamwatch.model.runtime import QueryPlan, RunPlan

        self.clock = _Clock(now)
        plan = RunPlan("p", "", (QueryPlan("bronze", "bronze", "/cp", ""),), (), "processingTime=2 seconds")
        self.model = DashboardModel(plan, clock=self.clock)
        self.twin = DashboardHealth()
        self.event(QueryStarted("q", "r1", _iso(T0 - 1_000)))
        for b in range(committed):
            self.event(_progress(b))
        self.scan(_rows(committed))

    def event(self, e: QueryStarted | QueryProgress | QueryTerminated) -> None:
        self.model.health.observe_run("bronze", e)
        self.twin.observe_run("bronze", e)

    def scan(self, rows: tuple[BatchRow, ...]) -> None:
        from streamwatch.model.checkpoint import Checkpoint

        self.model.set_checkpoints({"bronze": Checkpoint("/cp", "q")}, {}, {"bronze": rows})

    def at(self, now: int):
        from streamwatch.analysis.dashboard_health import facts_of

        self.clock.now = now
        kept = self.model.health.verdict_of(self.model, "bronze")
        fresh = self.twin.verdict(facts_of(self.model, "bronze"))
        assert kept == fresh, (now, kept, fresh)
        return kept


def test_the_verdict_is_kept_across_frames_and_judged_again_on_each_new_input():
    from streamwatch.model.landing import LandedFile

    now = T0 + 2 * STEP + TOOK + 100  # just after batch 2 committed
    f = _Frames(now, 3)
    first = f.at(now)
    assert (first.health, first.reason) == (Health.OK, "batches commit")
    for frame in range(1, 10):  # a second of frames (10/s), nothing new: the same object
        assert f.at(now + 100 * frame) is first
    f.event(_progress(3))  # a listener event
    after_event = f.at(now + 1_000)
    assert after_event is not first and f.at(now + 1_100) is after_event
    f.scan(_rows(4))  # a new checkpoint scan: batch 3 committed
    after_scan = f.at(now + 1_200)
    assert after_scan is not after_event and after_scan.batch_id == 3 and after_scan.commits == 4
    assert f.at(now + 1_300) is after_scan
    f.model.add_landed(LandedFile("flights", "/l/new.json", 10, now + 1_250))  # a landed file
    after_landing = f.at(now + 1_400)
    assert after_landing is not after_scan and f.at(now + 1_500) is after_landing
    assert f.at(now + 1_000) is not after_landing  # a clock that went back: judged again


def test_the_kept_verdict_is_judged_again_when_the_clock_crosses_a_limit_or_a_shown_second():
    last_commit = T0 + 2 * STEP + TOOK
    now = last_commit + 100
    f = _Frames(now, 3)
    ok = f.at(now)
    idle_at = last_commit + 2 * STEP  # IDLE_FACTOR (2) × the 2 s cadence of batchTimestampMs
    assert f.at(idle_at) is ok and ok.health is Health.OK  # at the limit: not idle yet
    idle = f.at(idle_at + 1)
    assert idle is not ok and idle.reason == "no batch for 4 s; no file or Kafka source to count a backlog on"
    # the reason shows whole seconds (4.5 s rounds to 4, half to even): kept until 4.501 s
    assert f.at(last_commit + 4_500) is idle
    five = f.at(last_commit + 4_501)
    assert five is not idle and five.reason.startswith("no batch for 5 s")
    # a lag sample is due LAG_EVERY_S (5 s) after the first frame's: judged again then
    assert f.at(now + 4_999) is five
    assert f.at(now + 5_000) is not five

    stuck_from = T0 + 3 * STEP + 10_000  # batch 3 planned, not committed: MIN_STUCK_MS (10 s)
    g = _Frames(T0 + 3 * STEP + 100, 3)
    g.scan(_rows(3, in_flight=True))
    in_flight = g.at(stuck_from - 4_000)
    assert in_flight.health is Health.OK and g.at(stuck_from - 1) is in_flight
    assert g.at(stuck_from) is in_flight  # at the limit: not stuck yet
    stuck = g.at(stuck_from + 1)
    assert stuck.health is Health.STOPPED and stuck.reason.startswith("batch 3 planned 10 s ago")
    assert g.at(stuck_from + 100) is stuck
    assert g.at(stuck_from + 500).reason.startswith("batch 3 planned 10 s ago")  # 10.5 s: half to even
    assert g.at(stuck_from + 501).reason.startswith("batch 3 planned 11 s ago")
