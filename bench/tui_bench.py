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
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tui_hundred import hundred, hundred_round  # noqa: E402
from bench.tui_measure import RenderLag, pct, rss_mib  # noqa: E402
from streamwatch.analysis.board import QueryBoard  # noqa: E402
from streamwatch.backends.base import Backend  # noqa: E402
from streamwatch.model.events import QueryProgress  # noqa: E402
from streamwatch.model.runtime import QueryPlan, RunPlan  # noqa: E402
from streamwatch.tui.app import StreamwatchApp  # noqa: E402

QUERIES = [f"q{i:02d}" for i in range(20)]


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
