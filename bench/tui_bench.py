"""Dashboard under a progress flood: synthetic progress events for 20 queries fed into the
real app (headless) at a fixed rate; prints render lag percentiles (emit → drained and
rendered) per quarter of the run and the process RSS before/after, and compares the
memory held by the bounded history with the named alternative, an unbounded history.

Targets: no growing lag (last-quarter p99 close to first-quarter p99); memory flat once the
history bound is reached. Defaults follow the issue: 200 events/s, 100,000 events (~8 min);
``--events 10000`` for a quick run.

``--hundred`` (issue 18 item 4): a recording of 100 queries each reporting progress twice a
second is replayed at speed (``ReplayBackend``, speed 1) into the real app; each round runs in
a fresh process and measures render lag (emit → rendered) p99, RSS over the run, and the
key response of ``/`` + ``q05`` (the query table shows the 10 matching queries) and ``enter``
(the detail tab is active and drawn for the highlighted query: its text and tables; its charts
follow one per paint, ``enter→charts`` is until the last visible one is built), each until the
screen has then been painted, keys posted as the terminal driver posts them.
The named alternative is the same dashboard redrawing on every event
(``render_interval_s = 0``, no frame coalescing); the two alternate for ``--rounds`` rounds
and the ratios (alternative / dashboard) are printed as median and min. Targets: lag p99
< 250 ms, key response < 100 ms, RSS flat. ``--minutes N`` adds one N-minute soak of the
dashboard alone (``--minutes 30`` is the issue's soak): render lag p50/p99, ``/`` and
``enter`` p50/p99 (probed every 10 s), RSS at the start (after 3 s), per minute and at the
end. Every run prints the load average before and after (on a shared machine wall-clock
numbers are only as good as the CPU the app got) and the CPU per event."""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import sys
import threading
import time
from array import array
from collections.abc import Callable, MutableSequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.frames import Frames  # noqa: E402
from streamwatch.analysis.board import QueryBoard, QueryRow  # noqa: E402
from streamwatch.backends.base import Backend  # noqa: E402
from streamwatch.model.events import Event, QueryProgress  # noqa: E402
from streamwatch.model.runtime import QueryPlan, RunPlan  # noqa: E402
from streamwatch.tui.app import StreamwatchApp  # noqa: E402

QUERIES = [f"q{i:02d}" for i in range(20)]


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def progress(i: int) -> QueryProgress:
    name = QUERIES[i % len(QUERIES)]
    batch = i // len(QUERIES)
    return QueryProgress.from_dict({
        "id": f"id-{name}", "runId": f"run-{name}", "name": name, "timestamp": "2026-01-01T10:00:00.000Z",
        "batchId": batch, "batchDuration": 300 + i % 50, "numInputRows": 1000 + i % 17,
        "inputRowsPerSecond": 500.0 + i % 31, "processedRowsPerSecond": 900.0 + i % 23,
        "durationMs": {"addBatch": 200, "getBatch": 5, "latestOffset": 10, "queryPlanning": 20, "walCommit": 30,
                       "commitOffsets": 15},
        "eventTime": {"max": "2013-01-01T06:00:00.000Z", "watermark": "2013-01-01T05:00:00.000Z"},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": batch, "memoryUsedBytes": 1000}],
        "sources": [{"description": "FileStreamSource[x]", "startOffset": {"logOffset": batch},
                     "endOffset": {"logOffset": batch + 1}, "numInputRows": 1000}],
        "sink": {"description": "FileSink[x]", "numOutputRows": 1000},
    })


class FloodBackend(Backend):
    """Emits ``events`` progress events at ``rate`` per second from the worker thread."""

    def __init__(self, events: int, rate: float) -> None:
        self.plan = RunPlan("bench", "synthetic flood", tuple(QueryPlan(q, q, f"/nonexistent/{q}", "") for q in QUERIES),
                            (), "processingTime=2 seconds")
        self.events, self.rate = events, rate
        self.emitted = 0
        self.done = threading.Event()
        self._stop = threading.Event()

    def start(self, emit: Callable[[object], None]) -> None:
        t0 = time.monotonic()
        for i in range(self.events):
            if self._stop.is_set():
                break
            delay = t0 + i / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            emit(progress(i))
            self.emitted = i + 1
        self.done.set()

    def stop(self) -> None:
        self._stop.set()


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


