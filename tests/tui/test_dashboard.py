"""Pilot tests of every dashboard view and control, fed by the recorded flights run through
an in-test Backend (no Spark). Waits on conditions and workers, never blind sleeps."""

from __future__ import annotations

import pytest

from streamwatch.backends.base import Control
from streamwatch.model.events import QueryProgress
from streamwatch.model.landing import LandedFile
from streamwatch.tui.commands import KEYS
from streamwatch.tui.help import help_text

from conftest import NAMES, settle, wait_for
from conftest import run_app as run


def cell(app, table_id, row, col):
    return str(app._main.query_one(table_id).get_cell(row, col))


def test_queries_view_shows_status_and_stall_diagnosis(make_app):
    app = make_app()

    async def scenario(pilot):
        t = app.query_one("#query-table")
        assert t.keys == list(NAMES)
        assert cell(app, "#query-table", "flights_bronze", "status") == "idle"
        assert cell(app, "#query-table", "flights_bronze", "diagnosis") == "waiting for data"
        assert cell(app, "#query-table", "flights_silver", "diagnosis").startswith("slow:")
        assert cell(app, "#query-table", "flights_gold", "diagnosis").startswith("failed in batch 20")
        assert cell(app, "#query-table", "flights_gold", "batch") == "19"
        assert cell(app, "#query-table", "flights_gold", "trigger") == "2 seconds"
        assert cell(app, "#query-table", "flights_gold", "mode") == "append"
        assert cell(app, "#query-table", "flights_bronze", "backlog") == "6"
        assert any("TASK_WRITE_FAILED" in n.message for n in app._notifications)

    run(app, scenario)


