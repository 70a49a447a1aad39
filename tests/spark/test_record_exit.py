"""``streamwatch.record()`` in a user's own script that never calls ``stop()``: the recording
is finished at interpreter exit (terminated event, final counters, file closed), and with
``max_bytes``/``keep`` it rotates into ``FILE.N`` segments keeping only the newest ``keep``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.spark

SCRIPT = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from pyspark.sql import SparkSession
    import streamwatch

    out, data = Path(sys.argv[1]), Path(sys.argv[2])
    data.mkdir()
    for i in range(8):
        (data / f"f{i}.json").write_text("\\n".join(json.dumps({"k": j % 3, "v": j}) for j in range(10)))
    spark = (SparkSession.builder.master("local[1]").appName("record-at-exit")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1").getOrCreate())
    streamwatch.record(spark, out, max_bytes=5000, keep=2)  # never stopped by this script
    q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(data))
         .groupBy("k").count().writeStream.outputMode("update").format("noop").queryName("sw_at_exit")
         .option("checkpointLocation", str(out.parent / "cp")).trigger(availableNow=True).start())
    q.awaitTermination()
    print(q.id, q.lastProgress["batchId"], flush=True)
""")


def test_record_finishes_at_interpreter_exit_and_keeps_the_newest_segments(tmp_path):
    from streamwatch.events.reader import ReadReport, read_recording
    from streamwatch.model.events import ListenerStats, QueryProgress, QueryTerminated

    out = tmp_path / "rec" / "events.jsonl"
    out.parent.mkdir()
    r = subprocess.run([sys.executable, "-c", SCRIPT, str(out), str(tmp_path / "in")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    query_id, last_batch = r.stdout.split()
    assert int(last_batch) == 7  # 8 files, one per micro-batch
    segments = sorted(out.parent.glob("events.jsonl.*"), key=lambda p: int(p.suffix[1:]))
    numbers = [int(p.suffix[1:]) for p in segments]
    # the header alone is ~3 KB: 5,000-byte files hold an event or two each
    assert len(segments) == 2 and numbers[0] > 1 and numbers == [numbers[0], numbers[0] + 1], numbers  # keep=2: the newest
    report = ReadReport()
    events = list(read_recording(out, report))
    assert report.bad_lines == 0
    assert isinstance(events[-1], ListenerStats) and events[-1].dropped == 0  # written by stop() at exit
    term = [e for e in events if isinstance(e, QueryTerminated) and e.id == query_id]
    assert len(term) == 1 and not term[0].failed
    batches = [e.batch_id for e in events if isinstance(e, QueryProgress) and e.id == query_id]
    assert batches and batches == list(range(batches[0], 8))  # the newest batches, each once, in order
    assert batches[0] > 0  # older ones went with the dropped segments
