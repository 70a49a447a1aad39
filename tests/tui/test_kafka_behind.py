"""Spark's Kafka source metrics min/avg/maxOffsetsBehindLatest, typed in the event model and
charted in the detail tab — from a recording of a real Kafka query (the real-time mode run
on the test broker), relabelled as one of the recorded flights queries."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from streamwatch.model.events import QueryProgress
from streamwatch.model.progress import OffsetsBehindLatest

from conftest import NOW_MS, wait_for

KAFKA_RECORDING = Path(__file__).resolve().parents[1] / "unit" / "data" / "realtime_kafka_progress.jsonl"


def _kafka_progress(query_id: str, run_id: str, name: str) -> list[QueryProgress]:
    out = []
    for line in KAFKA_RECORDING.read_text().splitlines():
        d = json.loads(line)
        out.append(QueryProgress.from_dict({**d, "id": query_id, "runId": run_id, "name": name}))
    return out


def test_offsets_behind_latest_is_typed_and_absent_for_other_sources():
    raw = [json.loads(line) for line in KAFKA_RECORDING.read_text().splitlines()]
    p = QueryProgress.from_dict(raw[0])
    assert p.sources[0].offsets_behind_latest == OffsetsBehindLatest(449, 449.0, 449)
    assert [QueryProgress.from_dict(d).sources[0].offsets_behind_latest.max for d in raw] == [449, 0, 0, 0]
    assert OffsetsBehindLatest.from_metrics({"numFilesOutstanding": "3"}) is None
    assert OffsetsBehindLatest.from_metrics({"minOffsetsBehindLatest": "x", "avgOffsetsBehindLatest": "1",
                                             "maxOffsetsBehindLatest": "2"}) is None
    both = OffsetsBehindLatest.over([OffsetsBehindLatest(1, 2.0, 3), OffsetsBehindLatest(0, 4.0, 9)])
    assert both == OffsetsBehindLatest(0, 3.0, 9)


def test_detail_tab_charts_offsets_behind_latest_for_a_kafka_query(recorded):
    from streamwatch.model.events import QueryStarted
    from streamwatch.tui.app import StreamwatchApp

    from conftest import ControlledBackend

    plan, objects = recorded
    started = next(o for o in objects if isinstance(o, QueryStarted) and o.name == "flights_silver")
    kafka = _kafka_progress(started.id, started.run_id, "flights_silver")
    app = StreamwatchApp(ControlledBackend(plan, [*objects, *kafka]), checkpoint_refresh_s=0,
                         clock=lambda: NOW_MS, watch_landing=False)

    async def main():
        async with app.run_test(size=(120, 40)) as pilot:
            app.selected = "flights_bronze"
            await pilot.press("2")
            await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
            chart = app.query_one("#chart-kafka-behind")
            await wait_for(pilot, lambda: not chart.display, "no chart for a query reading files")
            await pilot.press("1")
            await wait_for(pilot, lambda: app.active_tab == "queries", "the queries tab")
            app.selected = "flights_silver"
            await pilot.press("2")
            await wait_for(pilot, lambda: chart.values("max") == [449.0, 0.0, 0.0, 0.0], "the recorded maxima")
            assert chart.display
            assert chart.values("avg") == [449.0, 0.0, 0.0, 0.0] and chart.values("min") == [449.0, 0.0, 0.0, 0.0]
            assert [t for t, _ in chart.points("max")] == [p.timestamp_ms for p in kafka]
            legend = str(app.query_one("#chart-kafka-behind .legend").render())
            assert "max 0.0 records" in legend and "latest at 22:00:32 UTC" in legend

    asyncio.run(main())
