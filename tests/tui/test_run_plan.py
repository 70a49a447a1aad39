"""Pilot tests of issue 12's model facts on the dashboard: queued / not run queries,
stops that read as stops, checkpoint → table from the run plan, and the header's
``local[N cores]`` — fed through the app's message path (no Spark)."""

from __future__ import annotations

from streamwatch.model.events import QueryStarted, QueryTerminated
from streamwatch.model.runtime import QueryNotRun, QueryPlan, QueryQueued, RunPlan, SessionInfo

from conftest import NOW_MS, ControlledBackend, cell, landed_files, load_recording, wait_for
from conftest import run_app as run

STOP_EXCEPTION = ("org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to "
                  "file:/ws/tables/flights/silver.\n\tat org.apache.spark.sql.errors.QueryExecutionErrors")


def status_line(app):
    return str(app.query_one("#status").render())


def test_queued_then_started_and_not_run_by_query_name(make_app):
    app = make_app()

    async def scenario(pilot):
        app.emit(QueryQueued("flights_silver", ("flights_bronze",), "availableNow"))
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "status") == "queued", "queued")
        assert cell(app, "#query-table", "flights_silver", "diagnosis") == "waits for flights_bronze"
        assert "flights_silver queued: waits for flights_bronze" in status_line(app)
        # Spark's QueryStarted for that name switches it to running, as for any start
        app.emit(QueryStarted(id="id-silver-2", run_id="run-2", timestamp=None, name="flights_silver"))
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "status") == "active", "started")
        assert "waits for" not in cell(app, "#query-table", "flights_silver", "diagnosis")

        app.emit(QueryQueued("flights_gold", ("flights_silver",), "availableNow"))
        app.emit(QueryNotRun("flights_gold", "upstream flights_silver failed"))
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_gold", "status") == "not run", "not run")
        assert cell(app, "#query-table", "flights_gold", "diagnosis") == "upstream flights_silver failed"
        assert "flights_gold not run: upstream flights_silver failed" in status_line(app)
        await pilot.press("5")
        table = app.query_one("#event-table")
        await wait_for(pilot, lambda: table.row_count == app.model.event_count, "every event listed")
        rows = [tuple(map(str, table.get_row_at(i))) for i in range(table.row_count)]
        assert ("", "not run", "flights_gold", "upstream flights_silver failed") in rows
        assert ("", "queued", "flights_silver", "waits for flights_bronze") in rows

    run(app, scenario)


