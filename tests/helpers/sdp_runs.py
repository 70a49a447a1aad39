"""One Spark Declarative Pipelines project (scripts/sdp_fixture.py's flows: streaming tables
bronze ← JSON files, silver ← bronze where v >= 0, materialized view gold) run twice by pyspark's
own ``spark-pipelines``, for the tests that read what such runs leave:

1. ``streamwatch log --spec`` (the first run, recorded): tests/spark/test_sdp_log.py;
2. a new landed file, then ``spark-pipelines run --refresh bronze`` (bronze alone):
   tests/cli/test_sdp_watch.py reads the storage both runs wrote.

Each ``spark-pipelines`` run starts its own JVM and local Connect server (minutes on a busy
2-core machine), so both test files share the first run (session fixtures ``sdp_logged`` and
``sdp_refreshed`` in tests/conftest.py). Everything the first run's tests hold against is
captured when it ends (its output, its recording, the rows landed for it), so no test depends on
whether the second run happened before it; the tests only read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.scripts import load_script

SW = str(Path(sys.executable).parent / "streamwatch")
#: spark-pipelines' local Connect server on an ephemeral port, not 15002 (see scripts/sdp_fixture.py):
#: concurrent test runs on one machine cannot refuse each other the port
ENV = {**os.environ, "SPARK_TESTING": "1"}
#: one row per landed file; v = -5 is dropped by silver's filter (after its source)
ROWS = [{"k": 0, "v": 0}, {"k": 1, "v": 10}, {"k": 2, "v": -5}, {"k": 3, "v": 30}]
#: the file landed between the two runs (bronze's refresh reads it; silver does not run)
LATE_ROW = {"k": 9, "v": 90}


@dataclass(frozen=True)
class SdpLogged:
    """The project and its first run, by ``streamwatch log --spec``.

    ``base``: the folder holding ``landing/`` and ``proj/``; ``spec``: ``proj/spark-pipeline.yml``;
    ``recording``: the run's JSONL (``--out``); ``logged``: the command's exit status and output;
    ``landed_first``: the rows of the files landed for this run, read back from the files when
    it ended (the folders themselves change with :func:`refresh_bronze`; these fields do not)."""

    base: Path
    spec: Path
    recording: Path
    logged: subprocess.CompletedProcess[str]
    landed_first: tuple[dict[str, int], ...]

    @property
    def proj(self) -> Path:
        return self.spec.parent


def _landed_rows(landing: Path) -> tuple[dict[str, int], ...]:
    return tuple(json.loads(line) for f in sorted(landing.iterdir()) for line in f.read_text().splitlines())


def log_first_run(base: Path) -> SdpLogged:
    """Write the project under ``base`` and run it with ``streamwatch log --spec`` (the
    recording at ``base/sdp.jsonl``). A failed run is returned as is: its tests report it."""
    spec = load_script("sdp_fixture").write_project(base, ROWS)
    out = base / "sdp.jsonl"
    logged = subprocess.run([SW, "log", "--spec", str(spec), "--out", str(out)], capture_output=True, text=True,
                            timeout=900, cwd=base, env=ENV)
    return SdpLogged(base, spec, out, logged, _landed_rows(base / "landing"))


def refresh_bronze(first: SdpLogged) -> tuple[tuple[str, str], ...]:
    """Land :data:`LATE_ROW` in a new file and run ``spark-pipelines run --refresh bronze`` on
    ``first``'s project (after its first run); the (flow, state) pairs that run printed, as
    scripts/sdp_fixture.py reads them. Raises ``SystemExit`` when the run fails."""
    assert first.logged.returncode == 0, first.logged.stderr[-3000:]
    (first.base / "landing" / "f9.json").write_text(json.dumps(LATE_ROW) + "\n")
    return tuple(load_script("sdp_fixture").run_pipeline(first.proj, "--refresh", "bronze"))
