"""The bundled demo keeps pace with the machine: landing a file every 0.1 s — far faster than
two busy cores process flights — the backlog of files landed and not read stays bounded.

Spark's own account of what was read is each reading query's file-source log
(``sources/0/<n>``: one JSON line per file), parsed here directly; the landing folders are
listed here too. Throughout the run no source ever has more unread files than the feeder's
bound plus the one file a tick can land on the way, and the feeder did hold."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from streamwatch.model.events import QueryProgress

pytestmark = pytest.mark.spark


def _read_names(cp: Path) -> set[str]:
    names: set[str] = set()
    folder = cp / "sources" / "0"
    if not folder.is_dir():
        return names
    for name in os.listdir(folder):
        if name.startswith("."):
            continue
        try:
            lines = (folder / name).read_text().splitlines()[1:]
        except FileNotFoundError:  # compacted away while listed
            continue
        names.update(os.path.basename(json.loads(line)["path"]) for line in lines if line.strip())
    return names


def test_landing_holds_while_bronze_is_behind(spark, tmp_path):
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.live import PACE_BACKLOG, LiveBackend

    progress = threading.Event()

    def emit(obj: object) -> None:
        if isinstance(obj, QueryProgress) and obj.num_input_rows:
            progress.set()

    ws = Workspace(tmp_path)
    pipeline = get_pipeline("flights")
    backend = LiveBackend(pipeline, ws, trigger="processingTime=1 second", spark=spark, land_every_s=0.1,
                          initial_files=2, max_files=200)
    readers = {src.name: [ws.checkpoint("flights", la.name) for la in pipeline.layers if src.name in la.landing]
               for src in pipeline.sources}
    worst: dict[str, int] = {}
    backend.start(emit)
    try:
        assert progress.wait(180), "no batch read input within 180 s"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for source, cps in readers.items():
                landing = ws.landing("flights", source)
                landed = {n for n in os.listdir(landing) if not n.startswith(".")}
                read: set[str] = set()
                for cp in cps:
                    read |= _read_names(Path(cp))
                worst[source] = max(worst.get(source, 0), len(landed - read))
            time.sleep(0.2)
        held = sum(f.held for f in backend.feeders)
    finally:
        backend.stop()
    assert worst and all(n <= PACE_BACKLOG + 1 for n in worst.values()), worst
    assert held > 0, "landing every 0.1 s, the feeder never had to wait"
