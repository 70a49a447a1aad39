"""availableNow respects the medallion order: in a fresh workspace with N landed files, one
``availableNow`` run through the same entry point as ``streamwatch log``/``run``
(:class:`LiveBackend`) leaves every table holding exactly what its input implies.

The expected tables are computed independently with pandas over the landed CSV/JSON files
(never with the pipelines' own transform functions). Watermark rule (Spark's
``EventTimeWatermark``): a batch drops rows whose event time is at or before the watermark
planned for it, and append mode emits a window once the watermark reaches its end. With the
ordered run each downstream layer reads its (complete) upstream table in one batch whose
watermark is still 0, so no row is dropped as late even though the flights files carry late,
out-of-order rows; the closing no-data batch sets the watermark to max(event time) − 1 h,
which decides the windows gold holds.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.spark

HOUR_S = 3600


def _run_available_now(spark, ws, name):
    from streamwatch.model.events import QueryStarted, QueryTerminated
    from streamwatch.model.runtime import QueryQueued
    from streamwatch.pipeline import get_pipeline
    from streamwatch.spark.live import LiveBackend

    got: list = []
    lock = threading.Lock()

    def emit(obj):
        with lock:
            got.append(obj)

    backend = LiveBackend(get_pipeline(name), ws, trigger="availableNow", spark=spark, table_format="parquet",
                          initial_files=0, max_files=0)
    backend.start(emit)
    try:
        assert backend.wait_finished(300), "the availableNow run did not finish within 300 s"
    finally:
        backend.stop()
    queued = {e.query_name: e.waiting_for for e in got if isinstance(e, QueryQueued)}
    order = [e.name for e in got if isinstance(e, QueryStarted)]
    failed = [e for e in got if isinstance(e, QueryTerminated) and (e.failed or e.stop_requested)]
    assert not failed, f"every layer ends by itself, without failure: {failed}"
    assert sorted(order) == sorted(q.query_name for q in backend.plan.queries), "each layer ran exactly once"
    return backend, queued, order


def _epoch_windows(df, *cols):
    from pyspark.sql import functions as F

    return df.select(F.unix_timestamp("window_start").alias("ws"), *cols)


def _after(order, a, b):
    return order.index(b) > order.index(a)


def test_flights_available_now_fills_every_layer(spark, tmp_path):
    from streamwatch.pipeline import Workspace

    from sample_pipelines.flights.factory import FlightsFactory
    from sample_pipelines.flights.weather import WeatherFactory

    ws = Workspace(tmp_path)
    landed = FlightsFactory(ws.landing("flights", "flights"), late_ratio=0.1, late_by_files=2).land(4)
    assert len(landed) == 4 and len(WeatherFactory(ws.landing("flights", "weather")).land(4)) == 4
    backend, queued, order = _run_available_now(spark, ws, "flights")
    assert queued["flights_enriched"] == ("flights_silver", "flights_weather")
    assert queued["flights_gold"] == ("flights_silver",) and "flights_bronze" not in queued
    for a, b in [("flights_bronze", "flights_silver"), ("flights_silver", "flights_gold"),
                 ("flights_weather", "flights_enriched"), ("flights_silver", "flights_enriched")]:
        assert _after(order, a, b), f"{b} started after {a}"

    csv = pd.concat([pd.read_csv(p) for p in sorted(landed)], ignore_index=True)
    departed = csv[csv["dep_time"].notna()].copy()
    departed["sched"] = (pd.to_datetime(departed["time_hour"], utc=True)
                         + pd.to_timedelta(departed["minute"], unit="m")).astype("int64") // 10**9
    tables = backend.runner.tables
    assert tables.read("bronze").count() == len(csv)
    silver = tables.read("silver").selectExpr("carrier", "flight", "unix_timestamp(sched_dep_ts) AS s").collect()
    assert sorted((r.carrier, r.flight, r.s) for r in silver) == sorted(
        zip(departed["carrier"], departed["flight"].astype(int), departed["sched"].astype(int), strict=True))
    assert tables.read("flights_weather").count() > 0

    watermark = departed["sched"].max() - HOUR_S
    departed["ws"] = departed["sched"] // HOUR_S * HOUR_S
    expected = departed.groupby(["ws", "carrier"]).agg(
        flights=("dep_delay", "size"), avg=("dep_delay", "mean"), mx=("dep_delay", "max")).reset_index()
    expected = expected[expected["ws"] + HOUR_S <= watermark]
    gold = _epoch_windows(tables.read("gold"), "carrier", "flights", "avg_dep_delay_min", "max_dep_delay_min").collect()
    assert sorted((r.ws, r.carrier, r.flights, round(r.avg_dep_delay_min, 6), r.max_dep_delay_min) for r in gold) == sorted(
        (int(r.ws), r.carrier, int(r.flights), round(float(r.avg), 6), float(r.mx)) for r in expected.itertuples())
    assert len(expected) > 20


def _events_oracle(paths):
    good = []
    bad = 0
    for p in paths:
        for line in Path(p).read_text().splitlines():
            try:
                d = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(d.get("time"), int) and isinstance(d.get("action"), str):
                good.append((d["time"], d["action"]))
            else:
                bad += 1
    return pd.DataFrame(good, columns=["time", "action"]), bad


def test_events_available_now_fills_every_layer(spark, tmp_path):
    from streamwatch.pipeline import Workspace

    from sample_pipelines.events.factory import EventsFactory

    ws = Workspace(tmp_path)
    landed = EventsFactory(ws.landing("events", "events"), bad_ratio=0.05).land(6)
    backend, queued, order = _run_available_now(spark, ws, "events")
    assert queued == {"events_quarantine": ("events_bronze",), "events_silver": ("events_bronze",),
                      "events_gold": ("events_silver",), "events_gold_sliding": ("events_silver",)}
    assert _after(order, "events_silver", "events_gold") and _after(order, "events_bronze", "events_silver")

    events, bad = _events_oracle(landed)
    assert bad > 0 and len(events) > 100
    tables = backend.runner.tables
    assert tables.read("quarantine").count() == bad
    assert tables.read("silver").count() == len(events)
    events["ws"] = events["time"] // HOUR_S * HOUR_S
    expected = events.groupby(["action", "ws"]).size()
    gold = _epoch_windows(spark.table("events_gold"), "action", "count").collect()
    assert sorted((r.action, r.ws, r["count"]) for r in gold) == sorted(
        (a, int(w), int(n)) for (a, w), n in expected.items())


def _order_lines(orders):
    rows = []
    for o in orders:
        items = o.get("items") or [None]
        for it in items:
            q = None if it is None else it.get("quantity")
            price = None if it is None else it.get("price")
            rows.append({"order_id": o["order_id"], "ts": int(pd.Timestamp(o["timestamp"]).timestamp()),
                         "country": o["customer"]["address"]["country"], "method": o["payment"]["method"],
                         "quantity": q or 0, "line_total": (q * price) if q is not None and price is not None else 0.0})
    return pd.DataFrame(rows)


def test_orders_available_now_fills_every_layer(spark, tmp_path):
    from streamwatch.pipeline import Workspace

    from sample_pipelines.orders.factory import OrdersFactory

    ws = Workspace(tmp_path)
    # 18 files, malformed-record files among them (land(n) lands exactly n): time enough for
    # windows to close behind the watermark
    landed = OrdersFactory(ws.landing("orders", "orders"), bad_ratio=0.05).land(18)
    texts = [Path(p).read_text() for p in landed]  # bronze archives the files (cleanSource)
    backend, queued, order = _run_available_now(spark, ws, "orders")
    assert queued["orders_gold_summary"] == ("orders_silver",)
    assert _after(order, "orders_silver", "orders_gold_revenue")

    orders, bad = {}, 0
    for text in texts:
        try:
            batch = json.loads(text)
        except ValueError:
            bad += 1
            continue
        if not isinstance(batch, list) or any(
                not isinstance(it.get("quantity"), int) for o in batch for it in (o.get("items") or [])):
            bad += 1
            continue
        for o in batch:
            orders.setdefault(o["order_id"], o)  # re-sent orders: one kept (dedup within watermark)
    assert bad > 0
    lines = _order_lines(orders.values())
    tables = backend.runner.tables
    assert tables.read("quarantine").count() == bad
    assert tables.read("silver").count() == len(lines)

    summary = lines.groupby("method").agg(revenue=("line_total", "sum"), items=("quantity", "sum"),
                                          lines=("order_id", "size"))
    got = tables.read("gold_summary").collect()
    assert sorted((r.payment_method, round(r.revenue, 2), r["items"], r.lines) for r in got) == sorted(
        (m, round(float(r.revenue), 2), int(r["items"]), int(r.lines)) for m, r in summary.iterrows())

    watermark = lines["ts"].max() - HOUR_S
    lines["ws"] = lines["ts"] // HOUR_S * HOUR_S
    revenue = lines.groupby(["ws", "country"]).agg(revenue=("line_total", "sum"), n=("order_id", "size")).reset_index()
    revenue = revenue[revenue["ws"] + HOUR_S <= watermark]
    got = _epoch_windows(tables.read("gold_revenue"), "country", "revenue", "lines").collect()
    assert sorted((r.ws, r.country, round(r.revenue, 2), r.lines) for r in got) == sorted(
        (int(r.ws), r.country, round(float(r.revenue), 2), int(r.n)) for r in revenue.itertuples())
    assert len(revenue) > 0
