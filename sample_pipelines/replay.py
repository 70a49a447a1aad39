"""Replay a time-ordered pandas table into a landing directory, one file per interval of
event time, atomically (``.<name>.tmp`` first — Spark's file source ignores names starting
with ``.`` — then renamed). File names carry the interval start, so a factory created again on
the same directory continues after the last landed file (this is what ``streamwatch land``
relies on across processes)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

# numpy/pandas are imported where data is made: reading a pipeline's definition (its
# layers and tables, as `inspect` and `lineage` do) must not load them (~0.5 s)
if TYPE_CHECKING:
    import pandas as pd


def write_atomically(final: Path, text: str) -> Path:
    """Write ``text`` to ``final`` through a hidden temporary file and a rename."""
    tmp = final.parent / f".{final.name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, final)
    return final


class IntervalReplay:
    """Lands rows of ``data`` (sorted by its UTC ``_sched`` column) into ``directory``,
    ``interval_minutes`` of event time per file named by ``name_format`` (strftime of the
    interval start). Empty intervals are skipped. Subclasses shape a file's text in
    :meth:`render` and may hold rows back (:meth:`extra_rows`)."""

    name_format = "data_%Y-%m-%dT%H-%M.csv"

    def __init__(self, directory: Path, interval_minutes: int = 360) -> None:
        if interval_minutes < 1:
            raise ValueError("interval_minutes must be >= 1")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.interval = timedelta(minutes=interval_minutes)
        self._data: pd.DataFrame | None = None
        self._cursor: pd.Timestamp | None = None

    def load(self) -> pd.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    def data(self) -> pd.DataFrame:
        if self._data is None:
            self._data = self.load()
            last = self.last_landed()
            self._cursor = self._data["_sched"].iloc[0].floor("D") if last is None else last + self.interval
        return self._data

    def last_landed(self) -> pd.Timestamp | None:
        """The interval start of the newest file already in ``directory`` (None: none yet).
        Names that do not follow ``name_format`` (a user's ``flights_backup.csv``, an editor's
        ``flights_…csv~``) are not landed files and are ignored."""
        import pandas as pd
        glob = self.name_format.split("%", 1)[0] + "*"
        starts = [start for p in self.directory.glob(glob) if not p.name.startswith(".")
                  if (start := self._interval_start(p.name)) is not None]
        return pd.Timestamp(max(starts), tz="UTC") if starts else None

    def _interval_start(self, name: str) -> datetime | None:
        """The interval start ``name`` carries, or None when it does not follow ``name_format``."""
        try:
            return datetime.strptime(name, self.name_format)
        except ValueError:
            return None

    @property
    def exhausted(self) -> bool:
        data = self.data()
        return self._cursor > data["_sched"].iloc[-1] and not self.pending()

    def pending(self) -> bool:
        """True while rows are held back for later files."""
        return False

    def extra_rows(self, chunk: pd.DataFrame, lo: pd.Timestamp) -> pd.DataFrame:
        """The rows the file for interval ``lo`` holds, given the interval's own rows."""
        return chunk

    def render(self, rows: pd.DataFrame, lo: pd.Timestamp) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def land(self, n_files: int = 1) -> list[Path]:
        """Land the next ``n_files`` non-empty intervals; returns the files written."""
        data = self.data()
        written: list[Path] = []
        while len(written) < n_files and not self.exhausted:
            lo = self._cursor
            assert lo is not None, "data() placed the cursor"
            hi = lo + self.interval
            self._cursor = hi
            left = data["_sched"].searchsorted(lo, side="left")
            right = data["_sched"].searchsorted(hi, side="left")
            rows = self.extra_rows(data.iloc[left:right], lo)
            if rows.empty:
                continue
            final = self.directory / lo.strftime(self.name_format)
            text = self.render(rows, lo)
            self.before_landing(lo)
            written.append(write_atomically(final, text))
            self.landed(lo)
        return written

    def before_landing(self, lo: pd.Timestamp) -> None:
        """Called just before the file of interval ``lo`` is written (save state as of it)."""

    def landed(self, lo: pd.Timestamp) -> None:
        """Called after the file of interval ``lo`` was written."""