async def run_app(events: int, rate: float, history: int) -> None:
    backend = FloodBackend(events, rate)
    app = StreamwatchApp(backend, checkpoint_refresh_s=0, history=history, watch_landing=False)
    lag = RenderLag(app, collections.deque())
    gc.collect()
    rss0 = rss_mib()
    quarters: list[tuple[float, float, float, float]] = []
    async with app.run_test(size=(120, 40)) as pilot:
        mark = 0
        for q in range(1, 5):
            target = events * q // 4
            while len(lag.samples) < target:
                await pilot.pause(0.05)
            lags = list(lag.samples)[mark:target]
            mark = target
            gc.collect()
            quarters.append((pct(lags, 50) * 1000, pct(lags, 95) * 1000, pct(lags, 99) * 1000, rss_mib()))
        stored = sum(len(r.history) for r in app.board.rows.values())
    print(f"dashboard: {events:,} progress events, {len(QUERIES)} queries, {rate:g} events/s, history {history:,}/query")
    print(f"  RSS before {rss0:.1f} MiB; stored samples {stored:,}")
    for i, (p50, p95, p99, rss) in enumerate(quarters, 1):
        print(f"  quarter {i}: render lag p50 {p50:.1f} ms  p95 {p95:.1f} ms  p99 {p99:.1f} ms  RSS {rss:.1f} MiB")
    growth = quarters[-1][2] / quarters[0][2] if quarters[0][2] > 0 else float("nan")
    print(f"  lag growth (p99 last quarter / first quarter): {growth:.2f}x")
    print(f"  memory growth after the bound (RSS q4 - q2): {quarters[3][3] - quarters[1][3]:+.1f} MiB")


def board_memory(events: int, history: int) -> float:
    """MiB held by a QueryBoard fed ``events`` progress events (tracemalloc)."""
    import tracemalloc

    gc.collect()
    tracemalloc.start()
    board = QueryBoard(QUERIES, history=history)
    for i in range(events):
        board.apply(progress(i))
    gc.collect()
    size = tracemalloc.get_traced_memory()[0] / 2**20
    tracemalloc.stop()
    del board
    return size


# -- 100 queries at 2 progress events/s each, replayed at speed --------------------------------------
HUNDRED = [f"q{i:03d}" for i in range(100)]
T0_MS = 1_767_261_600_000  # 2026-01-01T10:00:00Z


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def write_hundred(path: Path, seconds: float) -> int:
    """A streamwatch recording: 100 queries started, then each reports progress every 500 ms
    (staggered by 5 ms: 200 events/s in all) for ``seconds``; returns the progress count."""
    from streamwatch.events.jsonl import JsonlRecorder
    from streamwatch.model.events import QueryStarted

    n = 0
    with JsonlRecorder(path) as rec:
        for q in HUNDRED:
            rec.write(QueryStarted(f"id-{q}", f"run-{q}", _iso(T0_MS), name=q))
        for tick in range(int(seconds * 2)):
            for k, q in enumerate(HUNDRED):
                ms = T0_MS + 1_000 + tick * 500 + k * 5
                rec.write(QueryProgress.from_dict({
                    "id": f"id-{q}", "runId": f"run-{q}", "name": q, "timestamp": _iso(ms), "batchId": tick,
                    "batchDuration": 300 + k, "numInputRows": 1000 + k, "inputRowsPerSecond": 2000.0 + k,
                    "processedRowsPerSecond": 3000.0 - k,
                    "durationMs": {"addBatch": 200, "getBatch": 5, "latestOffset": 10, "queryPlanning": 20,
                                   "walCommit": 30, "commitOffsets": 15, "triggerExecution": 300 + k},
                    "eventTime": {"max": _iso(ms - 60_000), "watermark": _iso(ms - 120_000)},
                    "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": tick * 10,
                                        "memoryUsedBytes": 1000 + tick}],
                    "sources": [{"description": "FileStreamSource[x]", "startOffset": {"logOffset": tick},
                                 "endOffset": {"logOffset": tick + 1}, "numInputRows": 1000 + k}],
                    "sink": {"description": "FileSink[x]", "numOutputRows": 1000 + k},
                }))
                n += 1
    return n


