"""Which query runs have started and which have terminated, as seen on an event stream.

Spark posts ``QueryTerminatedEvent`` asynchronously (on the listener bus), after
``StreamingQuery.stop()`` has returned; whoever stops queries and then closes a recording or
the dashboard's bus waits here until every started run's terminated event has come through.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from streamwatch.events.bus import EventBus
from streamwatch.model.events import QueryStarted, QueryTerminated


class RunTracker:
    """A sink (``tracker(obj)``) that follows query runs by run id: started by
    :class:`QueryStarted`, ended by :class:`QueryTerminated`; other objects are ignored."""

    def __init__(self) -> None:
        self._runs: dict[str, bool] = {}  # run id → terminated
        self._lock = threading.Lock()

    def __call__(self, obj: Any) -> None:
        if isinstance(obj, (QueryStarted, QueryTerminated)):
            with self._lock:
                self._runs[obj.run_id] = isinstance(obj, QueryTerminated)

    @property
    def started(self) -> int:
        """Runs seen so far (started or terminated)."""
        with self._lock:
            return len(self._runs)

    def all_terminated(self) -> bool:
        """True when every run seen has terminated (also when none was seen)."""
        with self._lock:
            return all(self._runs.values())

    def wait_all_terminated(self, bus: EventBus, timeout: float) -> bool:
        """Wait up to ``timeout`` s until every run seen has terminated and ``bus`` has
        delivered it to its sinks; True when that happened in time."""
        deadline = time.monotonic() + timeout
        while True:
            bus.flush(0.2)
            if self.all_terminated():
                return bus.flush(max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
