"""``streamwatch land`` with files in a landing folder that the factory did not name (a user's
``flights_backup.csv``, an editor's ``flights_2013-01-01T06-00.csv~``): they are not landed
files, so the factory ignores them when it finds where to resume — exit 0, the next file
after the ones it landed, the stray files left as they are. (They used to stop ``land`` with
a ``strptime`` ValueError reported as exit 2, a usage error.) No JVM."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"
STRAY = ("flights_backup.csv", "flights_2013-01-01T06-00.csv~", "flights_zzz.csv")


def _land(tmp_path: Path, ws: Path) -> subprocess.CompletedProcess:
    return subprocess.run([STREAMWATCH, "land", "flights", "--workspace", str(ws)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)


def test_stray_files_in_a_landing_folder_are_ignored_when_resuming(tmp_path):
    ws = tmp_path / "ws"
    landing = ws / "landing" / "flights" / "flights"
    landing.mkdir(parents=True)
    for name in STRAY:
        (landing / name).write_text("year,month\n")
    first = _land(tmp_path, ws)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == str(landing / "flights_2013-01-01T06-00.csv"), first.stdout
    second = _land(tmp_path, ws)  # resumes after the landed file, not after a stray name
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines()[0] == str(landing / "flights_2013-01-01T12-00.csv"), second.stdout
    assert sorted(p.name for p in landing.iterdir()) == sorted(
        [*STRAY, "flights_2013-01-01T06-00.csv", "flights_2013-01-01T12-00.csv"])
    assert all((landing / name).read_text() == "year,month\n" for name in STRAY)