async def _until(predicate: Callable[[], bool], timeout_s: float = 120.0) -> float:
    """Seconds until ``predicate()`` holds, polled every millisecond or so on the app's loop."""
    t0 = time.monotonic()
    while not predicate():
        if time.monotonic() - t0 > timeout_s:
            raise TimeoutError("no response")
        await asyncio.sleep(0.001)
    return time.monotonic() - t0


def _post_keys(app: StreamwatchApp, *keys: str) -> None:
    """Keys as the terminal driver delivers them: ``Key`` messages posted to the app."""
    from textual import events

    for key in keys:
        app.post_message(events.Key(key, key if len(key) == 1 else None))


@dataclass(frozen=True)
class Round:
    """One ``--hundred`` round's figures (a child process prints it as one JSON line): render
    lag (ms), each probe's key response (ms), CPU (s) and RSS samples (s since start, MiB)."""

    variant: str
    events: int
    wall_s: float
    rate: float  # events/s
    lag_p50_ms: float
    lag_p99_ms: float
    lag_max_ms: float
    slash_ms: list[float]
    enter_ms: list[float]
    charts_ms: list[float]
    cpu_s: float
    rss: list[tuple[float, float]]

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, line: str) -> Round:
        d = json.loads(line)
        return cls(**{**d, "rss": [(t, m) for t, m in d["rss"]]})


@dataclass
class _Probes:
    """Key responses measured during a round (s)."""

    slash: list[float] = field(default_factory=list)
    enter: list[float] = field(default_factory=list)
    charts: list[float] = field(default_factory=list)  # enter until every visible chart of the query is drawn


async def _probe_keys(app: StreamwatchApp, frames: Frames, probes: _Probes) -> None:
    """'/' then 'q05' (the table shows q050…q059), escape, then enter on the highlighted query
    (its detail tab, drawn for that query, painted; then its charts), then back to the queries."""
    from streamwatch.tui.views.detail import DetailView
    from streamwatch.tui.views.queries import QueriesView

    table = app.query_one("#query-table", QueriesView)
    detail = app.query_one("#detail-view", DetailView)
    _post_keys(app, "slash", "q", "0", "5")
    probes.slash.append(await frames.until(lambda: table.row_count == 10))
    _post_keys(app, "escape")
    await _until(lambda: table.row_count == 100 and app.focused is table)
    name = table.cursor_key()
    t0 = time.monotonic()
    _post_keys(app, "enter")
    probes.enter.append(await frames.until(lambda: app.active_tab == "detail" and detail.shown == name))
    await frames.until(lambda: not detail.charts_pending)
    probes.charts.append(time.monotonic() - t0)
    _post_keys(app, "1")
    await _until(lambda: app.active_tab == "queries" and app.focused is table)


