"""``StreamingQueryListener`` adapter: Spark callbacks → model events → a non-blocking
publish function (usually :meth:`streamwatch.events.EventBus.publish`).

Spark calls listeners on its listener-bus thread (for PySpark, through a Py4J callback).
Each callback here converts the event and hands it over in O(1); it never blocks and never
raises into Spark: a conversion failure is counted in ``conversion_errors`` and dropped.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

from pyspark.sql.streaming import StreamingQueryListener

from streamwatch.model.events import (
    Event,
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
)


def _s(value: Any) -> str | None:
    return None if value is None else str(value)


def started_from_spark(event: Any) -> QueryStarted:
    """From ``QueryStartedEvent`` (id, runId, name, timestamp)."""
    return QueryStarted(id=str(event.id), run_id=str(event.runId), timestamp=_s(event.timestamp), name=_s(event.name))


def progress_from_spark(event: Any) -> QueryProgress:
    """From ``QueryProgressEvent``: parses ``event.progress.json`` (Spark's own JSON), so the
    listener, recordings and event logs share one parser."""
    return QueryProgress.from_dict(json.loads(event.progress.json))


def idle_from_spark(event: Any) -> QueryIdle:
    """From ``QueryIdleEvent`` (id, runId, timestamp)."""
    return QueryIdle(id=str(event.id), run_id=str(event.runId), timestamp=_s(event.timestamp))


def terminated_from_spark(event: Any) -> QueryTerminated:
    """From ``QueryTerminatedEvent`` (exception text and error class, None when clean)."""
    return QueryTerminated(
        id=str(event.id),
        run_id=str(event.runId),
        timestamp=None,
        exception=_s(event.exception),
        error_class=_s(getattr(event, "errorClassOnException", None)),
    )


class PublishingListener(StreamingQueryListener):
    """Converts every listener event to a model object and calls ``publish`` with it.

    ``publish`` must itself be non-blocking (``EventBus.publish`` is)."""

    def __init__(self, publish: Callable[[Event], None]) -> None:
        self._publish = publish
        self._lock = threading.Lock()
        self.conversion_errors = 0

    def _hand_over(self, convert: Callable[[Any], Event], event: Any) -> None:
        try:
            self._publish(convert(event))
        except Exception:
            with self._lock:
                self.conversion_errors += 1

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's name
        self._hand_over(started_from_spark, event)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        self._hand_over(progress_from_spark, event)

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        self._hand_over(idle_from_spark, event)

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        self._hand_over(terminated_from_spark, event)
