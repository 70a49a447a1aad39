"""Page views of a web site as ``{"time": <epoch seconds>, "user": "u0042", "page": "/cart"}``
JSON lines, the input of the sessions pipeline.

``USERS`` users each visit the site a few times over ``DAYS`` days; a visit is 1–12 page views
1–9 minutes apart, and visits of one user start at least 40 minutes after the previous one
ended, so a 30-minute inactivity gap separates them. Views are replayed in time order,
``interval_minutes`` per file (``views_2026-03-02T00-00.json``). ``bad_ratio`` replaces that
fraction of lines by malformed JSON.
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

START = datetime(2026, 3, 2, tzinfo=UTC)
USERS = 150
DAYS = 2
PAGES = ("/", "/search", "/product", "/cart", "/checkout", "/help")


def load_views(seed: int) -> pd.DataFrame:
    """All page views sorted by time: columns ``time`` (epoch s), ``user``, ``page``, ``_sched``."""
    import numpy as np
    import pandas as pd
    rng = np.random.default_rng(seed)
    t0 = int(START.timestamp())
    rows: list[tuple[int, str, str]] = []
    for u in range(USERS):
        user = f"u{u:04d}"
        t = t0 + int(rng.integers(0, 6 * 3600))
        while t < t0 + DAYS * 86_400:
            for _ in range(int(rng.integers(1, 13))):
                rows.append((t, user, PAGES[int(rng.integers(0, len(PAGES)))]))
                t += int(rng.integers(60, 9 * 60))
            t += int(rng.integers(40 * 60, 10 * 3600))
    df = pd.DataFrame(rows, columns=["time", "user", "page"])
    df = df[df["time"] < t0 + DAYS * 86_400]
    df = df.sort_values(["time", "user"], kind="stable").reset_index(drop=True)
    df["_sched"] = pd.to_datetime(df["time"], unit="s", utc=True)
    return df


class ViewsFactory(IntervalReplay):
    """Lands page views into ``directory``, ``interval_minutes`` of time per JSON-lines file
    (default 30: about 100 views a file); ``bad_ratio`` in [0, 1]."""

    name_format = "views_%Y-%m-%dT%H-%M.json"

    def __init__(self, directory: Path, interval_minutes: int = 30, bad_ratio: float = 0.0, seed: int = 5) -> None:
        check_ratios(bad_ratio=bad_ratio)
        super().__init__(directory, interval_minutes)
        self.bad_ratio = bad_ratio
        self.seed = seed

    def load(self) -> pd.DataFrame:
        return load_views(self.seed)

    def render(self, rows: pd.DataFrame, lo: pd.Timestamp) -> str:
        import numpy as np
        rng = np.random.default_rng([self.seed, int(lo.timestamp())])
        lines = []
        for t, user, page in zip(rows["time"], rows["user"], rows["page"], strict=True):
            if self.bad_ratio and rng.random() < self.bad_ratio:
                lines.append('{"time": 17, "user": ')
            else:
                lines.append(json.dumps({"time": int(t), "user": user, "page": page}))
        return "\n".join(lines) + "\n"
