"""Spark Connect, against a real Connect server (pyspark's own, started once for this module
on an ephemeral loopback port by :func:`tests.helpers.connect_server.connect_server`):

* ``streamwatch.record(spark, path)`` on a ``SparkSession.builder.remote(…)`` session records
  the same events, in the same format, as the classic listener (started, one progress per
  micro-batch with its batch id, terminated — clean and with the query's exception), and
  the recording replays;
* ``streamwatch log --remote URL`` runs a bundled pipeline through the server and records it;
* an unreachable ``--remote`` is one line on stderr and exit 3; a malformed one exit 2.

Every Connect client runs in a child process: a Connect session marks its interpreter as a
Connect client (``SPARK_CONNECT_MODE_ENABLED``), which the test run's classic session must
not see."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.connect_server import connect_server

pytestmark = pytest.mark.spark

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")

CLIENT = textwrap.dedent("""
    import json, sys
    import streamwatch
    from streamwatch.spark.connect import connect_session

    url, out, data, work = sys.argv[1:5]
    spark = connect_session(url)
    rec = streamwatch.record(spark, out)
    q = (spark.readStream.schema("k INT, v INT").option("maxFilesPerTrigger", 1).json(data)
         .groupBy("k").count().writeStream.outputMode("update").format("noop").queryName("sw_connect")
         .option("checkpointLocation", work + "/cp").trigger(availableNow=True).start())
    q.awaitTermination(300)
    bad = (spark.readStream.format("rate").option("rowsPerSecond", 5).load()
           .selectExpr("raise_error(concat('boom on purpose ', value)) AS x")
           .writeStream.format("noop").queryName("sw_connect_fails")
           .option("checkpointLocation", work + "/cp_bad").start())
    try:
        bad.awaitTermination(300)
    except Exception:
        pass
    final = rec.stop()
    progress = [{"batchId": p.batchId, "processedRowsPerSecond": p.processedRowsPerSecond} for p in q.recentProgress]
    print(json.dumps({"id": str(q.id), "runId": str(q.runId), "badId": str(bad.id), "sessionId": spark.session_id,
                      "progress": progress, "dropped": final.dropped, "conversionErrors": final.conversion_errors}))
""")


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    """One Spark Connect server for the module (~10 s to start); its ``sc://127.0.0.1:PORT``."""
    with connect_server(tmp_path_factory.mktemp("connect-server")) as url:
        yield url


def _land(folder: Path, files: int) -> None:
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"f{i}.json").write_text("\n".join(json.dumps({"k": j % 3, "v": j}) for j in range(10)))


