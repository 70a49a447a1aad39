"""`streamwatch advise --recording` (rule ``advise-watermark-delay``) against Spark itself: real
queries on the shared local[2] session (JSON files, one a batch → ``withWatermark("ts",
delay)`` → ``groupBy(window(ts, 10 s), key).count()`` → ``noop``, append mode, availableNow),
each started with a known delay and recorded by ``streamwatch.record``. The rule's numbers must
be Spark's own: the rows dropped are the sum of ``numRowsDroppedByWatermark`` in the query's
``recentProgress``, the observed lateness is what its ``eventTime`` min/max give, and the
inferred delay is the one the query was started with."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _land(folder: Path, i: int, seconds: list[float]) -> None:
    """File ``i``: one row per entry of ``seconds`` (event time T0 + that many s), keys k0–k2."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = (json.dumps({"ts": (T0 + timedelta(seconds=s)).isoformat().replace("+00:00", "Z"), "key": f"k{j % 3}"})
            for j, s in enumerate(seconds))
    tmp = folder / f".f{i}.tmp"
    tmp.write_text("\n".join(rows) + "\n")
    tmp.rename(folder / f"f{i}.json")
    os.utime(folder / f"f{i}.json", (1_700_000_000 + i, 1_700_000_000 + i))  # read in landing order


def _run(spark, tmp_path: Path, delay: str) -> list[dict]:
    """The query over ``tmp_path/in`` with ``delay``, recorded to ``tmp_path/events.jsonl``; its recentProgress."""
    from pyspark.sql import functions as F

    import streamwatch

    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    try:
        with streamwatch.record(spark, tmp_path / "events.jsonl"):
            df = (spark.readStream.schema("ts TIMESTAMP, key STRING").option("maxFilesPerTrigger", 1)
                  .json(str(tmp_path / "in")).withWatermark("ts", delay)
                  .groupBy(F.window("ts", "10 seconds"), "key").count())
            q = (df.writeStream.format("noop").outputMode("append").option("checkpointLocation", str(tmp_path / "cp"))
                 .trigger(availableNow=True).start())
            q.awaitTermination(300)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert q.exception() is None
    return list(q.recentProgress)


def _ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def _lateness(progress: list[dict]) -> list[tuple[int, int]]:
    """Per batch with event times after the first: (its observed lateness, its rows dropped),
    from Spark's eventTime and stateOperators."""
    out, running = [], None
    for p in sorted((p for p in progress if "min" in p["eventTime"]), key=lambda p: p["batchId"]):
        if running is not None:
            out.append((max(0, running - _ms(p["eventTime"]["min"])),
                        sum(o["numRowsDroppedByWatermark"] for o in p["stateOperators"])))
        running = max(running or 0, _ms(p["eventTime"]["max"]))
    return out


def _advise(tmp_path: Path) -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["advise", str(tmp_path / "cp"), "--recording", str(tmp_path / "events.jsonl"),
                                  "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return r.exit_code, next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-watermark-delay")


def test_rows_dropped_by_the_watermark_are_counted_as_spark_counts_them(spark, tmp_path):
    # Spark drops a row whose window ended at or before the previous batch's watermark
    # (eventTimeWatermarkForLateEvents): batch 2's rows at 00:00:0x, 80 s behind batch 1's
    _land(tmp_path / "in", 0, [60 + j for j in range(20)])  # 00:01:00–00:01:19
    _land(tmp_path / "in", 1, [80 + j for j in range(10)])  # 00:01:20–00:01:29
    _land(tmp_path / "in", 2, [j for j in range(10)] + [90 + j for j in range(10)])
    progress = _run(spark, tmp_path, "1 second")
    dropped = sum(o["numRowsDroppedByWatermark"] for p in progress for o in p["stateOperators"])
    assert dropped > 0  # Spark: the late rows' window closed before they came
    late = max(x for x, d in _lateness(progress) if d)

    code, a = _advise(tmp_path)
    ev = {e["what"]: e["value"] for e in a["evidence"]}
    assert (code, a["verdict"], a["confidence"]) == (1, "change", "likely")
    assert ev["rows dropped by the watermark"] == dropped
    assert ev["observed lateness of the batches that dropped rows"] == late == 89_000  # 00:01:29 − 00:00:00
    assert ev["watermark delay (inferred)"] == 1_000  # withWatermark("ts", "1 second")
    assert a["target"] >= 1.5 * late and "withWatermark" in a["action"]


def test_an_over_long_delay_is_advised_down_to_the_lateness_spark_reports(spark, tmp_path):
    for i in range(3):  # file i: event times 10 s·i … 10 s·i + 9 s, and one 2 s behind file i−1's newest
        _land(tmp_path / "in", i, [10 * i + j for j in range(10)] + ([10 * i - 3] if i else []))
    progress = _run(spark, tmp_path, "10 minutes")
    assert sum(o["numRowsDroppedByWatermark"] for p in progress for o in p["stateOperators"]) == 0
    seen = _lateness(progress)
    assert len(seen) >= 2 and _ms(progress[-1]["eventTime"]["watermark"]) > 0  # Spark set a watermark

    code, a = _advise(tmp_path)
    ev = {e["what"]: e["value"] for e in a["evidence"]}
    assert (code, a["verdict"], a["confidence"]) == (1, "change", "likely")
    assert ev["observed max lateness"] == max(x for x, _ in seen) == 2_000  # e.g. 00:00:19 − 00:00:17
    assert ev["rows dropped by the watermark"] == 0
    assert ev["watermark delay (inferred)"] == 600_000  # withWatermark("ts", "10 minutes")
    assert a["target"] == 5_000 and 'withWatermark(col, "5 seconds")' in a["action"]  # 1.5 × 2 s, up to 5 s
