"""Real watchdog events for files landing atomically."""

from __future__ import annotations

import os
import threading
import time

from streamwatch.landing import LandingWatcher


def test_atomic_landing_is_reported_once_with_final_size(tmp_path):
    seen = []
    done = threading.Event()

    def on_landed(f):
        seen.append(f)
        if len(seen) >= 2:
            done.set()

    d = tmp_path / "landing"
    with LandingWatcher({"flights": d}, on_landed):
        for i in range(2):
            tmp = d / f".part{i}.csv.tmp"
            tmp.write_text("a,b\n1,2\n" * (i + 1))
            os.replace(tmp, d / f"part{i}.csv")
        (d / "_ignored").write_text("x")
        assert done.wait(10), f"saw {seen}"
        time.sleep(0.3)  # let any duplicate event arrive before we count
    assert [f.name for f in seen] == ["part0.csv", "part1.csv"]
    assert [f.size_bytes for f in seen] == [8, 16]
    assert all(f.source == "flights" for f in seen)
