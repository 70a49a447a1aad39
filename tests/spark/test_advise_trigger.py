"""`streamwatch advise --trigger` against Spark itself: real queries on the shared local[2]
session, each started with a known trigger (Spark's own account: the ``ProcessingTimeTrigger``
its ``StreamExecution`` runs), their batch times from Spark's ``recentProgress``, the spacing
of their batch starts from the ``offsets/N`` files Spark wrote, and idle triggers from Spark's
own ``QueryIdleEvent``s (a listener of this test). The rule must fire where Spark's numbers say
the interval is overrun, or polled idle, and not where the query fits its trigger."""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark


def _land(folder: Path, i: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".f{i}.tmp"
    tmp.write_text("\n".join(json.dumps({"ts": f"2026-01-01T00:00:{j:02d}Z", "key": f"k{j % 3}"}) for j in range(20)))
    tmp.rename(folder / f"f{i}.json")


def _start(spark, src: Path, cp: Path, trigger: str):
    return (spark.readStream.schema("ts TIMESTAMP, key STRING").option("maxFilesPerTrigger", 1).json(str(src))
            .writeStream.format("noop").option("checkpointLocation", str(cp)).trigger(processingTime=trigger).start())


def _spark_interval_ms(q) -> int:
    """The interval of the trigger Spark runs ``q`` with, from its ``StreamExecution``."""
    m = re.fullmatch(r"ProcessingTimeTrigger\((\d+)\)", str(q._jsq.streamingQuery().trigger().toString()))
    assert m, q._jsq.streamingQuery().trigger().toString()
    return int(m.group(1))


def _wait(cond: Callable[[], bool], what: str, deadline_s: float = 180) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def _data_batches(q) -> list[dict]:
    return [p for p in q.recentProgress if p["numInputRows"] > 0]


def _advise(*args: str) -> tuple[int, dict]:
    r = CliRunner().invoke(main, ["advise", *args, "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    doc = json.loads(r.stdout)
    return r.exit_code, next(f for f in doc["findings"] if f["code"] == "advise-trigger-interval")


def _batch_starts(cp: Path) -> dict[int, int]:
    """batch id → ``batchTimestampMs`` of the ``offsets/N`` files Spark wrote."""
    return {int(p.name): json.loads(p.read_text().splitlines()[1])["batchTimestampMs"]
            for p in (cp / "offsets").iterdir() if p.name.isdecimal()}


@contextmanager
def _idle_events(spark) -> Iterator[dict[str, int]]:
    """Counts Spark's ``QueryIdleEvent``s by query id while the block runs."""
    from pyspark.sql.streaming import StreamingQueryListener

    counts: dict[str, int] = {}
    lock = threading.Lock()

    class Idle(StreamingQueryListener):
        def onQueryStarted(self, event): ...
        def onQueryProgress(self, event): ...
        def onQueryTerminated(self, event): ...

        def onQueryIdle(self, event):
            with lock:
                counts[str(event.id)] = counts.get(str(event.id), 0) + 1

    listener = Idle()
    spark.streams.addListener(listener)
    try:
        yield counts
    finally:
        spark.streams.removeListener(listener)


def test_batches_longer_than_the_interval_are_advised_a_longer_one(spark, tmp_path):
    import streamwatch

    src, cp = tmp_path / "in", tmp_path / "cp"
    for i in range(3):
        _land(src, i)
    with streamwatch.record(spark, tmp_path / "events.jsonl"):
        q = _start(spark, src, cp, "10 milliseconds")
        try:
            _wait(lambda: len(_data_batches(q)) >= 3, "3 batches")
        finally:
            q.stop()
    assert _spark_interval_ms(q) == 10
    # batch 0 (the JVM's warm-up) is left out of the rule's median when later batches ran
    spark_ms = [p["durationMs"]["triggerExecution"] for p in _data_batches(q) if p["batchId"] > 0]
    med = int(statistics.median(spark_ms))
    assert len(spark_ms) >= 2 and med > 10  # Spark: the batches overran the interval

    code, a = _advise(str(cp), "--trigger", "10ms", "--recording", str(tmp_path / "events.jsonl"))
    ev = {e["what"]: e for e in a["evidence"]}
    assert (code, a["verdict"], a["confidence"]) == (1, "change", "measured")
    assert ev["trigger interval"]["value"] == 10 and ev["trigger interval"]["source"] == "--trigger processingTime=10ms"
    assert ev["median batch time"]["value"] == med
    assert a["target"] >= 1.5 * med and "processingTime=" in a["action"]

    code, a = _advise(str(cp))  # no --trigger: the rule does not guess it from the batch spacing
    assert (a["verdict"], a["confidence"], a["target"]) == ("unknown", "unknown", None)
    assert "--trigger" in a["needs"]


def test_a_tiny_interval_on_an_idle_source_is_advised_a_longer_one(spark, tmp_path):
    import streamwatch

    src, cp = tmp_path / "in", tmp_path / "cp"
    _land(src, 0)
    before = spark.conf.get("spark.sql.streaming.noDataProgressEventInterval")
    spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "50ms")  # idle events often
    try:
        with _idle_events(spark) as idle, streamwatch.record(spark, tmp_path / "events.jsonl"):
            q = _start(spark, src, cp, "100 milliseconds")
            try:
                _wait(lambda: len(_data_batches(q)) >= 1, "batch 0")
                seen = idle.get(str(q.id), 0)
                # idle for 20 triggers and far longer than a batch takes on this machine now
                # (5× batch 0, the JVM's warm-up included): a busy machine slows batch 1 too,
                # and the source must wait for data longer than it processes for the rule's premise
                idle_s = max(2.0, 5 * _data_batches(q)[0]["durationMs"]["triggerExecution"] / 1000)
                idle_from = time.monotonic()
                _wait(lambda: idle.get(str(q.id), 0) >= seen + 20 and time.monotonic() - idle_from >= idle_s,
                      "20 idle triggers")  # Spark: no data
                _land(src, 1)
                _wait(lambda: len(_data_batches(q)) >= 2, "batch 1")
            finally:
                q.stop()
    finally:
        spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", before)
    assert _spark_interval_ms(q) == 100
    starts = _batch_starts(cp)
    gap = starts[1] - starts[0]  # batch 0, then 20 idle triggers on the 100 ms interval
    assert gap >= 1_900

    code, a = _advise(str(cp), "--trigger", "100ms", "--recording", str(tmp_path / "events.jsonl"))
    ev = {e["what"]: e for e in a["evidence"]}
    assert (code, a["verdict"], a["confidence"]) == (1, "change", "measured")
    assert ev["observed spacing of batch starts"]["value"] == gap
    assert ev["idle triggers reported"]["value"] >= 20
    assert 2_000 <= a["target"] <= max(2_000, gap) and "availableNow" in a["action"]


def test_a_query_that_fits_its_interval_is_kept(spark, tmp_path):
    src, cp = tmp_path / "in", tmp_path / "cp"
    for i in range(2):
        _land(src, i)
    q = _start(spark, src, cp, "3 seconds")
    try:
        _wait(lambda: len(_data_batches(q)) >= 2, "2 batches")
    finally:
        q.stop()
    assert _spark_interval_ms(q) == 3_000
    assert statistics.median(p["durationMs"]["triggerExecution"] for p in _data_batches(q)) < 3_000  # Spark: fits
    code, a = _advise(str(cp), "--trigger", "3s")
    assert (code, a["verdict"], a["action"], a["target"]) == (0, "keep", None, None)
    ev = {e["what"]: e for e in a["evidence"]}
    starts = _batch_starts(cp)
    assert ev["observed spacing of batch starts"]["value"] == starts[1] - starts[0]
