"""The checkpoint tab opens a batch's state (``v``): the real dashboard (Pilot) watching a
windowed aggregation's checkpoint written in this run shows, for the highlighted batch, the
first rows and per-partition sizes — the rows Spark's state data source reads (the oracle)."""

from __future__ import annotations

import asyncio

import pytest

from conftest import wait_for

pytestmark = pytest.mark.spark


def test_checkpoint_tab_opens_a_batchs_state(spark, tmp_path, unchanged):
    from streamwatch.backends.checkpoints import CheckpointBackend
    from streamwatch.state import read_state
    from streamwatch.state.display import text
    from streamwatch.tui.app import StreamwatchApp
    from streamwatch.tui.views.state import StatePanel, StateScreen, partition_line, table_title
    from tests.helpers.state_queries import write_aggregation

    cp = write_aggregation(spark, tmp_path / "agg")
    unchanged(cp)
    batch = 2
    (expected,) = read_state(str(cp), batch=batch, limit=20)
    oracle = spark.read.format("statestore").option("batchId", batch).load(str(cp))
    assert expected.total_rows == oracle.count() > 0
    app = StreamwatchApp(CheckpointBackend([str(cp)], poll_s=0.2), watch_landing=False, checkpoint_refresh_s=0.2)

    async def scenario() -> tuple[list[str], list[list[str]], str]:
        async with app.run_test(size=(160, 45)) as pilot:
            await pilot.press("3")
            table = app.query_one("#cp-batches")
            await wait_for(pilot, lambda: table.row_count > batch, "the batch timeline")
            table.move_cursor(row=table.get_row_index(str(batch)))
            await pilot.press("v")
            await wait_for(pilot, lambda: isinstance(app.screen, StateScreen)
                           and len(app.screen.query(".state-rows")) == 1, "the state panel's rows")
            panel = app.screen.query_one(StatePanel)
            statics = [str(s.content) for s in panel.query("Static")]
            rows_table = panel.query_one(".state-rows")
            rows = [[str(c) for c in rows_table.get_row_at(i)] for i in range(rows_table.row_count)]
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, StateScreen), "the panel to close")
            await pilot.press("colon", *"state 999", "enter")  # no such batch: one line, no crash
            status = app.query_one("#status")
            await wait_for(pilot, lambda: "batch 999" in str(status.content), "the status line to refuse batch 999")
            error = str(status.content)
            assert not isinstance(app.screen, StateScreen)
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, "the app to exit")
            return statics, rows, error

    statics, rows, error = asyncio.run(scenario())
    assert table_title(expected) in statics and partition_line(expected) in statics
    assert f"batch {batch} (version {batch + 1})" in table_title(expected)
    names = [c.name.rsplit(".", 1)[-1] for c in expected.columns]
    assert rows == [[text(v, n) for n, v in zip(names, r, strict=True)] for r in expected.rows]
    assert len(rows) == min(20, expected.total_rows)
    assert "not committed" in error