def test_enter_opens_detail_with_charts_operators_and_failure(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        assert app.selected == "flights_gold"
        rates = app.query_one("#chart-rates")
        assert [s[0] for s in rates.series] == ["input", "processed"]
        assert len(rates.values("input")) == 20
        durations = app.query_one("#chart-durations")
        assert len(durations.rows) == 20 and durations.batch_ids == list(range(20))
        plot = app.query_one("#chart-rates ChartPlot")
        await wait_for(pilot, lambda: plot.size.width > 0, "the chart to lay out")
        drawn = str(plot.render())
        assert "10:00:01" in drawn and "10:00:39" in drawn, "a UTC time axis from the first to the last batch"
        legend = str(app.query_one("#chart-rates .legend").render())
        assert "input 439 rows/s" in legend and "processed 1,575 rows/s" in legend
        gaps = app.query_one("#chart-wm").values("gap")
        assert gaps and min(gaps) >= 95 * 60
        assert max(gaps) < 24 * 3600, "a batch without a watermark (0) must not count as a gap since 1970"
        ops = app.query_one("#operators")
        assert cell(app, "#operators", "0", "operator") == "stateStoreSave"
        assert ops.display
        failure = str(app.query_one("#detail-failure").render())
        assert "failing batch 20" in failure and "TASK_WRITE_FAILED" in failure

    run(app, scenario)


def test_history_is_bounded_per_query(make_app):
    app = make_app(history=5)

    async def scenario(pilot):
        row = app.board.rows["flights_bronze"]
        assert row.progress_count == 21
        assert len(row.history) == 5 and row.history[-1].batch_id == 20

    run(app, scenario)


def test_events_tab_and_slash_filter(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("5")
        await wait_for(pilot, lambda: app.active_tab == "events", "the events tab")
        table = app.query_one("#event-table")
        await wait_for(pilot, lambda: table.row_count == app.model.event_count, "every event listed")
        total = table.row_count
        await pilot.press("slash", *"terminated", "enter")
        await wait_for(pilot, lambda: table.row_count == 1, "the filter to apply")
        assert "failed" in str(table.get_row_at(0)[3])
        await pilot.press("escape")
        await wait_for(pilot, lambda: table.row_count == total, "the filter to clear")

    run(app, scenario)


def test_command_line_completes_and_switches_views(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("colon", *"chec")
        line = app.query_one("#cmdline")
        await wait_for(pilot, lambda: line._suggestion == "checkpoint", "the command completion")
        await pilot.press("tab", *"flights_g")
        await wait_for(pilot, lambda: line._suggestion == "checkpoint flights_gold", "the query completion")
        await pilot.press("tab", "enter")
        await wait_for(pilot, lambda: app.active_tab == "checkpoint", "the checkpoint tab")
        assert app.selected == "flights_gold"
        assert not line.display
        await pilot.press("colon", *"bogus", "enter")
        assert "unknown command" in str(app.query_one("#status").render())

    run(app, scenario)


@pytest.mark.parametrize("keys,expected", [
    (("x",), ("stop_query", "flights_bronze")),
    (("down", "r"), ("restart_query", "flights_silver")),
    (("s",), ("start_query", "flights_bronze")),
    (("X",), ("stop_pipeline",)),
    (("R",), ("restart_pipeline",)),
    (("S",), ("start_pipeline",)),
    (("l",), ("land", 1, None)),
    (("colon", *"land 3 flights", "enter"), ("land", 3, "flights")),
    (("t", *"5s gold", "enter"), ("set_trigger", "processingTime=5s", "flights_gold")),
    (("colon", *"stop all", "enter"), ("stop_pipeline",)),
])
def test_controls_reach_the_backend(make_app, keys, expected):
    app = make_app()

    async def scenario(pilot):
        await pilot.press(*keys)
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: expected in app.backend.calls, f"{expected} to be called")
        await pilot.pause()
        assert "failed" not in str(app.query_one("#status").render())

    run(app, scenario)


def test_stop_then_start_shows_status_changes_and_new_trigger(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("x")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_bronze", "status") == "stopped", "stopped")
        await pilot.press("s")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_bronze", "status") == "active", "active")
        await pilot.press("t", *"500ms", "enter")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "trigger") == "500ms", "new trigger")

    run(app, scenario)


def test_unsupported_control_is_reported_not_crashing(make_app):
    app = make_app()
    app.backend.CONTROLS = frozenset(Control) - {Control.LAND}  # this backend cannot land data

    async def scenario(pilot):
        await pilot.press("l")
        assert "not supported" in str(app.query_one("#status").render())
        await app.workers.wait_for_complete()
        assert not [c for c in app.backend.calls if c[0] == "land"]
        assert app.is_running

    run(app, scenario)


def test_pause_freezes_the_display_not_the_model(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("p")
        assert app.paused and "PAUSED" in str(app.query_one("#session").render())
        p = app.board.rows["flights_bronze"].last_progress
        app.emit(QueryProgress.from_dict({**p.to_dict(), "batchId": 99}))
        await wait_for(pilot, lambda: app.board.rows["flights_bronze"].batch_id == 99, "the model to update")
        assert cell(app, "#query-table", "flights_bronze", "batch") == "20"
        await pilot.press("p")
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_bronze", "batch") == "99", "resume")

    run(app, scenario)


def test_help_lists_every_key_binding(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "HelpScreen", "the help screen")
        text = help_text().plain
        listed = {key for k in KEYS for key in k.keys.split()}  # "1 2 3 4 5 6" lists six keys
        for b in app.BINDINGS:
            shown = b.key_display or b.key
            assert shown in listed, f"{shown} missing from help"
        keys_section = text.split("\n: commands")[0].splitlines()[1:]
        shown_keys = {tok for line in keys_section for tok in line[2:16].split()}
        assert shown_keys >= {b.key_display or b.key for b in app.BINDINGS}
        for cmd in ("trigger", "land", "restart", "results", "checkpoint", "pipeline", "state"):
            assert cmd in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: type(app.screen).__name__ != "HelpScreen", "help to close")

    run(app, scenario)


def test_results_tab_shows_rows_and_read_errors(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("colon", *"results gold", "enter")
        table = app.query_one("#results-table")
        await wait_for(pilot, lambda: table.row_count == 2, "result rows")
        assert "flights_gold" in str(app.query_one("#results-head").render())
        await pilot.press("colon", *"results silver", "enter")
        await wait_for(pilot, lambda: "unreadable" in str(app.query_one("#results-head").render()), "the read error")
        assert app.is_running

    run(app, scenario)


def test_landing_journey_follows_the_source_log(make_app, tmp_path, unchanged):
    """A file read by batch 0 of bronze and committed shows 'committed'; the others stay
    in the backlog."""
    app = make_app(checkpoint_refresh_s=0)
    landing = app.plan.landing[0][1]
    cp = tmp_path / "checkpoints" / "bronze"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "sources" / "0").mkdir(parents=True)
    (cp / "metadata").write_text('{"id":"0b0b0b0b-0000-4000-8000-000000000001"}\n')
    (cp / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1767261601000,"conf":{}}\n{"logOffset":0}\n')
    (cp / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    (cp / "offsets" / "1").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1767261603000,"conf":{}}\n{"logOffset":1}\n')
    (cp / "sources" / "0" / "0").write_text(
        'v1\n{"path":"file://%s/flights-00000.csv","timestamp":1767261600000,"batchId":0,"action":"add"}\n' % landing)
    (cp / "sources" / "0" / "1").write_text(
        'v1\n{"path":"file://%s/flights-00001.csv","timestamp":1767261602000,"batchId":1,"action":"add"}\n' % landing)
    unchanged(cp)

    async def scenario(pilot):
        app.scan_checkpoints()
        await wait_for(pilot, lambda: "flights_bronze" in app.model.checkpoints, "the checkpoint scan")
        await pilot.press("4")
        table = app.query_one("#landing-table")
        await wait_for(pilot, lambda: table.row_count == 6, "landed files")
        journeys = [str(table.get_row_at(i)[4]) for i in range(6)]
        assert journeys[0] == "committed (batch 0)"
        assert journeys[1] == "read by batch 1"
        assert journeys[2:] == ["landed"] * 4
        assert "4 not yet read" in str(app.query_one("#backlog").render())
        await pilot.press("3")
        batches = app.query_one("#cp-batches")
        await wait_for(pilot, lambda: batches.row_count == 2, "the batch timeline")
        assert batches.keys == ["1", "0"]  # newest first
        batches.focus()
        await pilot.press("down", "enter")
        box = str(app.query_one("#cp-batch").render())
        assert "batch 0" in box and "files consumed: 1" in box and "flights-00000.csv" in box

    run(app, scenario)


def test_stuck_query_is_diagnosed_from_the_checkpoint(make_app, tmp_path):
    """offsets/3 planned 60 s before the injected clock, no commits/3: stuck (> 5 × 2 s)."""
    app = make_app()
    cp = tmp_path / "checkpoints" / "silver"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "metadata").write_text('{"id":"x"}\n')
    for b in range(4):
        (cp / "offsets" / str(b)).write_text(
            'v1\n{"batchWatermarkMs":0,"batchTimestampMs":%d,"conf":{}}\n{"logOffset":%d}\n' % (1767261600000, b))
    for b in range(3):
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')

    async def scenario(pilot):
        app.scan_checkpoints()
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "diagnosis").startswith("stuck"),
                       "the stuck diagnosis")
        assert "batch 3" in cell(app, "#query-table", "flights_silver", "diagnosis")

    run(app, scenario)


