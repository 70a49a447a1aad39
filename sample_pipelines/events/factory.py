"""User sessions as ``{"time": <epoch seconds>, "action": "Open"|"Close"}`` JSON lines, like
the classic Structured Streaming example's ``/databricks-datasets/structured-streaming/events``.

Every session opens at some time and closes 1–90 minutes later; events are replayed in time
order, ``interval_minutes`` per file (``events_2016-07-26T00-00.json``), so any prefix of the
files holds at least as many opens as closes (the *prefix integrity* the example teaches).
``bad_ratio`` replaces that fraction of lines by malformed JSON or a wrong-typed ``time``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

# numpy/pandas are imported where data is made: reading a pipeline's definition (its
# layers and tables, as `inspect` and `lineage` do) must not load them (~0.5 s)
if TYPE_CHECKING:
    import pandas as pd

from ..common import check_ratios
from ..replay import IntervalReplay

START = datetime(2016, 7, 26, tzinfo=UTC)
SESSIONS = 20_000
SPAN_S = 14 * 24 * 3600


def load_events(seed: int) -> pd.DataFrame:
    """All events sorted by time: columns ``time`` (epoch s), ``action``, ``_sched``."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    opens = np.sort(rng.integers(0, SPAN_S, SESSIONS)) + int(START.timestamp())
    closes = opens + rng.integers(60, 90 * 60, SESSIONS)
    df = pd.DataFrame({
        "time": np.concatenate([opens, closes]),
        "action": ["Open"] * SESSIONS + ["Close"] * SESSIONS,
    })
    df = df.sort_values(["time", "action"], ascending=[True, False], kind="stable").reset_index(drop=True)
    df["_sched"] = pd.to_datetime(df["time"], unit="s", utc=True)
    return df


class EventsFactory(IntervalReplay):
    """Lands Open/Close events into ``directory``, ``interval_minutes`` of time per JSON-lines
    file (default 30: about 60 events a file); ``bad_ratio`` in [0, 1]."""

    name_format = "events_%Y-%m-%dT%H-%M.json"

    def __init__(self, directory: Path, interval_minutes: int = 30, bad_ratio: float = 0.0, seed: int = 3) -> None:
        check_ratios(bad_ratio=bad_ratio)
        super().__init__(directory, interval_minutes)
        self.bad_ratio = bad_ratio
        self.seed = seed

    def load(self) -> pd.DataFrame:
        return load_events(self.seed)

    def render(self, rows: pd.DataFrame, lo: pd.Timestamp) -> str:
        import numpy as np
        rng = np.random.default_rng([self.seed, int(lo.timestamp())])
        lines = []
        for t, action in zip(rows["time"], rows["action"], strict=True):
            if self.bad_ratio and rng.random() < self.bad_ratio:
                lines.append('{"time": "noon", "action": "Open"}' if rng.random() < 0.5 else '{"time": 14695')
            else:
                lines.append(json.dumps({"time": int(t), "action": action}))
        return "\n".join(lines) + "\n"
