"""What the dashboard needs from whatever feeds it (live Spark, a replay …)."""

from __future__ import annotations

from typing import Callable, Protocol

from streamwatch.model.runtime import RunPlan


class Backend(Protocol):
    """``plan`` is known before anything starts (first frame); ``start(emit)`` blocks while it
    starts (the app calls it from a worker thread) and then delivers model objects to
    ``emit`` from any thread; ``stop()`` stops everything and is safe to call twice."""

    plan: RunPlan

    def start(self, emit: Callable[[object], None]) -> object: ...

    def stop(self) -> None: ...