def test_unreadable_checkpoint_and_bad_objects_never_crash(make_app, tmp_path):
    app = make_app()
    cp = tmp_path / "checkpoints" / "gold"
    (cp / "offsets").mkdir(parents=True)
    (cp / "offsets" / "0").write_text("v1\n{not json")

    async def scenario(pilot):
        app.scan_checkpoints()
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.emit(object())  # unknown object type: ignored
        app.emit(LandedFile("flights", "/nowhere/x.csv", -1, 0))
        await settle(pilot, app)
        for tab in "123456":
            await pilot.press(tab)
            await pilot.pause()
        assert app.is_running

    run(app, scenario)


def test_usable_at_80x24(make_app):
    app = make_app()

    async def scenario(pilot):
        assert app.query_one("#query-table").size.height >= 4
        assert app.query_one("#query-table").region.width <= 80
        await pilot.press("2")
        await wait_for(pilot, lambda: app.query_one("#chart-rates").size.width > 0, "detail to lay out")
        assert app.query_one("#detail-view").region.bottom <= 24

    run(app, scenario, size=(80, 24))


def test_quit_stops_the_backend(make_app):
    app = make_app()

    async def scenario(pilot):
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, "the app to exit")

    run(app, scenario)
    assert app.backend.stopped == 1
    assert app.return_code == 0


def test_header_shows_cluster_master_and_executor_count(make_app):
    from streamwatch.model.runtime import SessionInfo

    app = make_app()

    async def scenario(pilot):
        assert "local[2] ·" in app._session_text()  # no executor count known: none shown
        app.emit(SessionInfo("4.2.0", "spark://127.0.0.1:7077", "http://127.0.0.1:4040", "parquet",
                             "recorded run", executors=2))
        await wait_for(pilot, lambda: "executors" in app._session_text(), "the new session info", 10)
        assert "spark://127.0.0.1:7077 (2 executors) · UI http://127.0.0.1:4040" in app._session_text()

    run(app, scenario)


