"""The live tests' wait (:func:`tests.helpers.live_wait.until`) in a real Textual app under
Pilot: it returns once the condition holds, having let the app run in between (a timer of the
app's own advances the condition), and past its deadline fails naming what it waited for and
the state the test reports."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App

from tests.helpers.live_wait import until


class _Ticking(App[None]):
    """Counts its own timer's ticks (every 10 ms)."""

    ticks = 0

    def on_mount(self) -> None:
        self.set_interval(0.01, self._tick)

    def _tick(self) -> None:
        self.ticks += 1


def test_until_returns_once_the_app_made_the_condition_hold_and_fails_past_its_deadline_with_the_state():
    app = _Ticking()
    looks: list[int] = []

    def ticked_twice() -> bool:
        looks.append(app.ticks)
        return app.ticks >= 2

    async def scenario() -> None:
        async with app.run_test() as pilot:
            await until(pilot, ticked_twice, "two ticks", timeout_s=60)
            with pytest.raises(AssertionError) as failed:
                await until(pilot, lambda: False, "a condition that never holds", timeout_s=0.5,
                            state=lambda: f"ticks {app.ticks}")
            assert str(failed.value).startswith("timed out after 0.5 s waiting for a condition that never holds; ticks ")

    asyncio.run(scenario())
    assert looks[0] < 2 <= looks[-1]  # the app ran between the looks: its timer made it true
