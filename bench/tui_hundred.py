"""``bench/tui_bench.py --hundred`` (issue 18 item 4): a recording of 100 queries each reporting
progress twice a second replayed at speed into the real app, a fresh process per round
(``tui_bench.py --hundred-round``), against the named alternative (a redraw on every event),
and the ``--minutes N`` soak; see ``bench/tui_bench.py``'s docstring for what is measured."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.frames import Frames
from bench.tui_measure import RenderLag, loadavg, pct, rss_mib
from streamwatch.model.events import QueryProgress
from streamwatch.tui.app import StreamwatchApp

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

    args = [sys.executable, str(Path(__file__).with_name("tui_bench.py")), "--hundred-round", variant,
            "--recording", str(recording)]
    out = subprocess.run(args + (["--soak"] if soak else []), capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"round {variant} failed: {out.stderr[-2000:]}")
    return Round.from_json(out.stdout.strip().splitlines()[-1])


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
        if not ratios:  # e.g. no key probed in a round this short
            print(f"  {label:18s} not measured in these rounds")
            continue
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
