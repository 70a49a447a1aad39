"""Data factories of orders and events, late/bad injection of flights (no JVM)."""

from __future__ import annotations

import csv
import json

import pytest

from sample_pipelines.events.factory import EventsFactory
from sample_pipelines.flights.factory import FlightsFactory
from sample_pipelines.orders.factory import OrdersFactory


def test_orders_are_nested_multiline_json_with_resends_and_resume(tmp_path):
    f = OrdersFactory(tmp_path, dup_ratio=0.3)
    f.land(2)
    first = json.loads((tmp_path / "orders_000001.json").read_text())
    second = json.loads((tmp_path / "orders_000002.json").read_text())
    assert (tmp_path / "orders_000001.json").read_text().count("\n") > len(first)  # pretty-printed
    o = first[0]
    assert set(o) == {"order_id", "timestamp", "customer", "items", "payment", "metadata"}
    assert set(o["customer"]["address"]) == {"city", "postal_code", "country"}
    resent = {x["order_id"] for x in second} & {x["order_id"] for x in first}
    assert resent, "dup_ratio=0.3 must re-send orders of the previous file"
    (tmp_path / "orders_000001.json").unlink()  # e.g. archived by cleanSource
    assert OrdersFactory(tmp_path).land(1)[-1].name == "orders_000003.json"


def test_bad_orders_land_in_their_own_unparseable_or_mistyped_files(tmp_path):
    files = OrdersFactory(tmp_path, bad_ratio=0.5).land(2)
    bad = [p for p in files if "_bad_" in p.name]
    assert bad
    for p in bad:
        try:
            doc = json.loads(p.read_text())
        except json.JSONDecodeError:
            continue
        assert isinstance(doc["items"][0]["quantity"], str)


def test_events_prefix_integrity_in_every_prefix_of_files(tmp_path):
    f = EventsFactory(tmp_path)
    opens = closes = 0
    for path in f.land(20):
        for line in path.read_text().splitlines():
            e = json.loads(line)
            opens += e["action"] == "Open"
            closes += e["action"] == "Close"
        assert opens >= closes
    assert closes > 0


def test_flights_late_rows_are_held_back_and_bad_lines_injected(tmp_path):
    plain = FlightsFactory(tmp_path / "a").land(6)
    faulty = FlightsFactory(tmp_path / "b", late_ratio=0.1, bad_ratio=0.05).land(6)
    rows = lambda paths: sum(1 for p in paths for _ in p.open()) - len(paths)  # noqa: E731
    assert rows(faulty) < rows(plain)  # late rows from the last files are still pending
    assert [g.name for g in (tmp_path / "b").glob(".late-pending.*.csv")] == [
        f".late-pending.{faulty[-1].name[len('flights_'):-len('.csv')]}.csv"]  # as of the last file only
    lines = [line for p in faulty for line in p.read_text().splitlines()]
    assert any("n/a" in line or "corrupted" in line or line.count(",") < 18 for line in lines)
    late_file = list(csv.DictReader(faulty[4].open()))  # 4 files after the first
    assert any(r.get("time_hour", "") < "2013-01-02" for r in late_file if r.get("time_hour"))


class _Killed(Exception):
    pass


@pytest.mark.parametrize("hook", ["before_landing", "landed"])
def test_flights_factory_killed_around_a_file_resumes_without_losing_or_repeating_rows(tmp_path, hook):
    """Killed after saving the held-back rows but before writing the file (after
    before_landing), or after writing the file but before removing the previous state (instead
    of landed): a new factory lands exactly the files an uninterrupted one does."""
    FlightsFactory(tmp_path / "clean", late_ratio=0.2).land(12)

    class DiesOnce(FlightsFactory):
        def __getattribute__(self, name):
            if name == hook and len(list(self.directory.glob("flights_*.csv"))) == 5:
                original = super().__getattribute__(name)

                def die(lo):
                    if hook == "before_landing":
                        original(lo)
                    raise _Killed
                return die
            return super().__getattribute__(name)

    with pytest.raises(_Killed):
        DiesOnce(tmp_path / "killed", late_ratio=0.2).land(12)
    resumed = FlightsFactory(tmp_path / "killed", late_ratio=0.2)
    resumed.land(12 - len(list((tmp_path / "killed").glob("flights_*.csv"))))
    clean = sorted((tmp_path / "clean").glob("flights_*.csv"))
    killed = sorted((tmp_path / "killed").glob("flights_*.csv"))
    assert [p.name for p in killed] == [p.name for p in clean]
    for a, b in zip(clean, killed, strict=True):
        assert a.read_text() == b.read_text(), f"{b.name} differs from the uninterrupted run"


@pytest.mark.parametrize("kw", [{"late_ratio": 1.5}, {"bad_ratio": -0.1}, {"late_by_files": 0}])
def test_flights_factory_rejects_bad_options(tmp_path, kw):
    with pytest.raises(ValueError):
        FlightsFactory(tmp_path, **kw)


def test_discovery_lists_bundled_pipelines_with_unique_query_names():
    from streamwatch.pipeline import discover_pipelines, get_pipeline

    found = discover_pipelines()
    assert {"flights", "orders", "events"} <= set(found)
    names = [p.query_name(layer) for p in found.values() for layer in p.layers]
    assert len(names) == len(set(names))
    with pytest.raises(KeyError, match="unknown pipeline 'x'"):
        get_pipeline("x")
    with pytest.raises(KeyError, match="has no layer 'platinum'"):
        get_pipeline("flights").layer("platinum")
