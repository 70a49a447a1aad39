"""The health verdict of a checkpoint watch (``query-health``) held against what Spark itself
did: real availableNow queries in the shared session over files landed with known
modification times. The account per scenario is Spark's: which batch ids it wrote to
``offsets/`` and ``commits/``, the rows its progress says each run read, and the exception a
failing run raised (``StreamingQuery.exception()`` and the listener's terminated event)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from streamwatch.analysis.health_window import Health
from streamwatch.analysis.records import QueryHealth
from streamwatch.analysis.watch import CheckpointWatcher

pytestmark = pytest.mark.spark
MARKER = 666  # the row the failing UDF raises on


def _land(folder: Path, name: str, ks: list[int], mtime_ms: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("\n".join(json.dumps({"k": k}) for k in ks))
    os.utime(p, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))


def _start(spark, src: Path, cp: Path, max_files: int | None = None, udf=None):
    r = spark.readStream.schema("k INT")
    if max_files is not None:
        r = r.option("maxFilesPerTrigger", max_files)
    df = r.json(str(src))
    if udf is not None:
        df = df.select(udf("k").alias("k"))
    return (df.writeStream.format("noop").option("checkpointLocation", str(cp))
            .trigger(availableNow=True).start())


def _rows(q) -> list[int]:
    """The rows each batch of the run read, as Spark reports them."""
    return [json.loads(p.json())["numInputRows"] for p in q._jsq.recentProgress()]


def _ids(cp: Path, log: str) -> set[int]:
    return {int(n.name) for n in (cp / log).iterdir() if n.name.isdigit()}


def _mtime_ms(p: Path) -> int:
    return p.stat().st_mtime_ns // 1_000_000


def _health(records) -> list[QueryHealth]:
    return [r for r in records if isinstance(r, QueryHealth)]


def test_files_landing_while_stopped_is_stopped_then_ok_once_read(spark, tmp_path):
    src, cp = tmp_path / "in", tmp_path / "cp"
    base = int(time.time() * 1000)
    _land(src, "f0.json", [1], base - 120_000)
    _land(src, "f1.json", [1, 2], base - 110_000)
    q = _start(spark, src, cp, max_files=1)
    q.awaitTermination()
    assert _rows(q) == [1, 2]
    # the query is stopped; two files land
    _land(src, "f2.json", [1, 2, 3], base + 1_000)
    _land(src, "f3.json", [1, 2, 3, 4], base + 2_000)
    assert (_ids(cp, "offsets"), _ids(cp, "commits")) == ({0, 1}, {0, 1})  # nothing planned since
    now = [(_mtime_ms(cp / "commits" / "1") + 3_600_000) / 1000]  # an hour later
    # a 5 s poll: the lag is measured every poll; idle takes max(2 × cadence, 2 polls)
    w = CheckpointWatcher(str(cp), "q", poll_s=5.0, clock=lambda: now[0])
    (h,) = _health(w.open())
    assert (h.health, h.previous, h.verdict.backlog, h.verdict.batch_id) == ("stopped", None, 2, 1)
    assert h.since_ms == _mtime_ms(cp / "commits" / "1")  # since Spark's last commit

    q = _start(spark, src, cp)
    q.awaitTermination()
    assert _rows(q) == [3 + 4]  # Spark read exactly the two that waited
    (last,) = sorted(_ids(cp, "commits") - {0, 1})
    now[0] = (_mtime_ms(cp / "commits" / str(last)) + 1) / 1000
    (h2,) = _health(w.poll())
    assert (h2.health, h2.previous, h2.verdict.backlog, h2.verdict.batch_id) == ("ok", "stopped", 0, last)
    assert w.lags["0"].catching_up is True


def test_a_batch_failing_in_every_run_is_failing(spark, tmp_path):
    import pyspark.sql.functions as F
    from pyspark.errors import StreamingQueryException
    from pyspark.sql.types import IntegerType

    import streamwatch
    from streamwatch.events.reader import read_recording
    from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

    def boom(k):
        if k == MARKER:
            raise ValueError(f"marker row {MARKER}")
        return k

    udf = F.udf(boom, IntegerType())
    src, cp, events = tmp_path / "in", tmp_path / "cp", tmp_path / "events.jsonl"
    base = int(time.time() * 1000)
    _land(src, "f0.json", [1], base - 60_000)
    errors: list[str] = []
    with streamwatch.record(spark, events):
        q = _start(spark, src, cp, udf=udf)
        q.awaitTermination()
        assert q.exception() is None and _rows(q) == [1]
        _land(src, "f1.json", [2, MARKER], base - 50_000)
        for _ in range(2):  # the first failure, then a restart on the same batch
            q = _start(spark, src, cp, udf=udf)
            with pytest.raises(StreamingQueryException):
                q.awaitTermination()
            errors.append(str(q.exception()))
        deadline = time.monotonic() + 60  # the listener delivers the terminated events
        while time.monotonic() < deadline:
            got = [e for e in read_recording(events) if isinstance(e, QueryTerminated)]
            if len(got) == 3:
                break
            time.sleep(0.1)
    assert all(f"marker row {MARKER}" in e for e in errors)
    # Spark's own files: batch 1 planned, never committed; the restart did not plan a batch 2
    assert (_ids(cp, "offsets"), _ids(cp, "commits")) == ({0, 1}, {0})
    now = [(_mtime_ms(cp / "offsets" / "1") + 1_000) / 1000]
    w = CheckpointWatcher(str(cp), "q", poll_s=5.0, clock=lambda: now[0])
    before = _health(w.open())
    assert before[0].verdict.failed_runs is None  # no account of runs yet: FAILING cannot be told
    for e in read_recording(events):
        if isinstance(e, (QueryStarted, QueryProgress, QueryTerminated)):
            w.observe_run(e)
    (h,) = _health(w.poll())
    assert (h.health, h.verdict.batch_id, h.verdict.failed_runs) == ("failing", 1, 2)
    line = f"ValueError: marker row {MARKER}"  # the UDF's own error, under Spark's PythonException
    assert h.verdict.reason.endswith(f"never committed: {line}") and all(line in e for e in errors)
    terminated = [e for e in read_recording(events) if isinstance(e, QueryTerminated)]
    assert [e.failed for e in terminated] == [False, True, True]
    # the same through the command line: the recording is the account of runs
    from click.testing import CliRunner

    from streamwatch.cli import main

    r = CliRunner().invoke(main, ["watch", str(cp), "--log", "--once", "--check", "--recording", str(events)])
    assert r.exit_code == 1, r.output
    healths = [json.loads(line) for line in r.stdout.splitlines() if '"query-health"' in line]
    assert (healths[-1]["health"], healths[-1]["batchId"], healths[-1]["failedRuns"]) == ("failing", 1, 2)


def test_nothing_landing_is_idle(spark, tmp_path):
    src, cp = tmp_path / "in", tmp_path / "cp"
    base = int(time.time() * 1000)
    _land(src, "f0.json", [1], base - 20_000)
    _land(src, "f1.json", [1, 2], base - 10_000)
    q = _start(spark, src, cp, max_files=1)
    q.awaitTermination()
    assert _rows(q) == [1, 2]  # every landed file read
    assert (_ids(cp, "offsets"), _ids(cp, "commits")) == ({0, 1}, {0, 1})
    committed = _mtime_ms(cp / "commits" / "1")
    w = CheckpointWatcher(str(cp), "q", poll_s=5.0, clock=lambda: (committed + 3_600_000) / 1000)
    (h,) = _health(w.open())
    assert (h.health, h.verdict.backlog, h.verdict.batch_id, h.since_ms) == ("idle", 0, 1, committed)
    assert Health(h.health) is w.current_health()