async def hundred_round(recording: Path, variant: str, soak: bool = False) -> Round:
    """One round in this process: replay ``recording`` at speed into the app (``variant``
    ``coalesced``: the dashboard as shipped; ``every-event``: a redraw per event)."""
    from streamwatch.backends.replay import ReplayBackend

    backend = ReplayBackend(recording, speed=1)
    app = StreamwatchApp(backend, checkpoint_refresh_s=0, watch_landing=False)
    if variant == "every-event":
        app.render_interval_s = 0.0
    # 8 bytes a sample (a deque of floats held ~32): the soak's RSS is the app's, not this list's
    lag = RenderLag(app, array("d"))
    probes = _Probes()
    rss: list[tuple[float, float]] = []
    cpu0 = time.process_time()
    async with app.run_test(size=(160, 50)) as pilot:
        frames = Frames(app)
        t_start = time.monotonic()
        await _until(lambda: len(lag.samples) > 0, 60)
        next_key = time.monotonic() + 3.0
        next_rss = time.monotonic() + 3.0
        rss.append((0.0, rss_mib()))
        while not backend.done.is_set():
            now = time.monotonic()
            if now >= next_rss:
                rss.append((now - t_start, rss_mib()))
                next_rss += 60.0 if soak else 1.0
            if now >= next_key:
                await _probe_keys(app, frames, probes)
                next_key = time.monotonic() + (10.0 if soak else 1.5)
            await asyncio.sleep(0.05)
        await _until(lambda: not lag.unrendered and not app.frame_pending, 30)
        wall = time.monotonic() - t_start
        rss.append((wall, rss_mib()))
        await pilot.press("q")
    lags = list(lag.samples)
    return Round(variant, backend.emitted, wall, backend.emitted / wall, pct(lags, 50) * 1000, pct(lags, 99) * 1000,
                 max(lags) * 1000, [x * 1000 for x in probes.slash], [x * 1000 for x in probes.enter],
                 [x * 1000 for x in probes.charts], time.process_time() - cpu0, rss)


def _child(recording: Path, variant: str, soak: bool = False) -> Round:
    import subprocess

    args = [sys.executable, __file__, "--hundred-round", variant, "--recording", str(recording)]
    out = subprocess.run(args + (["--soak"] if soak else []), capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"round {variant} failed: {out.stderr[-2000:]}")
    return Round.from_json(out.stdout.strip().splitlines()[-1])


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def _keys(r: Round) -> str:
    return (f"'/' p50 {pct(r.slash_ms, 50):.0f} p99 {pct(r.slash_ms, 99):.0f} ms, enter p50 "
            f"{pct(r.enter_ms, 50):.0f} p99 {pct(r.enter_ms, 99):.0f} ms (all charts p99 "
            f"{pct(r.charts_ms, 99):.0f} ms; {len(r.slash_ms)} probes)")


def _round_line(i: int, r: Round) -> str:
    growth = r.rss[-1][1] - r.rss[min(3, len(r.rss) - 1)][1]
    return (f"  round {i + 1} {r.variant:11s}: {r.rate:.0f} events/s, lag p50 {r.lag_p50_ms:.0f} ms "
            f"p99 {r.lag_p99_ms:.0f} ms max {r.lag_max_ms:.0f} ms; '/' max "
            f"{max(r.slash_ms, default=float('nan')):.0f} ms, enter max "
            f"{max(r.enter_ms, default=float('nan')):.0f} ms; CPU {r.cpu_s:.1f} s "
            f"({r.cpu_s / max(1, r.events) * 1000:.2f} ms/event); "
            f"RSS {r.rss[0][1]:.0f} → {r.rss[-1][1]:.0f} MiB ({growth:+.1f} after 3 s)")


def _comparison(res: dict[str, list[Round]]) -> None:
    """Per figure: median (min) over rounds of each variant and of their ratio, then the targets."""
    import statistics

    def each(v: str, figure: Callable[[Round], float]) -> list[float]:
        return [figure(r) for r in res[v]]

    print("  per round: median (min) over rounds — dashboard | every-event redraw | ratio alternative/dashboard")
    figures: tuple[tuple[str, Callable[[Round], float]], ...] = (
        ("render lag p99 ms", lambda r: r.lag_p99_ms),
        ("'/' filter p99 ms", lambda r: pct(r.slash_ms, 99)),
        ("enter p99 ms", lambda r: pct(r.enter_ms, 99)),
        ("enter→charts p99", lambda r: pct(r.charts_ms, 99)),
        ("CPU s", lambda r: r.cpu_s),
    )
    for label, figure in figures:
        a, b = each("coalesced", figure), each("every-event", figure)
        ratios = [y / x for x, y in zip(a, b, strict=True) if x > 0]  # one figure a round each
        print(f"  {label:18s} {statistics.median(a):8.1f} ({min(a):.1f}) | {statistics.median(b):8.1f} "
              f"({min(b):.1f}) | {statistics.median(ratios):.2f}× ({min(ratios):.2f}×)")
    print(f"  load average after: {loadavg()}")
    worst = max(each("coalesced", lambda r: r.lag_p99_ms))
    keys = max(max(r.slash_ms + r.enter_ms, default=0) for r in res["coalesced"])
    print(f"  targets: lag p99 < 250 ms — worst round {worst:.0f} ms {'ok' if worst < 250 else 'MISSED'}; "
          f"keys < 100 ms — slowest key {keys:.0f} ms {'ok' if keys < 100 else 'MISSED'}")


