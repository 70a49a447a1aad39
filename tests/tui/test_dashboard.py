"""Pilot tests of every dashboard view, fed by the recorded flights run through an in-test
Backend (no Spark). Waits on conditions and workers, never blind sleeps. The controls are in
``test_dashboard_controls.py``, what the views read from checkpoints in
``test_dashboard_checkpoints.py``."""

from __future__ import annotations

from streamwatch.model.events import QueryProgress
from streamwatch.tui.commands import KEYS
from streamwatch.tui.help import help_text

from conftest import NAMES, cell, wait_for
from conftest import run_app as run


def test_queries_view_shows_status_and_stall_diagnosis(make_app):
    app = make_app()

    async def scenario(pilot):
        t = app.query_one("#query-table")
        assert t.keys == list(NAMES)
        assert cell(app, "#query-table", "flights_bronze", "status") == "idle"
        assert cell(app, "#query-table", "flights_bronze", "diagnosis") == "waiting for data"
        # processed rows/s below input rows/s is no sign of falling behind (back to back, it only
        # says this batch took longer than the one before): no outstanding work grew, so ok
        assert cell(app, "#query-table", "flights_silver", "diagnosis") == "ok"
        assert cell(app, "#query-table", "flights_gold", "diagnosis").startswith("failed in batch 20")
        assert cell(app, "#query-table", "flights_gold", "batch") == "19"
        assert cell(app, "#query-table", "flights_gold", "trigger") == "2s"
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


def test_usable_at_80x24(make_app):
    app = make_app()

    async def scenario(pilot):
        assert app.query_one("#query-table").size.height >= 4
        assert app.query_one("#query-table").region.width <= 80
        await pilot.press("2")
        await wait_for(pilot, lambda: app.query_one("#chart-rates").size.width > 0, "detail to lay out")
        assert app.query_one("#detail-view").region.bottom <= 24

    run(app, scenario, size=(80, 24))


def test_header_shows_cluster_master_and_executor_count(make_app):
    from streamwatch.model.runtime import SessionInfo

    app = make_app()

    async def scenario(pilot):
        assert "local[2] ·" in app.dashboard.session_text()  # no executor count known: none shown
        app.emit(SessionInfo("4.2.0", "spark://127.0.0.1:7077", "http://127.0.0.1:4040", "parquet",
                             "recorded run", executors=2))
        await wait_for(pilot, lambda: "executors" in app.dashboard.session_text(), "the new session info", 10)
        assert "spark://127.0.0.1:7077 (2 executors) · UI http://127.0.0.1:4040" in app.dashboard.session_text()

    run(app, scenario)


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
        text = lambda: str(app.dashboard.query_one("#detail-kafka").render())  # noqa: E731
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


def test_a_built_plot_is_drawn_once_per_size_and_style_and_as_content_draws_it():
    """A paint that defers a chart's rebuild shows the plot it built before: drawn into
    strips once per size and style (the same strips again), each drawing what Textual's own
    Content draws (the oracle), and drawn anew for another width or style."""
    from rich.text import Text
    from textual.content import Content
    from textual.style import Style
    from textual.visual import RenderOptions

    from streamwatch.tui.charts import _Built

    text = Text.from_ansi("\x1b[38;5;33m⣿⣿\x1b[0m 10:00:01\n\x1b[1m┼──\x1b[0m 10:00:39")
    content = Content.from_rich_text(text)
    built = _Built(content)
    options = RenderOptions(lambda s: s if isinstance(s, Style) else Style(), {})
    base = Style(bold=False)
    first = built.render_strips(20, 2, base, options)
    assert built.render_strips(20, 2, base, options) is first
    assert [s.text for s in first] == [s.text for s in content.render_strips(20, 2, base, options)]
    assert list(first) == list(content.render_strips(20, 2, base, options))
    wider = built.render_strips(30, 2, base, options)
    assert wider is not first and list(wider) == list(content.render_strips(30, 2, base, options))
    assert list(built.render_strips(30, 2, Style(italic=True), options)) == list(
        content.render_strips(30, 2, Style(italic=True), options))
    assert "10:00:01" in str(built) and "10:00:39" in str(built)