def test_record_on_a_connect_session_round_trips_and_replays(connect_url, tmp_path):
    from streamwatch.backends.replay import ReplayBackend
    from streamwatch.events.reader import ReadReport, read_recording
    from streamwatch.model.events import ListenerStats, QueryProgress, QueryStarted, QueryTerminated

    _land(tmp_path / "in", 3)
    out = tmp_path / "rec" / "events.jsonl"
    r = subprocess.run([sys.executable, "-c", CLIENT, connect_url, str(out), str(tmp_path / "in"), str(tmp_path)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    facts = json.loads(r.stdout.strip().splitlines()[-1])
    assert facts["dropped"] == 0 and facts["conversionErrors"] == 0

    report = ReadReport()
    events = list(read_recording(out, report))
    assert report.bad_lines == 0
    header = report.header
    assert header is not None and header.source == "listener"
    assert header.app["sparkVersion"] == "4.2.0" and header.app["sessionId"] == facts["sessionId"]
    assert header.app["master"] == "local[2]" and header.app["appId"].startswith("local-")
    assert header.conf.get("spark.app.name") == "streamwatch-connect-test"

    mine = [e for e in events if getattr(e, "id", None) == facts["id"]]
    assert [type(e) for e in mine] == [QueryStarted] + [QueryProgress] * 3 + [QueryTerminated]
    started, progress, term = mine[0], mine[1:4], mine[-1]
    assert (started.name, started.run_id) == ("sw_connect", facts["runId"])
    assert all(p.run_id == facts["runId"] and p.name == "sw_connect" for p in progress)
    assert [p.batch_id for p in progress] == [0, 1, 2] == [p["batchId"] for p in facts["progress"]]
    assert [p.num_input_rows for p in progress] == [10, 10, 10]
    # Connect's listener bus sends the event's JSON, whose rates Spark 4.2 rounds to 0.1 rows/s
    # (query.recentProgress there keeps the doubles): recorded as sent, within the rounding
    rates = [p.processed_rows_per_second for p in progress]
    exact = [p["processedRowsPerSecond"] for p in facts["progress"]]
    assert all(r == round(r, 1) and abs(r - x) <= 0.05 + 1e-9 for r, x in zip(rates, exact, strict=True)), (rates, exact)
    op = progress[-1].state_operators[0]
    assert op.operator_name == "stateStoreSave" and op.num_rows_total == 3 and op.num_shuffle_partitions == 1
    assert not term.failed and term.run_id == facts["runId"]

    failed = [e for e in events if isinstance(e, QueryTerminated) and e.id == facts["badId"]]
    assert len(failed) == 1 and failed[0].failed and "boom on purpose" in failed[0].exception
    assert failed[0].error_class == "USER_RAISED_EXCEPTION"
    assert isinstance(events[-1], ListenerStats) and events[-1].dropped == 0

    replay = ReplayBackend(out, speed=0)
    assert {q.query_name for q in replay.plan.queries} == {"sw_connect", "sw_connect_fails"}
    got: list[object] = []
    replay.start(got.append)
    assert replay.done.wait(60), "the replay never finished"
    replay.stop()
    assert [e for e in got if getattr(e, "id", None) == facts["id"]] == mine
    assert replay.report.bad_lines == 0


def test_log_remote_runs_a_pipeline_through_the_connect_server(connect_url, tmp_path):
    from streamwatch.events.reader import ReadReport, read_recording
    from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

    from sample_pipelines.events.factory import EventsFactory

    ws = tmp_path / "ws"
    landed = EventsFactory(ws / "landing" / "events" / "events", bad_ratio=0.0).land(2)
    lines = sum(len(Path(p).read_text().splitlines()) for p in landed)
    out = tmp_path / "run.jsonl"
    proc = subprocess.run(
        [STREAMWATCH, "log", "--remote", connect_url, "--pipeline", "events", "--workspace", str(ws),
         "--trigger", "availableNow", "--max-files", "0", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"via Spark Connect {connect_url}" in proc.stderr and "every query has finished" in proc.stderr
    report = ReadReport()
    events = list(read_recording(out, report))
    assert report.bad_lines == 0 and report.header is not None
    assert report.header.app["pipeline"] == "events" and report.header.app["remote"] == connect_url
    names = {e.name for e in events if isinstance(e, QueryStarted)}
    assert {"events_bronze", "events_silver", "events_gold"} <= names
    rows: dict[str, int] = {}
    for e in events:
        if isinstance(e, QueryProgress):
            rows[e.name] = rows.get(e.name, 0) + e.num_input_rows
    assert rows["events_bronze"] == rows["events_silver"] == lines, rows
    terminated = [e for e in events if isinstance(e, QueryTerminated)]
    assert len(terminated) == len(names) and not any(t.failed for t in terminated)
    assert any(ws.rglob("commits/0")), "the server wrote the checkpoints under the workspace"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released; never accepted on)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(("remote", "code", "message"), [
    (None, 3, "cannot reach the Spark Connect server at 127.0.0.1:"),
    ("http://127.0.0.1:15002", 2, "--remote must be a Spark Connect URL"),
    ("sc://127.0.0.1:notaport", 2, "--remote: bad port"),
])
def test_log_remote_errors_are_one_line(tmp_path, remote, code, message):
    """Checked before any Spark (in-process: no session is made, so none can leak)."""
    from click.testing import CliRunner

    from streamwatch.cli import main

    url = remote or f"sc://127.0.0.1:{_closed_port()}"
    result = CliRunner().invoke(main, ["log", "--remote", url, "--workspace", str(tmp_path / "ws"),
                                       "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == code, result.output
    errors = [line for line in result.stderr.splitlines() if message in line]
    assert len(errors) == 1 and result.stdout == "" and "Traceback" not in result.stderr, result.stderr


def test_log_remote_and_master_exclude_each_other(tmp_path):
    from click.testing import CliRunner

    from streamwatch.cli import main

    result = CliRunner().invoke(main, ["log", "--remote", "sc://127.0.0.1:1", "--master", "local[1]",
                                       "--out", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and "--remote and --master exclude each other" in result.stderr
