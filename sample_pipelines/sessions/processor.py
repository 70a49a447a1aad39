"""The sessions pipeline's :class:`StatefulProcessor` (runs in Spark's Python workers).

Per user (the grouping key):

* value state ``session`` — ``start``, ``last`` (epoch ms of the first and latest view) and
  ``views``; list state ``pages`` — one row per view; both with a TTL of ``TTL_MS``;
* one processing-time timer ``idle_ms`` after the batch that last saw the user, moved forward
  by every batch with views of the user.

``handleInputRows`` closes the open session when a view comes more than ``GAP_MS`` of event
time after its last one (``closed_by = "gap"``); ``handleExpiredTimer`` closes it when the
timer fires (``closed_by = "timer"``). Mirrors nothing in Spark; the contract is pyspark's
``StatefulProcessor`` (``init``, ``handleInputRows``, ``handleExpiredTimer``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle

from . import GAP_MS, TTL_MS

_COLUMNS = ["user", "session_start", "session_end", "views", "distinct_pages", "closed_by"]


class SessionProcessor(StatefulProcessor):
    """Sessionizes one user's page views; ``idle_ms`` is the idle timer (ms, processing time)."""

    def __init__(self, idle_ms: int) -> None:
        self.idle_ms = idle_ms

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.session = handle.getValueState("session", "start LONG, last LONG, views LONG", TTL_MS)
        self.pages = handle.getListState("pages", "page STRING", TTL_MS)

    def _closed(self, user: str, closed_by: str) -> pd.DataFrame:
        session = self.session.get()
        assert session is not None, "callers close an open session only (exists() checked)"
        start, last, views = session
        pages = {row[0] for row in self.pages.get()}
        self.session.clear()
        self.pages.clear()
        return pd.DataFrame([[user, pd.Timestamp(start, unit="ms"), pd.Timestamp(last, unit="ms"),
                              int(views), len(pages), closed_by]], columns=_COLUMNS)

    def handleInputRows(self, key: Any, rows: Iterator[pd.DataFrame], timerValues: Any) -> Iterator[pd.DataFrame]:
        user = key[0]
        views = pd.concat(list(rows)).sort_values("time", kind="stable")
        out: list[pd.DataFrame] = []
        current = self.session.get() if self.session.exists() else None
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        for t, page in zip(views["time"], views["page"], strict=True):
            ms = int(pd.Timestamp(t).value // 1_000_000)
            if current is not None and ms - int(current[1]) > GAP_MS:
                out.append(self._closed(user, "gap"))
                current = None
            current = (ms, ms, 1) if current is None else (int(current[0]), ms, int(current[2]) + 1)
            self.session.update(current)
            self.pages.appendValue((page,))
        if current is not None:
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + self.idle_ms)
        yield from out

    def handleExpiredTimer(self, key: Any, timerValues: Any, expiredTimerInfo: Any) -> Iterator[pd.DataFrame]:
        if self.session.exists():
            yield self._closed(key[0], "timer")

    def close(self) -> None:
        pass
