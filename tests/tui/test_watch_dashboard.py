"""`streamwatch watch PATH` without --log: the real dashboard (Pilot) on a CheckpointBackend —
batches derived from the checkpoint files appear as the queries' progress, and a control that
needs Spark says so."""

from __future__ import annotations

import asyncio
import time

from streamwatch.backends.checkpoints import CheckpointBackend
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_790_000_000_000


async def _wait_for(pilot, predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await pilot.pause(0.1)


def test_dashboard_follows_a_checkpoint_and_controls_need_spark(tmp_path, unchanged):
    from streamwatch.tui.app import StreamwatchApp

    cp = FakeCheckpoint(tmp_path / "checkpoints/p/orders")
    for b in range(3):
        cp.plan(b, T0 + b * 1000)
        cp.commit(b, T0 + b * 1000 + 300)
    unchanged(tmp_path)
    backend = CheckpointBackend([str(tmp_path)], poll_s=0.1)
    assert [q.query_name for q in backend.plan.queries] == ["p_orders"]
    app = StreamwatchApp(backend, watch_landing=False)

    async def scenario() -> None:
        async with app.run_test(size=(140, 40)) as pilot:
            await _wait_for(pilot, lambda: app.board.rows["p_orders"].batch_id == 2, 20, "batch 2")
            assert app.board.rows["p_orders"].batch_duration_ms == 300  # commit time − batchTimestampMs
            await pilot.press("x")  # stop the selected query: only Spark can
            await _wait_for(pilot, lambda: "needs Spark" in str(app.query_one("#status").render()), 10,
                            "the status line to say stop needs Spark")
            await pilot.press("q")
            await _wait_for(pilot, lambda: not app.is_running, 20, "the app to exit")

    asyncio.run(scenario())