def hundred(rounds: int, seconds: float, soak_minutes: float) -> None:
    import tempfile

    variants = ("coalesced", "every-event")
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "hundred.jsonl"
        n = write_hundred(rec, seconds)
        print(f"dashboard, 100 queries × 2 progress events/s replayed at speed: {n:,} events over {seconds:g} s, "
              f"{rounds} alternated rounds (fresh process each); alternative: a redraw on every event; "
              f"load average {loadavg()} on {os.cpu_count()} cores", flush=True)
        res: dict[str, list[Round]] = {v: [] for v in variants}
        for i in range(rounds):
            for v in (variants if i % 2 == 0 else variants[::-1]):
                r = _child(rec, v)
                res[v].append(r)
                print(_round_line(i, r), flush=True)
        if rounds >= 1:  # else the soak alone
            _comparison(res)
        soak(tmp, soak_minutes)


def soak(tmp: str, soak_minutes: float) -> None:
    """One ``soak_minutes`` run of the dashboard alone (nothing when 0)."""
    if soak_minutes <= 0:
        return
    rec2 = Path(tmp) / "soak.jsonl"
    n2 = write_hundred(rec2, soak_minutes * 60)
    print(f"  soak: {n2:,} events over {soak_minutes:g} min, load average {loadavg()}", flush=True)
    r = _child(rec2, "coalesced", soak=True)
    start = r.rss[1][1] if len(r.rss) > 1 else r.rss[0][1]
    print(f"  soak: {r.rate:.0f} events/s, render lag p50 {r.lag_p50_ms:.0f} ms p99 {r.lag_p99_ms:.0f} ms "
          f"max {r.lag_max_ms:.0f} ms; {_keys(r)}; CPU {r.cpu_s / max(1, r.events) * 1000:.2f} ms/event")
    print(f"  soak RSS: start (3 s) {start:.1f} MiB, end {r.rss[-1][1]:.1f} MiB ({r.rss[-1][1] - start:+.1f}); "
          "per minute: " + " ".join(f"{m:.0f}" for _, m in r.rss) + " MiB")
    print(f"  load average after: {loadavg()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hundred", action="store_true", help="100 queries at 2 progress events/s each (issue 18)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each --hundred round's recording")
    ap.add_argument("--minutes", "--soak-minutes", dest="soak_minutes", type=float, default=0.0,
                    help="add an N-minute soak of the --hundred dashboard (the issue's soak: --minutes 30)")
    ap.add_argument("--hundred-round", choices=("coalesced", "every-event"), help=argparse.SUPPRESS)
    ap.add_argument("--recording", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--soak", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--rate", type=float, default=200.0)
    ap.add_argument("--history", type=int, default=1_000,
                    help="per-query bound (small, so the bound is reached within the run)")
    a = ap.parse_args()
    if a.hundred_round:
        print(asyncio.run(hundred_round(a.recording, a.hundred_round, a.soak)).to_json())
        return
    if a.hundred:
        hundred(a.rounds, a.seconds, a.soak_minutes)
        return
    asyncio.run(run_app(a.events, a.rate, a.history))
    bounded = board_memory(a.events, a.history)
    unbounded = board_memory(a.events, 10**9)
    print(f"history memory for {a.events:,} events: bounded {bounded:.1f} MiB vs unbounded history "
          f"{unbounded:.1f} MiB (ratio {bounded / unbounded:.2f}x)")


if __name__ == "__main__":
    main()
