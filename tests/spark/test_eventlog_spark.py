"""Spark's own event log (rolling + zstd, as Spark 4 writes it) replays to the same progress
events the listener recorded. The job runs in a subprocess: the shared session has event
logging off, and a process has one SparkContext."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from streamwatch.events.reader import ReadReport, read_events, read_recording
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

pytestmark = pytest.mark.spark

JOB = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import streamwatch
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    ws = Path(sys.argv[1])
    (ws / "eventlog").mkdir(parents=True)
    spark, _ = create_session(SessionConfig(
        workspace=ws, master="local[2]", ui=False, shuffle_partitions=2, quiet=True,
        table_format=TableFormatDecision("parquet", "test"),
        conf={"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(ws / "eventlog"),
              "spark.eventLog.rolling.enabled": "true", "spark.eventLog.compress": "true",
              "spark.sw.test.secret.token": "hunter2"}))
    rec = streamwatch.record(spark, ws / "events.jsonl")
    src = ws / "in"
    src.mkdir()
    for i in range(3):
        (src / f"f{i}.json").write_text("\\n".join(json.dumps({"k": j % 3, "v": j}) for j in range(10)))
    q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(str(src))
         .groupBy("k").count().writeStream.outputMode("update").format("noop").queryName("tiny")
         .option("checkpointLocation", str(ws / "cp")).trigger(availableNow=True).start())
    q.awaitTermination(300)
    rec.stop()
    spark.stop()
""")


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory):
    """The workspace of one run of JOB: ``eventlog/`` (Spark's) and ``events.jsonl`` (ours)."""
    ws = tmp_path_factory.mktemp("eventlog-job")
    out = subprocess.run([sys.executable, "-c", JOB, str(ws)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return ws


def test_event_log_replays_to_the_recorded_progress_events(job_dir):
    tmp_path = job_dir
    logs = list((tmp_path / "eventlog").iterdir())
    assert len(logs) == 1 and logs[0].name.startswith("eventlog_v2_"), logs  # rolling directory
    assert any(f.name.endswith(".zstd") for f in logs[0].iterdir()), "Spark 4 compresses with zstd"

    from_log_report, rec_report = ReadReport(), ReadReport()
    from_log = list(read_events(logs[0], from_log_report))
    recorded = [e for e in read_recording(tmp_path / "events.jsonl", rec_report) if hasattr(e, "run_id")]

    log_progress = [e for e in from_log if isinstance(e, QueryProgress)]
    rec_progress = [e for e in recorded if isinstance(e, QueryProgress)]
    assert len(log_progress) == 3
    assert log_progress == rec_progress  # every modelled field equal: Jackson's JSON vs progress.json
    assert [type(e) for e in from_log] == [QueryStarted, QueryProgress, QueryProgress, QueryProgress, QueryTerminated]
    assert [(type(e), e.id, e.run_id) for e in from_log] == [(type(e), e.id, e.run_id) for e in recorded]
    assert from_log_report.bad_lines == 0
    assert from_log_report.header.app["appId"] == rec_report.header.app["appId"]
    assert from_log_report.header.conf["spark.sw.test.secret.token"] == "*********"
    assert rec_report.header.conf["spark.sw.test.secret.token"] == "*********"
    assert "hunter2" not in (tmp_path / "events.jsonl").read_text()
    from streamwatch.analysis.fmt import session_line
    from streamwatch.backends.replay import recorded_session

    for report, what in ((from_log_report, "Spark event log"), (rec_report, "recording")):  # the replay header line
        line = session_line(recorded_session(report.header))
        assert line.startswith(f"Replay of {what}: ") and f"({from_log_report.header.app['appId']})" in line, line
        assert "on local[2]" in line and "Spark 4." in line, line


def test_the_dashboard_replays_a_spark_event_log(job_dir):
    """``streamwatch replay EVENTLOG_DIR`` as the user sees it: the real app (Pilot) fed by
    :class:`ReplayBackend` from the rolling, zstd-compressed directory Spark wrote."""
    import asyncio
    import time

    from streamwatch.backends.replay import ReplayBackend
    from streamwatch.tui.app import StreamwatchApp

    log_dir = next((job_dir / "eventlog").iterdir())
    expected = [e for e in read_recording(job_dir / "events.jsonl", ReadReport()) if isinstance(e, QueryProgress)]
    backend = ReplayBackend(log_dir, speed=0)
    assert [q.query_name for q in backend.plan.queries] == ["tiny"]
    app = StreamwatchApp(backend, checkpoint_refresh_s=0)

    async def scenario() -> tuple[str, str]:
        async with app.run_test(size=(140, 40)) as pilot:
            deadline = time.monotonic() + 60
            while not (backend.done.is_set() and app.board.rows["tiny"].status == "stopped"
                       and not app.frame_pending):
                assert time.monotonic() < deadline, f"replay did not finish: {app.board.rows['tiny']}"
                await pilot.pause(0.05)
            await pilot.pause()
            header = str(app.query_one("#session").render())
            cell = str(app.query_one("#query-table").get_cell("tiny", "status"))
            await pilot.press("q")
            return header, cell

    header, cell = asyncio.run(scenario())
    row = app.board.rows["tiny"]
    assert backend.emitted == 5 and backend.report.bad_lines == 0  # started, 3 progress, terminated
    assert row.query_id == expected[-1].id and row.run_id == expected[-1].run_id
    assert row.batch_id == expected[-1].batch_id == 2
    assert row.total_input_rows == sum(e.num_input_rows for e in expected) == 30  # 3 files × 10 rows
    assert row.progress_count == 3 and row.exception is None
    assert cell == "stopped"
    assert header.startswith("Replay of Spark event log: ") and "on local[2]" in header, header
    assert "hunter2" not in header
