"""Waiting on the live dashboard: the real app under Textual's Pilot over a backend that runs
Spark (``tests/tui/test_*_live.py``). A test waits on a condition with a deadline — never a
sleep — and, when the deadline passes, fails saying what it waited for and what its
independent accounts (Spark's active queries, the files Spark wrote, the screen) said then."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.pilot import Pilot

#: How long the app runs between two looks at the condition (s): a micro-batch of the live
#: tests takes about this long, and each look may read Spark or the checkpoint.
EVERY_S = 0.2


async def until(pilot: Pilot, predicate: Callable[[], bool], what: str, *, timeout_s: float = 180,
                state: Callable[[], str] | None = None) -> None:
    """Let the app run (``pilot.pause``, :data:`EVERY_S` at a time) until ``predicate()``
    holds. Raises ``AssertionError`` once ``timeout_s`` seconds passed without it:
    ``timed out after <timeout_s> s waiting for <what>``, then ``state()`` (what the test's
    accounts say at that moment) when given."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            seen = f"; {state()}" if state is not None else ""
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}{seen}")
        await pilot.pause(EVERY_S)
