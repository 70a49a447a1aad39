"""``advise-file-source-cleanup`` against Spark itself: a real file-source query (JSON files →
``noop``) on the shared local[2] session, run twice with ``availableNow`` (``FILES`` files, then
one more: Spark commits a batch to the source, and cleans its files, when it plans the next),
once without ``cleanSource`` and once with ``cleanSource=delete``. The counts the rule gives
must be the ones read here off Spark's own source log (``sources/0/N``, written by Spark) and
the folder listed here, the rows Spark's progress says it read, and its planning time Spark's
``durationMs.latestOffset``."""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.analysis.advice import Confidence, Verdict
from streamwatch.analysis.advice_cleanup import file_source_cleanup, read_files_present
from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main
from streamwatch.model.events import QueryProgress

pytestmark = pytest.mark.spark

FILES = 30
REMOVED = 7  # read files taken out of the no-cleanSource folder by hand


def _land(folder: Path, start: int, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        tmp = folder / f".f{i}.tmp"
        tmp.write_text(json.dumps({"key": f"k{i}", "n": i}) + "\n")
        tmp.rename(folder / f"f{i:03d}.json")


def _run(spark, src: Path, cp: Path, clean: str | None) -> list[dict]:
    """One availableNow run over ``src``; Spark's progress of its batches."""
    r = spark.readStream.schema("key STRING, n INT")
    if clean is not None:
        r = r.option("cleanSource", clean)
    q = (r.json(str(src)).writeStream.format("noop").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert q.exception() is None
    return list(q.recentProgress)


def _spark_log(cp: Path) -> dict[int, set[str]]:
    """Spark's source log ``sources/0/N`` read here: log batch id → the names of the files it read."""
    out: dict[int, set[str]] = {}
    for f in (cp / "sources" / "0").iterdir():
        if f.name.isdecimal():
            rows = [json.loads(line) for line in f.read_text().splitlines()[1:] if line.strip()]
            out[int(f.name)] = {r["path"].rsplit("/", 1)[1] for r in rows}
    return out


def _query(spark, base: Path, clean: str | None) -> tuple[Path, Path, list[dict]]:
    src, cp = base / f"in-{clean}", base / f"cp-{clean}"
    _land(src, 0, FILES)
    progress = _run(spark, src, cp, clean)
    _land(src, FILES, 1)
    progress += _run(spark, src, cp, clean)
    return src, cp, progress


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    base = tmp_path_factory.mktemp("advise-cleanup")
    off = _query(spark, base, None)
    for i in range(REMOVED):
        (off[0] / f"f{i:03d}.json").unlink()
    deleted = _query(spark, base, "delete")
    first = _spark_log(deleted[1])[0]
    end = time.monotonic() + 60  # Spark's cleaner deletes on its own thread
    while first & set(os.listdir(deleted[0])) and time.monotonic() < end:
        time.sleep(0.1)
    return off, deleted


def test_without_clean_source_the_rule_counts_the_files_sparks_log_read_still_in_the_folder(runs):
    (src, cp, progress), _ = runs
    log = _spark_log(cp)
    read = set().union(*log.values())
    listed = set(os.listdir(src))
    assert len(read) == sum(p["numInputRows"] for p in progress) == FILES + 1  # one row a file
    assert sorted(len(v) for v in log.values()) == [1, FILES]
    c = read_checkpoint(cp)
    timed = [p for p in progress if "latestOffset" in p["durationMs"]]
    (a,) = file_source_cleanup(c, read_files_present(str(cp), c), [QueryProgress.from_dict(p) for p in progress])
    ev = {e.what: e.value for e in a.evidence}
    assert ev["files read"] == len(read)
    assert ev["read files still in the folder"] == len(read & listed) == FILES + 1 - REMOVED
    assert ev["of them read before the latest log batch"] == len(log[0] & listed) == FILES - REMOVED
    assert ev["median planning time (all sources' latest offsets)"] == int(
        statistics.median(p["durationMs"]["latestOffset"] for p in timed[-10:]))
    assert (a.verdict, a.confidence) == (Verdict.KEEP, Confidence.LIKELY)  # 23 files: below the thresholds


def test_with_clean_source_delete_the_read_files_are_gone_and_the_rule_keeps(runs):
    _, (src, cp, progress) = runs
    log = _spark_log(cp)
    listed = set(os.listdir(src))
    assert not log[0] & listed  # Spark deleted the first batch's files
    assert log[1] <= listed  # the latest batch's file waits for the next batch
    assert sum(p["numInputRows"] for p in progress) == FILES + 1

    r = CliRunner().invoke(main, ["advise", str(cp), "--cores", "2", "--json"])
    assert r.exit_code in (0, 1), r.output
    a = next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-file-source-cleanup")
    ev = {e["what"]: e["value"] for e in a["evidence"]}
    assert ev["files read"] == FILES + 1
    assert ev["read files still in the folder"] == len(set().union(*log.values()) & listed) == 1
    assert ev["of them read before the latest log batch"] == 0
    assert (a["verdict"], a["confidence"]) == ("keep", "measured")
