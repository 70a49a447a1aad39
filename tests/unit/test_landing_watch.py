"""Real watchdog events for files landing atomically."""

from __future__ import annotations

import os
import threading

from streamwatch.landing import LandingWatcher


def test_atomic_landing_is_reported_once_with_final_size(tmp_path):
    seen = []
    done = threading.Event()

    def on_landed(f):
        seen.append(f)
        if f.name == "end.csv":
            done.set()

    d = tmp_path / "landing"
    with LandingWatcher({"flights": d}, on_landed):
        for i in range(2):
            tmp = d / f".part{i}.csv.tmp"
            tmp.write_text("a,b\n1,2\n" * (i + 1))
            os.replace(tmp, d / f"part{i}.csv")
        (d / "_ignored").write_text("x")
        # a last file: watchdog reports one folder's events in order, so a duplicate report
        # of part0/part1 or of _ignored would arrive before this one's
        (d / ".end.tmp").write_text("")
        os.replace(d / ".end.tmp", d / "end.csv")
        assert done.wait(10), f"saw {seen}"
    assert [f.name for f in seen] == ["part0.csv", "part1.csv", "end.csv"]
    assert [f.size_bytes for f in seen] == [8, 16, 0]
    assert all(f.source == "flights" for f in seen)
