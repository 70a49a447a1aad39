"""`replay`, `events`, `land`, `run`, `watch` and the Kafka options without Spark: each usage
or input error is one line on stderr with its documented exit status, `watch --log --once --recording` merges
the listener's numbers, and `--kafka-bootstrap` is recorded for `land` while the run lasts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from tests.helpers.fake_checkpoint import QUERY_ID, FakeCheckpoint
from tests.helpers.recording import write_recording

ROOT = Path(__file__).resolve().parents[2]
STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")
T0 = 1_790_000_000_000


def _sw(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(main, list(args), env=env)


def _one_line_error(r, command: str, code: int, *fragments: str) -> None:
    assert r.exit_code == code, (r.exit_code, r.output)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"streamwatch {command}: "), r.stderr
    assert "Traceback" not in r.output
    for f in fragments:
        assert f in lines[0], (f, lines[0])


# -- replay ----------------------------------------------------------------------------------

def test_replay_negative_speed_is_usage():
    _one_line_error(_sw("replay", "x.jsonl", "--speed", "-1"), "replay", 2, "--speed must be >= 0")


@pytest.mark.parametrize("command", ["replay", "events"])
@pytest.mark.parametrize(("name", "content", "says"), [
    ("gone.jsonl", None, "no such file or directory"),
    ("notes.txt", "hello\nworld\n", "neither a streamwatch recording nor a Spark event log"),
])
def test_unreadable_source_exits_4_with_one_stderr_line(tmp_path, command, name, content, says):
    """`replay` and `events` of a missing or foreign file: the real command exits 4 (docs/recording.md:
    unreadable input) with exactly one line on stderr naming the file, nothing on stdout, and
    `replay` never opens the dashboard."""
    source = tmp_path / name
    if content is not None:
        source.write_text(content)
    r = subprocess.run([STREAMWATCH, command, str(source)], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 4, (r.returncode, r.stderr)
    assert r.stderr.splitlines() == [f"streamwatch {command}: {source}: {says}"]
    assert r.stdout == ""


@pytest.mark.parametrize("args", [
    ["inspect", "{p}"], ["inspect", "{p}", "--check"], ["state", "{p}"], ["diff", "{p}", "{p}"],
    ["recover", "{p}"], ["retention", "{p}"], ["compat", "{p}", "--pipeline", "flights", "--layer", "bronze"],
    ["lineage", "x.csv", "--workspace", "{p}"], ["watch", "{p}", "--log", "--once"],
], ids=lambda a: " ".join(a[:1] + [x for x in a[1:] if x.startswith("--")]))
def test_every_reader_given_a_missing_path_exits_4_with_one_stderr_line(tmp_path, args):
    """The same house code as `replay`/`events` (docs/recording.md: 4 unreadable) from every command
    that reads a path, through the real console script, before any Spark or UI starts."""
    missing = str(tmp_path / "gone")
    r = subprocess.run([STREAMWATCH, *(a.format(p=missing) for a in args)], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=120)
    assert r.returncode == 4, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"streamwatch {args[0]}: ") and missing in lines[0], r.stderr
    assert r.stdout == ""
    assert not (tmp_path / "gone").exists()  # nothing created where the input was missing


def test_replay_poll_below_minimum_is_click_usage():
    r = _sw("replay", "x.jsonl", "--follow", "--poll", "0.01")
    assert r.exit_code == 2 and "--poll" in r.stderr


# -- land ------------------------------------------------------------------------------------

def test_land_unknown_pipeline_lists_the_known_ones(tmp_path):
    _one_line_error(_sw("land", "nope", "--workspace", str(tmp_path)), "land", 2, "unknown pipeline 'nope'", "flights")


def test_land_option_the_pipeline_does_not_take_is_usage(tmp_path):
    _one_line_error(_sw("land", "flights", "--kafka-bootstrap", "127.0.0.1:9", "--workspace", str(tmp_path)),
                    "land", 2, "pipeline 'flights' does not support --kafka-bootstrap")
    assert not (tmp_path / "landing").exists()  # refused before anything is written


def test_land_into_an_uncreatable_folder_exits_4(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = _sw("land", "flights", "--workspace", str(blocker / "ws"))
    _one_line_error(r, "land", 4, "flights/", "Not a directory")
    assert r.stdout == ""


def test_land_ratio_out_of_range_is_click_usage(tmp_path):
    r = _sw("land", "orders", "--bad-ratio", "1.5", "--workspace", str(tmp_path))
    assert r.exit_code == 2 and "--bad-ratio" in r.stderr


# -- run (checked before Spark starts) -------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["--pipeline", "nope"], "unknown pipeline 'nope'"),
    (["--land-every", "0"], "--land-every must be > 0"),
    (["--land-every", "-2"], "--land-every must be > 0"),
    (["--max-files", "-1"], "--max-files must be >= 0"),
    (["--master", "  "], "--master must not be empty"),
    (["--trigger", "everySoOften"], "everySoOften"),
    (["--output-mode", "platinum=complete"], "platinum"),
])
def test_run_usage_errors_exit_2_before_spark(tmp_path, args, message):
    r = _sw("run", "--workspace", str(tmp_path / "ws"), *args)
    _one_line_error(r, "run", 2, message)
    assert not (tmp_path / "ws").exists()  # nothing started, nothing written


# -- watch -----------------------------------------------------------------------------------

def _cp(root: Path) -> FakeCheckpoint:
    cp = FakeCheckpoint(root / "checkpoints" / "p" / "q")
    for b in range(3):
        cp.plan(b, T0 + b * 1000, [f"file:///in/{b}.json"])
        cp.commit(b, T0 + b * 1000 + 200)
    return cp


def test_watch_usage_and_unreadable_recording(tmp_path):
    cp = _cp(tmp_path)
    _one_line_error(_sw("watch", str(cp.root), "--out", str(tmp_path / "o.jsonl")), "watch", 2, "need --log")
    _one_line_error(_sw("watch", str(cp.root), "--prometheus", "0"), "watch", 2, "need --log")
    _one_line_error(_sw("watch", str(cp.root), "--log", "--once", "--recording", str(tmp_path / "none.jsonl")),
                    "watch", 4, "--recording", "no such file or directory")
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text("this is not a recording\n")
    r = _sw("watch", str(cp.root), "--log", "--once", "--recording", str(bogus))
    assert r.exit_code == 4 and "streamwatch watch: --recording: " in r.stderr, r.output
    r = _sw("watch", str(tmp_path / "nope"))  # the dashboard path: unreadable before any UI
    _one_line_error(r, "watch", 4, "nope")


def test_watch_out_that_cannot_be_written_exits_4(tmp_path):
    cp = _cp(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = _sw("watch", str(cp.root), "--log", "--once", "--out", str(blocker / "o.jsonl"))
    assert r.exit_code == 4, r.output
    assert f"streamwatch watch: cannot write {blocker / 'o.jsonl'}: Not a directory" in r.stderr


def test_watch_once_merges_the_listener_numbers_of_a_recording(tmp_path):
    cp = _cp(tmp_path)
    progress = {"id": QUERY_ID, "runId": "a0a0a0a0-0000-4000-8000-000000000001", "name": "q",
                "timestamp": "2026-09-21T13:33:21.000Z", "batchId": 1, "batchDuration": 380, "numInputRows": 900,
                "inputRowsPerSecond": 450.0, "processedRowsPerSecond": 2100.0,
                "durationMs": {"addBatch": 300, "triggerExecution": 390}, "stateOperators": [],
                "sources": [{"description": "FileStreamSource[file:/in]", "startOffset": None,
                             "endOffset": {"logOffset": 1}, "latestOffset": None, "numInputRows": 900,
                             "inputRowsPerSecond": 450.0, "processedRowsPerSecond": 2100.0, "metrics": {}}],
                "sink": {"description": "FileSink[/out]", "numOutputRows": 900}}
    rec = write_recording(tmp_path / "events.jsonl", T0, (T0 + 1300, progress))
    out = tmp_path / "batches.jsonl"
    r = _sw("watch", str(cp.root), "--log", "--once", "--recording", str(rec), "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "streamwatch watch: 1 batch(es) merged with the listener's numbers" in r.stderr
    batches = {d["batchId"]: d for d in map(json.loads, out.read_text().splitlines()) if d["kind"] == "checkpoint-batch"}
    assert sorted(batches) == [0, 1, 2]
    assert batches[1]["listener"]["inputRows"] == 900
    assert batches[1]["durationMs"] == 390  # the listener's triggerExecution wins
    assert batches[0]["listener"] is None and batches[2]["listener"] is None
    again = _sw("watch", str(cp.root), "--log", "--once", "--out", str(out))  # --out appends
    assert again.exit_code == 0
    assert sum(1 for line in out.read_text().splitlines() if '"checkpoint-batch"' in line) == 6


def test_watch_once_with_prometheus_on_a_free_port(tmp_path):
    cp = _cp(tmp_path)
    r = _sw("watch", str(cp.root), "--log", "--once", "--prometheus", "0")
    assert r.exit_code == 0, r.output
    assert "streamwatch watch: metrics at http://127.0.0.1:" in r.stderr
    assert [json.loads(x)["kind"] for x in r.stdout.splitlines()].count("checkpoint-batch") == 3


# -- --kafka-bootstrap (no broker is contacted: the address is handed to the pipeline) --------

def test_kafka_for_a_pipeline_without_kafka_yields_no_options(tmp_path):
    from streamwatch.cli.kafka_opts import kafka_for
    from streamwatch.pipeline import Workspace, get_pipeline

    said: list[str] = []
    with kafka_for(get_pipeline("flights"), Workspace(tmp_path), "127.0.0.1:9", said.append) as options:
        assert options == {}
    assert said == [] and not (tmp_path / "landing").exists()


def test_kafka_bootstrap_is_recorded_for_land_while_the_run_lasts(tmp_path):
    from streamwatch.cli.kafka_opts import kafka_connector_missing, kafka_for
    from streamwatch.pipeline import KAFKA_BOOTSTRAP_FILE, Workspace, get_pipeline

    if kafka_connector_missing():
        pytest.skip(kafka_connector_missing())
    clicks = get_pipeline("clicks")
    ws = Workspace(tmp_path)
    with kafka_for(clicks, ws, "127.0.0.1:9", lambda _: None) as options:
        assert options == {"kafka_bootstrap": "127.0.0.1:9"}
        files = [ws.landing("clicks", s.name) / KAFKA_BOOTSTRAP_FILE for s in clicks.sources]
        assert files and all(f.read_text() == "127.0.0.1:9\n" for f in files)
    assert not any(f.exists() for f in files)  # removed on leaving
    with kafka_for(clicks, ws, "127.0.0.1:9", lambda _: None):
        files[0].write_text("127.0.0.1:10\n")  # a later run took over this workspace
    assert files[0].read_text() == "127.0.0.1:10\n"  # not ours any more: kept


def test_kafka_connector_jars_missing_is_one_line(tmp_path, monkeypatch):
    from streamwatch.cli.kafka_opts import KafkaUnavailable, kafka_connector_missing, kafka_for
    from streamwatch.pipeline import Workspace, get_pipeline

    monkeypatch.setenv("STREAMWATCH_JARS", str(tmp_path / "no-jars"))
    why = kafka_connector_missing()
    assert why is not None and str(tmp_path / "no-jars") in why and "\n" not in why
    with (pytest.raises(KafkaUnavailable) as e,
          kafka_for(get_pipeline("clicks"), Workspace(tmp_path), None, lambda _: None)):
        pass
    assert e.value.exit_code == 3 and "pipeline 'clicks' reads Kafka" in str(e.value)


def test_no_broker_jars_says_pass_kafka_bootstrap(tmp_path, monkeypatch):
    """The connector is there but the broker's jar set is not: exit 3 naming --kafka-bootstrap,
    and SIGTERM's handler is left as it was."""
    import signal

    from streamwatch.cli.kafka_opts import KafkaUnavailable, kafka_connector_missing, kafka_for
    from streamwatch.pipeline import Workspace, get_pipeline

    if kafka_connector_missing():
        pytest.skip(kafka_connector_missing())
    jars = tmp_path / "jars"
    jars.mkdir()
    os.symlink(ROOT / ".jars" / "spark", jars / "spark")
    monkeypatch.setenv("STREAMWATCH_JARS", str(jars))
    before = signal.getsignal(signal.SIGTERM)
    with (pytest.raises(KafkaUnavailable) as e,
          kafka_for(get_pipeline("clicks"), Workspace(tmp_path), None, lambda _: None)):
        pass
    assert "needs a Kafka broker" in str(e.value) and "--kafka-bootstrap HOST:PORT" in str(e.value)
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_broker_that_cannot_start_is_kafka_unavailable_and_sigterm_restored(tmp_path, monkeypatch):
    """Broker jars that are not Kafka (a corrupt `make jars` folder): java cannot find the
    storage tool, the command says why in one line (exit 3) and restores SIGTERM."""
    import shutil
    import signal

    from streamwatch.cli.kafka_opts import KafkaUnavailable, kafka_connector_missing, kafka_for
    from streamwatch.pipeline import Workspace, get_pipeline

    if kafka_connector_missing() or shutil.which("java") is None:
        pytest.skip("needs the Kafka connector jars and java")
    jars = tmp_path / "jars"
    (jars / "kafka-broker").mkdir(parents=True)
    os.symlink(ROOT / ".jars" / "spark", jars / "spark")
    (jars / "kafka-broker" / "not-kafka-1.0.jar").write_bytes(b"")
    (jars / "kafka-broker" / ".resolved").write_text("")
    monkeypatch.setenv("STREAMWATCH_JARS", str(jars))
    said: list[str] = []
    before = signal.getsignal(signal.SIGTERM)
    with (pytest.raises(KafkaUnavailable) as e,
          kafka_for(get_pipeline("clicks"), Workspace(tmp_path), None, said.append)):
        pass
    assert str(e.value).startswith("the Kafka broker did not start: kafka storage format failed: ")
    assert "\n" not in str(e.value)
    assert said == ["starting a single-node Kafka broker (KRaft) on 127.0.0.1 …"]
    assert signal.getsignal(signal.SIGTERM) == before
