"""``streamwatch retention`` as a subprocess on a checkpoint laid out in Spark's on-disk
format (no JVM), for the report lines the other tests leave out:

* a RocksDB operator without operator metadata (no ``state/0/_metadata``, as Spark before
  3.5 wrote): its name is unknown and the line says only the provider — never ``None``;
* a store with orphan SST files (named by no ``.zip``) and a store with nothing to delete;
* a file sink log whose latest batch is a ``.compact`` file: no batch since the compaction,
  so its growth per compaction is unknown (``?``);
* sizes in B and KiB as people read them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.ops.test_retention_plan_edges import checkpoint, rocksdb_zip, write

STREAMWATCH = shutil.which("streamwatch", path=str(Path(sys.executable).parent)) or "streamwatch"


def _retention(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([STREAMWATCH, "retention", *args], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120)


def test_rocksdb_orphans_an_idle_store_and_a_just_compacted_sink(tmp_path, unchanged):
    fc = checkpoint(tmp_path, 6)
    store = fc.root / "state" / "0" / "0"
    (store / "SSTs").mkdir(parents=True)
    for n in ("a-1.sst", "b-2.sst", "orphan-9.sst"):
        write(store / "SSTs", n, 1000)
    (store / "4.zip").write_bytes(rocksdb_zip(["a-1.sst"]))
    (store / "6.zip").write_bytes(rocksdb_zip(["b-2.sst"]))
    for v in range(1, 7):
        write(store, f"{v}.changelog", 50)
    idle = fc.root / "state" / "0" / "1"
    idle.mkdir(parents=True)
    (idle / "6.zip").write_bytes(rocksdb_zip([]))
    log = fc.sink / "_spark_metadata"  # interval 3: batch 2 and batch 5 compacted, as Spark names them
    for compact, batches in ((2, range(3)), (5, range(3, 6))):
        rows = [(log / str(b)).read_text().split("\n", 1)[1] for b in batches]
        (log / f"{compact}.compact").write_text("v1\n" + "\n".join(rows))
        for b in batches:
            (log / str(b)).unlink()
    unchanged(fc.root)
    unchanged(fc.sink)

    r = _retention(tmp_path, str(fc.root), "--sink", str(fc.sink), "--min-batches", "3")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    state_bytes = sum(p.stat().st_size for p in (fc.root / "state").rglob("*") if p.is_file())
    assert 1024 <= state_bytes < 1024 * 1024
    assert f"state 0 (rocksdb): {state_bytes / 1024:.1f} KiB; the maintenance after the next batch deletes 0 B; " \
           "orphan SSTs 1000 B" in lines, lines
    # changelogs from v1 on stay while no zip lies below 4.zip (the newest at or below 7 - 3 + 1)
    assert "  0/default: latest v6, keeps from v1; deletes 0 files; orphans: 1 files (1000 B)" in lines, lines
    assert "  1/default: latest v6, keeps from v6; deletes 0 files" in lines, lines
    [sink_line] = [ln for ln in lines if ln.startswith("sink _spark_metadata: ")]
    assert sink_line.startswith("sink _spark_metadata: interval 3, latest 5, next compaction at batch 8 ")
    assert sink_line.endswith(", grows ≈ ? per compaction"), sink_line
    assert not any("None" in ln for ln in lines), lines

    doc = json.loads(_retention(tmp_path, str(fc.root), "--sink", str(fc.sink), "--min-batches", "3", "--json").stdout)
    [op] = doc["state"]
    assert op["name"] is None and op["orphan_bytes"] == 1000 and op["bytes"] == state_bytes
    sink = next(lg for lg in doc["file_logs"] if lg["kind"] == "sink")
    assert sink["growth_per_compaction_bytes"] is None and sink["latest_compact"] == 5
