"""What the dashboard benchmarks (``bench/tui_bench.py``, ``bench/tui_hundred.py``) measure
from outside the app: render lag per event (:class:`RenderLag`, s), percentiles, the process
RSS (MiB) and the load average."""

from __future__ import annotations

import os
import time
from collections.abc import MutableSequence

from streamwatch.analysis.board import QueryRow
from streamwatch.model.events import Event
from streamwatch.tui.app import StreamwatchApp


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


class RenderLag:
    """Render lag measured from outside the app: each event's time from the app's ``emit``
    (a backend thread) until the app next draws its model (``render_now``) after the event
    reached the board (``board.apply``) — the three public methods are wrapped on this app
    instance only. ``samples`` gets one lag (s) per event drawn; ``unrendered`` is True while
    an event emitted is not drawn yet."""

    def __init__(self, app: StreamwatchApp, samples: MutableSequence[float]) -> None:
        self.samples = samples
        self._emitted: dict[int, float] = {}  # id(event) → when emitted; the inbox keeps it alive
        self._applied: list[float] = []  # emit times of events on the board, not drawn yet
        emit, apply, render = app.emit, app.board.apply, app.render_now

        def timed_emit(obj: object) -> None:
            if isinstance(obj, Event):
                self._emitted[id(obj)] = time.monotonic()
            emit(obj)

        def timed_apply(event: Event) -> QueryRow | None:
            t = self._emitted.pop(id(event), None)
            if t is not None:
                self._applied.append(t)
            return apply(event)

        def timed_render(everything: bool = False) -> None:
            render(everything)
            now = time.monotonic()
            self.samples.extend(now - t for t in self._applied)
            self._applied.clear()

        # wrapped on this instance only (the bench measures from outside the app)
        app.emit = timed_emit  # type: ignore[method-assign]
        app.board.apply = timed_apply  # type: ignore[method-assign]
        app.render_now = timed_render  # type: ignore[method-assign]

    @property
    def unrendered(self) -> bool:
        return bool(self._emitted or self._applied)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))] if values else float("nan")
