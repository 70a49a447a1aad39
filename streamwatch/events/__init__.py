"""Event plumbing that needs no JVM: the non-blocking hand-off between Spark's listener
thread and whoever consumes events (dashboard, recorder)."""

from streamwatch.events.bus import EventBus, EventBusStats

__all__ = ["EventBus", "EventBusStats"]
