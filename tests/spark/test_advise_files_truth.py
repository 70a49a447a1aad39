"""``advise-max-files-per-trigger`` against Spark itself: a real file-source query (JSON files →
``noop``, no ``maxFilesPerTrigger``) on the shared local[2] session, started on a backlog of
``BACKLOG`` files (one huge first micro-batch), then restarted on the same checkpoint after
each of ``LATER`` small landings (``availableNow``: one micro-batch each). The files per batch
the rule reads off the source log must be the ones Spark's progress reports
(``sources[0].numInputRows`` ÷ rows per file), and the limit it advises is derived from them."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark

ROWS = 3
BACKLOG = 40
LATER = (2, 4)


def _land(folder: Path, start: int, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        tmp = folder / f".f{i}.tmp"
        tmp.write_text("\n".join(json.dumps({"key": f"k{i}", "n": j}) for j in range(ROWS)))
        tmp.rename(folder / f"f{i:03d}.json")


def _run(spark, src: Path, cp: Path) -> list[dict]:
    """One availableNow run over ``src``; Spark's progress of its batches that read input."""
    q = (spark.readStream.schema("key STRING, n INT").json(str(src)).writeStream.format("noop")
         .option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("advise-files-truth")
    src, cp = base / "in", base / "cp"
    _land(src, 0, BACKLOG)
    progress = _run(spark, src, cp)
    n = BACKLOG
    for k in LATER:
        _land(src, n, k)
        n += k
        progress += _run(spark, src, cp)
    return cp, progress


def test_the_files_per_batch_and_the_advised_limit_are_sparks(runs):
    cp, progress = runs
    spark_files = [p["sources"][0]["numInputRows"] // ROWS for p in progress]
    assert spark_files == [BACKLOG, *LATER]  # Spark read the backlog at once, then each landing
    later = statistics.median(spark_files[1:])

    r = CliRunner().invoke(main, ["advise", str(cp), "--cores", "2", "--json"])
    assert r.exit_code == 1, r.output  # a rule advises a change
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-max-files-per-trigger")
    ev = {e["what"]: e for e in a["evidence"]}
    assert ev["files read by the first batch"]["value"] == spark_files[0]
    assert ev["files read by the first batch"]["source"] == "sources/0 log batch 0"
    assert ev["median files of the later batches"]["value"] == later
    assert ev["first batch time"]["source"] == f"query batch {progress[0]['batchId']}"
    assert (a["verdict"], a["confidence"], a["target"]) == ("change", "likely", math.ceil(2 * later))
    assert f'.option("maxFilesPerTrigger", {math.ceil(2 * later)})' in a["action"]