def test_a_requested_stop_with_an_exception_reads_as_stopped(make_app):
    app = make_app()

    async def scenario(pilot):
        silver_id = app.board.rows["flights_silver"].query_id
        assert silver_id
        app.emit(QueryTerminated(id=silver_id, run_id="run-9", timestamp=None, exception=STOP_EXCEPTION,
                                 error_class="TASK_WRITE_FAILED", stop_requested=True))
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "status") == "stopped", "stopped")
        assert cell(app, "#query-table", "flights_silver", "diagnosis") == "stopped"
        await pilot.press("down", "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        assert app.selected == "flights_silver"
        failure = app.query_one("#detail-failure")
        text = str(failure.render())
        assert failure.display
        assert text == ("stopped (Spark reported: org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed "
                        "while writing rows to file:/ws/tables/flights/silver.)")
        assert "failing batch" not in text

    run(app, scenario)


def test_checkpoint_sink_comes_from_the_run_plan(tmp_path):
    """silver writes ``tables/flights_weather`` (not guessed from its name: sink discovery
    would look for ``tables/silver``); gold writes to the memory sink."""
    from streamwatch.tui.app import StreamwatchApp

    cps, tables = tmp_path / "checkpoints", tmp_path / "tables"
    plan = RunPlan("flights", "test", (
        QueryPlan("flights_bronze", "bronze", str(cps / "bronze"), str(tables / "bronze")),
        QueryPlan("flights_silver", "silver", str(cps / "silver"), str(tables / "flights_weather"),
                  upstream=("flights_bronze",)),
        QueryPlan("flights_gold", "gold", str(cps / "gold"), "", sink="memory", upstream=("flights_silver",)),
    ), (("flights", str(tmp_path / "landing")),), "availableNow")
    for layer in ("silver", "gold"):
        cp = cps / layer
        (cp / "offsets").mkdir(parents=True)
        (cp / "commits").mkdir()
        (cp / "metadata").write_text(f'{{"id":"0b0b0b0b-0000-4000-8000-00000000000{len(layer)}"}}\n')
        (cp / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1767261601000,"conf":{}}\n'
                                          '{"logOffset":0}\n')
        (cp / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    meta = tables / "flights_weather" / "_spark_metadata"
    meta.mkdir(parents=True)
    part = tables / "flights_weather" / "part-00000.parquet"
    part.write_bytes(b"PAR1")
    (meta / "0").write_text(f'v1\n{{"path":"file://{part}","size":4,"isDir":false,"modificationTime":1767261601000,'
                            '"blockReplication":1,"blockSize":33554432,"action":"add"}\n')
    app = StreamwatchApp(ControlledBackend(plan, load_recording()), checkpoint_refresh_s=0,
                         clock=lambda: NOW_MS, watch_landing=False)

    async def scenario(pilot):
        app.scan_checkpoints()
        await wait_for(pilot, lambda: {"flights_silver", "flights_gold"} <= set(app.model.checkpoints),
                       "the checkpoint scan")
        app.selected = "flights_silver"
        await pilot.press("3")
        batches = app.query_one("#cp-batches")
        await wait_for(pilot, lambda: batches.row_count == 1, "the batch timeline")
        assert cell(app, "#cp-batches", "0", "sink") == "✓ flights_weather"
        assert "sink flights_weather" in str(app.query_one("#cp-head").render())
        app.selected = "flights_gold"
        app.render_now(everything=True)
        await wait_for(pilot, lambda: "flights_gold" in str(app.query_one("#cp-head").render()), "gold's checkpoint")
        assert cell(app, "#cp-batches", "0", "sink") == "memory"
        assert "sink memory" in str(app.query_one("#cp-head").render())

    run(app, scenario)


def test_header_shows_local_cores(make_app):
    app = make_app()

    async def scenario(pilot):
        app.emit(SessionInfo("4.2.0", "local[*]", None, "parquet", "recorded run", executors=0, local_cores=2))
        await wait_for(pilot, lambda: "cores" in str(app.query_one("#session").render()), "the new session info")
        assert "Spark 4.2.0 on local[2 cores] · UI off" in str(app.query_one("#session").render())
        assert "executor" not in app.dashboard.session_text()

    run(app, scenario)



def test_selecting_a_landed_file_shows_its_journey(tmp_path, unchanged):
    """enter on a landed file follows it through the layers (``file_journey`` in a worker,
    the lines ``streamwatch lineage`` prints); a file no query read says so."""
    from streamwatch.tui.app import StreamwatchApp

    cps, tables, landing = tmp_path / "checkpoints", tmp_path / "tables", tmp_path / "landing" / "flights"
    plan = RunPlan("flights", "test", (
        QueryPlan("flights_bronze", "bronze", str(cps / "bronze"), str(tables / "bronze"), landing=(str(landing),)),
        QueryPlan("flights_silver", "silver", str(cps / "silver"), str(tables / "silver"), upstream=("flights_bronze",)),
    ), (("flights", str(landing)),), "availableNow")
    cp = cps / "bronze"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "sources" / "0").mkdir(parents=True)
    (cp / "metadata").write_text('{"id":"0b0b0b0b-0000-4000-8000-000000000001"}\n')
    (cp / "offsets" / "0").write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1767261601000,"conf":{}}\n'
                                      '{"logOffset":0}\n')
    (cp / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    (cp / "sources" / "0" / "0").write_text(
        f'v1\n{{"path":"file://{landing}/flights-00000.csv","timestamp":1767261600000,"batchId":0,"action":"add"}}\n')
    unchanged(cp)
    app = StreamwatchApp(ControlledBackend(plan, [*landed_files(tmp_path, 2), *load_recording()]),
                         checkpoint_refresh_s=0, clock=lambda: NOW_MS, watch_landing=False)

    async def scenario(pilot):
        await pilot.press("4")
        table = app.query_one("#landing-table")
        await wait_for(pilot, lambda: table.row_count == 2, "landed files")
        box = app.query_one("#journey")
        assert not box.display
        table.focus()
        table.move_cursor(row=0)
        await pilot.press("enter")
        await wait_for(pilot, lambda: box.display, "the journey")
        lines = str(box.render()).splitlines()
        assert lines[0].startswith("flights-00000.csv  (pipeline flights, landing ")
        assert "flights_bronze" in lines[1] and "batch 0 planned 2026-01-01 10:00:01.000Z, committed" in lines[1]
        table.move_cursor(row=1)
        await pilot.press("enter")
        await wait_for(pilot, lambda: str(box.render()).startswith("flights-00001.csv: "), "the second file")
        assert "not processed" in str(box.render()) and "batch 0" not in str(box.render())

    run(app, scenario)
