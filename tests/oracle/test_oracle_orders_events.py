"""The orders and events pipelines against independent oracles: Python's ``json`` and pandas
over the landed files, computed without any function of the pipelines (no ``deduplicated``,
``revenue``, ``summary``, ``GOLD_SQL``): a wrong join key, window bound, dedup key or
explode in the pipeline fails here even where the streaming-vs-batch tests pass."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.spark

HOUR = pd.Timedelta(hours=1)
QUARTER = pd.Timedelta(minutes=15)


def _run(spark, tmp_path_factory, name: str, factory, **kwargs):
    """Land files with ``factory`` and run pipeline ``name`` with availableNow in the shared
    session, tables in the format the session decided (the runner's own reader reads them)."""
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    ws = Workspace(tmp_path_factory.mktemp(f"{name}-oracle-ws"))
    pipeline = get_pipeline(name)
    source = pipeline.sources[0].name
    factory(ws.landing(name, source), **kwargs)
    delta = "Delta" in (spark.conf.get("spark.sql.extensions", "") or "")
    runner = PipelineRunner(spark, pipeline, ws, "delta" if delta else "parquet")
    runner.run_available_now(timeout_s=300)
    return runner, ws


def _table(runner, layer: str):
    return runner.tables.read(runner.pipeline.layer(layer).table)


# -- orders ---------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _valid_order(o) -> bool:
    """Does the order parse under the pipeline's declared schema (Spark PERMISSIVE otherwise
    turns it into a ``_corrupt_record``)? Checked field by field, by hand."""
    if not isinstance(o, dict) or not isinstance(o.get("order_id"), str):
        return False
    try:
        pd.Timestamp(o["timestamp"])
    except (KeyError, ValueError, TypeError):
        return False
    for item in o.get("items") or []:
        q, p = item.get("quantity"), item.get("price")
        if (q is not None and not _is_int(q)) or (p is not None and not _is_number(p)):
            return False
    return True


def _landed_orders(ws) -> tuple[list[dict], int]:
    """Good orders from every landed file (landing + archive: cleanSource moves them), and the
    number of malformed records."""
    folders = [ws.landing("orders", "orders"), ws.archive("orders", "orders")]
    files = sorted({p.name: p for folder in folders for p in Path(folder).rglob("orders_*.json")}.values())
    good, bad = [], 0
    for f in files:
        try:
            orders = json.loads(f.read_text())
        except json.JSONDecodeError:
            bad += 1
            continue
        for o in orders if isinstance(orders, list) else [orders]:
            if _valid_order(o):
                good.append(o)
            else:
                bad += 1
    return good, bad


def _order_lines(orders: list[dict]) -> pd.DataFrame:
    """Each order_id once; one row per item, an order without items one row of nothing."""
    seen: dict[str, dict] = {}
    for o in orders:
        seen.setdefault(o["order_id"], o)
    rows = []
    for o in seen.values():
        base = {"order_id": o["order_id"], "ts": pd.Timestamp(o["timestamp"]),
                "country": o["customer"]["address"]["country"], "method": o["payment"]["method"]}
        for item in o["items"] or [None]:
            q = item["quantity"] if item else 0
            cents = round(item["price"] * 100) * item["quantity"] if item else 0
            rows.append({**base, "quantity": q, "cents": cents})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def orders_oracle(spark, tmp_path_factory):
    from sample_pipelines.orders.factory import OrdersFactory

    def land(folder, **kw):
        # 24 files (malformed-record files among them; `land(n)` lands exactly n): the orders
        # the 16 good files of old, so more than ten revenue windows
        OrdersFactory(folder, bad_ratio=0.05, dup_ratio=0.2).land(24)

    runner, ws = _run(spark, tmp_path_factory, "orders", land)
    good, bad = _landed_orders(ws)
    return runner, _order_lines(good), len(good), bad


def test_orders_oracle_input_holds_duplicates_and_bad_records(orders_oracle):
    _runner, lines, n_good, n_bad = orders_oracle
    assert n_bad > 0, "bad_ratio=0.05 must land malformed orders"
    assert lines["order_id"].nunique() < n_good, "dup_ratio=0.2 must re-send orders"


def test_orders_gold_revenue_equals_pandas(orders_oracle):
    from pyspark.sql import functions as F

    runner, lines, _, _ = orders_oracle
    lines = lines.assign(window_start=lines["ts"].dt.floor("h"))
    watermark = lines["ts"].max() - HOUR
    exp = lines.groupby(["window_start", "country"]).agg(
        cents=("cents", "sum"), items=("quantity", "sum"), lines=("order_id", "size")).reset_index()
    exp = exp[exp["window_start"] + HOUR <= watermark]
    want = {(int(r.window_start.value // 1000), r.country): (r.cents / 100, r.items, r.lines) for r in exp.itertuples()}
    got_rows = _table(runner, "gold_revenue").select(
        F.unix_micros("window_start").alias("start_us"), F.unix_micros("window_end").alias("end_us"),
        "country", "revenue", "items", "lines").collect()
    got = {(r.start_us, r.country): (r.revenue, r.items, r.lines) for r in got_rows}
    assert len(got) == len(got_rows) and len(want) > 10
    assert all(r.end_us - r.start_us == 3_600_000_000 for r in got_rows)
    assert set(got) == set(want)
    for key, (revenue, items, n) in got.items():
        assert (revenue, items, n) == (pytest.approx(want[key][0], abs=1e-6), want[key][1], want[key][2]), key


def test_orders_gold_summary_equals_pandas(orders_oracle):
    runner, lines, _, _ = orders_oracle
    exp = lines.groupby("method").agg(cents=("cents", "sum"), items=("quantity", "sum"), lines=("order_id", "size"))
    got = {r.payment_method: (r.revenue, r.items, r.lines) for r in _table(runner, "gold_summary").collect()}
    assert set(got) == set(exp.index) == {"card", "paypal", "transfer", "voucher"}
    for method, row in exp.iterrows():
        assert got[method] == (pytest.approx(row.cents / 100, abs=1e-6), row["items"], row["lines"]), method


def test_orders_silver_has_one_row_per_item_of_each_order_once(orders_oracle):
    runner, lines, _, _ = orders_oracle
    silver = _table(runner, "silver")
    assert silver.count() == len(lines)
    assert silver.select("order_id").distinct().count() == lines["order_id"].nunique()


# -- events ---------------------------------------------------------------------------------

def _landed_events(folder) -> pd.DataFrame:
    """Every good line of the landed JSON-lines files: ``time`` an integer (epoch s), ``action``
    a string; other lines are what bronze must quarantine."""
    rows = []
    for f in sorted(Path(folder).glob("events_*.json")):
        for line in f.read_text().splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(e, dict) and _is_int(e.get("time")) and isinstance(e.get("action"), str):
                rows.append((e["time"], e["action"]))
    df = pd.DataFrame(rows, columns=["time", "action"])
    df["ts"] = pd.to_datetime(df["time"], unit="s", utc=True)
    return df


@pytest.fixture(scope="module")
def events_oracle(spark, tmp_path_factory):
    from sample_pipelines.events.factory import EventsFactory

    def land(folder, **kw):
        EventsFactory(folder, bad_ratio=0.03).land(12)

    runner, ws = _run(spark, tmp_path_factory, "events", land)
    return runner, spark, _landed_events(ws.landing("events", "events"))


def _memory_table(runner, spark, layer: str) -> dict:
    from pyspark.sql import functions as F

    name = runner.pipeline.query_name(runner.pipeline.layer(layer))
    rows = spark.table(name).select(
        "action", F.unix_micros("window_start").alias("start_us"), F.unix_micros("window_end").alias("end_us"),
        "count").collect()
    got = {(r.action, r.start_us, r.end_us): r["count"] for r in rows}
    assert len(got) == len(rows)
    return got


def test_events_gold_counts_equal_pandas(events_oracle):
    runner, spark, events = events_oracle
    assert len(events) > 500 and set(events["action"]) == {"Open", "Close"}
    start = events["ts"].dt.floor("h")
    want = {(a, int(s.value // 1000), int((s + HOUR).value // 1000)): int(n)
            for (a, s), n in events.groupby([events["action"], start]).size().items()}
    assert _memory_table(runner, spark, "gold") == want


def test_events_gold_sliding_counts_equal_pandas(events_oracle):
    """1-hour windows sliding every 15 minutes: each event counts in the four windows that
    start in the hour up to its time."""
    runner, spark, events = events_oracle
    want: dict = {}
    for t, action in zip(events["ts"], events["action"], strict=True):
        last = t.floor("15min")
        for k in range(4):
            s = last - k * QUARTER
            key = (action, int(s.value // 1000), int((s + HOUR).value // 1000))
            want[key] = want.get(key, 0) + 1
    assert _memory_table(runner, spark, "gold_sliding") == want
