"""``advise-min-batches-to-retain`` against Spark itself: a real stateful query (JSON files →
``groupBy(key).count()`` → ``noop``, update mode, one file a micro-batch) on the shared local[2]
session, started with ``spark.sql.streaming.minBatchesToRetain`` = ``RETAIN``. The files and
bytes the rule cites must be a listing, made here, of the checkpoint Spark wrote; the batch
range it says is kept must be the ``offsets/N`` files Spark left, and the value it infers the
conf the query was started with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamwatch.analysis.advice import Confidence, Verdict
from streamwatch.analysis.advice_retain import MIN_BATCHES_KEY, min_batches_to_retain, retained_files
from streamwatch.checkpoint import read_checkpoint

pytestmark = pytest.mark.spark

RETAIN = 3
FILES = 9


def _land(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"f{i:03d}.json").write_text(json.dumps({"key": f"k{i % 4}", "n": i}) + "\n")


def _listing(cp: Path, area: str) -> tuple[int, int]:
    files = [f for f in (cp / area).rglob("*") if f.is_file()]
    return len(files), sum(f.stat().st_size for f in files)


def test_counts_and_kept_batches_are_those_spark_left(spark, tmp_path):
    src, cp = tmp_path / "in", tmp_path / "cp"
    _land(src, FILES)
    before = spark.conf.get(MIN_BATCHES_KEY, None)
    spark.conf.set(MIN_BATCHES_KEY, str(RETAIN))
    try:
        q = (spark.readStream.schema("key STRING, n INT").option("maxFilesPerTrigger", 1).json(str(src))
             .groupBy("key").count().writeStream.format("noop").outputMode("update")
             .option("checkpointLocation", str(cp)).trigger(availableNow=True).start())
        q.awaitTermination(300)
        assert q.exception() is None
        last = q.lastProgress["batchId"]
    finally:
        if before is None:
            spark.conf.unset(MIN_BATCHES_KEY)
        else:
            spark.conf.set(MIN_BATCHES_KEY, before)
    assert last == FILES - 1
    spark_offsets = sorted(int(f.name) for f in (cp / "offsets").iterdir() if f.name.isdecimal())
    c = read_checkpoint(str(cp))
    kept = retained_files(str(cp), c)
    a = min_batches_to_retain(c, kept)
    ev = {e.what: e.value for e in a.evidence}
    for area in ("offsets", "commits", "state"):
        assert (ev[f"kept in {area}/"], ev[f"bytes kept in {area}/"]) == _listing(cp, area)
    # Spark purged below last - RETAIN when it planned the last batch (asynchronously: the
    # newest purge may not have run yet, so the range starts at or below that)
    assert spark_offsets[-1] == last and last - RETAIN - 1 <= spark_offsets[0] <= last - RETAIN
    assert f"batches {spark_offsets[0]}..{last}" in a.summary
    assert ev["minBatchesToRetain (inferred)"] in (RETAIN, RETAIN + 1)
    assert (a.verdict, a.confidence) == (Verdict.KEEP, Confidence.MEASURED)