def test_a_frame_due_after_the_app_exited_draws_nothing_and_does_not_raise(make_app):
    """A render timer can fire while the app shuts down (seen in bench/tui_bench.py at the
    end of a flood): by then the screen stack is empty."""
    app = make_app()

    async def scenario(pilot):
        assert app.screen_stack

    run(app, scenario)
    assert not app.screen_stack
    app._frame()  # raised ScreenStackError before the guard


def test_a_batch_without_a_watermark_has_no_watermark_gap():
    """Spark reports watermark 1970-01-01 (0) until the first watermark: no gap of 56 years."""
    from streamwatch.analysis.board import sample_of

    from conftest import load_recording

    p = next(o for o in load_recording() if isinstance(o, QueryProgress) and o.event_time.get("watermark"))
    assert sample_of(p).watermark_gap_ms is not None
    d = p.to_dict()
    d["eventTime"] = {**d["eventTime"], "watermark": "1970-01-01T00:00:00.000Z"}
    assert sample_of(QueryProgress.from_dict(d)).watermark_gap_ms is None


def test_kafka_consumer_lag_in_the_backlog_column_and_the_detail_tab(recorded):
    """A query reading Kafka shows its consumer lag (records) where file queries show landed
    files not yet read; the detail tab lists it per partition, flags data loss, and keeps the
    last numbers (with the error) when a measurement fails."""
    from streamwatch.model.kafka import KafkaLag, PartitionLag
    from streamwatch.tui.app import StreamwatchApp

    from conftest import NOW_MS, ControlledBackend

    plan, objects = recorded
    lag = KafkaLag("flights_silver", "127.0.0.1:1", (PartitionLag("clicks", 0, 100, 0, 130),
                                                     PartitionLag("clicks", 1, 5, 10, 12)), NOW_MS)
    failed = KafkaLag("flights_silver", "127.0.0.1:1", (), NOW_MS, "broker away")
    app = StreamwatchApp(ControlledBackend(plan, [*objects, lag]), checkpoint_refresh_s=0, clock=lambda: NOW_MS,
                         watch_landing=False)

    async def scenario(pilot):
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "backlog") == "37 rec",
                       "the consumer lag in the backlog column")
        assert cell(app, "#query-table", "flights_bronze", "backlog") == "6"  # files, as before
        app.selected = "flights_silver"
        await pilot.press("2")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        text = lambda: str(app._main.query_one("#detail-kafka").render())  # noqa: E731
        await wait_for(pilot, lambda: "Kafka consumer lag 37 records" in text(), "the lag in the detail tab")
        assert "clicks-0: committed 100 · latest 130 · earliest 0 · lag 30" in text()
        assert "clicks-1: committed 5" in text() and "DATA LOST" in text()
        app.emit(failed)
        await wait_for(pilot, lambda: "not measured now: broker away" in text(), "the failed measurement")
        assert "lag 30" in text()

    run(app, scenario)


def test_results_tab_shows_a_delta_tables_history_newest_first(make_app):
    """The history the app read from the table's _delta_log (ResultsRead.history) is shown
    above the rows; a table without one hides it."""
    from streamwatch.model.deltalog import DeltaCommit
    from streamwatch.tui.messages import ResultsRead

    from conftest import NOW_MS

    app = make_app()
    history = (DeltaCommit(7, operation="MERGE", timestamp_ms=NOW_MS, rows_written=5),
               DeltaCommit(6, operation="STREAMING UPDATE", timestamp_ms=NOW_MS - 60_000, rows_written=1200))

    async def scenario(pilot):
        await pilot.press("colon", *"results gold", "enter")
        table = app.query_one("#results-table")
        await wait_for(pilot, lambda: table.row_count == 2, "result rows")
        box = app.query_one("#results-history")
        assert not box.display  # the recorded run's tables have no _delta_log
        app.post_message(ResultsRead("flights_gold", ["a"], [("1",)], history=history))
        await wait_for(pilot, lambda: box.display and "v7  MERGE  5 rows" in str(box.render()), "the history")
        text = str(box.render())
        assert text.index("v7") < text.index("v6  STREAMING UPDATE  1,200 rows  2026-01-01 10:00:00")

    run(app, scenario)
