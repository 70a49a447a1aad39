"""Pilot tests of what the dashboard reads from checkpoints the test writes (no Spark): a
landed file's journey through the source log, a stuck query diagnosed from offsets without
commits, and an unreadable checkpoint that never crashes the app."""

from __future__ import annotations

from streamwatch.model.landing import LandedFile

from conftest import cell, settle, wait_for
from conftest import run_app as run


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
        f'v1\n{{"path":"file://{landing}/flights-00000.csv","timestamp":1767261600000,"batchId":0,"action":"add"}}\n')
    (cp / "sources" / "0" / "1").write_text(
        f'v1\n{{"path":"file://{landing}/flights-00001.csv","timestamp":1767261602000,"batchId":1,"action":"add"}}\n')
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
    """offsets/21 planned 60 s before the injected clock, no commits/21 (the recording's silver
    finished batch 20, each in < 0.5 s): stuck (past 5 × its slowest recent batch, at least 10 s)."""
    app = make_app()
    cp = tmp_path / "checkpoints" / "silver"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "metadata").write_text('{"id":"x"}\n')
    for b in range(22):
        (cp / "offsets" / str(b)).write_text(
            f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":1767261600000,"conf":{{}}}}\n{{"logOffset":{b}}}\n')
    for b in range(21):
        (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')

    async def scenario(pilot):
        app.scan_checkpoints()
        await wait_for(pilot, lambda: cell(app, "#query-table", "flights_silver", "diagnosis").startswith("stuck"),
                       "the stuck diagnosis")
        assert "batch 21" in cell(app, "#query-table", "flights_silver", "diagnosis")

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
