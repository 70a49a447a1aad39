"""The flights pipeline on a real Spark standalone cluster (master + one 1-core worker on
loopback, started from the installed pyspark) gives the same gold table and the same
listener events as in local mode — and a job there, recording with
``streamwatch.record(spark, "s3://…")``, is followed from "a laptop" with ``--follow``.

Both runs are separate driver processes (their own SparkSession; the test run's shared session
is local), on byte-identical copies of the same landed files, with ``availableNow``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path

import pytest

from streamwatch.events.reader import ReadReport, read_events
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("flights_driver.py")
ROOT = Path(__file__).resolve().parents[2]
STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def _land(root: Path, files: int) -> None:
    from streamwatch.pipeline import Workspace

    from sample_pipelines.flights.factory import FlightsFactory
    from sample_pipelines.flights.weather import WeatherFactory

    ws = Workspace(root)
    assert len(FlightsFactory(ws.landing("flights", "flights")).land(files)) == files
    assert len(WeatherFactory(ws.landing("flights", "weather")).land(files)) == files


def _driver(root: Path, master: str, events: str, env: dict[str, str]) -> subprocess.Popen:
    env = {**env, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(DRIVER), str(root), master, events, str(root / "result.json")],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _progress_by_query(events: list) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if isinstance(e, QueryProgress):
            out[e.name].append((e.batch_id, e.num_input_rows))
    return dict(out)


@pytest.fixture(scope="module")
def two_runs(standalone_cluster, s3_endpoint, tmp_path_factory):
    """The same landed files run once on the cluster (recording to S3, followed while it runs)
    and once in local[2] mode (recording to a local file)."""
    base = tmp_path_factory.mktemp("cluster-vs-local")
    local_ws, cluster_ws = base / "local", base / "cluster"
    _land(local_ws, 6)
    shutil.copytree(local_ws / "landing", cluster_ws / "landing")
    url = "s3://jobs/flights/events.jsonl"

    followed: list = []
    stop = threading.Event()

    def follow() -> None:  # the laptop: `streamwatch replay --follow s3://…` reads like this
        for e in read_events(url, follow=True, stop=stop, poll_s=0.2):
            followed.append(e)

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    env = standalone_cluster.env
    procs = {"cluster": _driver(cluster_ws, standalone_cluster.url, url, env),
             "local": _driver(local_ws, "local[2]", str(local_ws / "events.jsonl"), env)}
    outputs = {}
    try:
        for name, p in procs.items():
            outputs[name], _ = p.communicate(timeout=600)
            assert p.returncode == 0, f"{name} driver failed: {outputs[name][-3000:]}\n{standalone_cluster.output()}"
        app_ids = [a.get("id") for a in standalone_cluster.state().get("completedapps", [])]
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(10)
    # the recorder stored its last segment before the driver exited; let the follower read it
    expected = list(read_events(url))
    deadline = 50
    while len(followed) < len(expected) and deadline:
        stop.wait(0.2)
        deadline -= 1
    stop.set()
    follower.join(10)
    return {
        "local": json.loads((local_ws / "result.json").read_text()),
        "cluster": json.loads((cluster_ws / "result.json").read_text()),
        "local_events": list(read_events(local_ws / "events.jsonl")),
        "cluster_events": expected,
        "followed": followed,
        "app_ids": app_ids,
    }


def test_the_job_really_ran_on_the_cluster(two_runs, standalone_cluster):
    cluster = two_runs["cluster"]
    assert cluster["master"] == standalone_cluster.url
    assert cluster["executors"] == 1  # the worker's one executor (the driver is not counted)
    assert two_runs["local"]["master"] == "local[2]" and two_runs["local"]["executors"] == 0
    assert two_runs["app_ids"], "the master saw no application"
    report = ReadReport()
    list(read_events("s3://jobs/flights/events.jsonl", report))
    assert report.header.app["master"] == standalone_cluster.url and report.header.app["pipeline"] == "flights"


def test_same_gold_table_as_local_mode(two_runs):
    local, cluster = two_runs["local"], two_runs["cluster"]
    assert cluster["gold_columns"] == local["gold_columns"]
    assert len(local["gold"]) > 10  # closed (carrier, hour) windows
    assert cluster["gold"] == local["gold"]


def test_same_listener_events_as_local_mode(two_runs):
    local, cluster = _progress_by_query(two_runs["local_events"]), _progress_by_query(two_runs["cluster_events"])
    from streamwatch.pipeline import get_pipeline

    pipeline = get_pipeline("flights")
    assert sorted(cluster) == sorted(local) == sorted(pipeline.query_name(la) for la in pipeline.layers)
    for name in local:  # batch ids in order, and the rows each query read in total
        assert [b for b, _ in cluster[name]] == [b for b, _ in local[name]], name
        assert sum(n for _, n in cluster[name]) == sum(n for _, n in local[name]), name
    assert cluster["flights_bronze"] == local["flights_bronze"]  # numInputRows per bronze batch
    assert sum(n for _, n in local["flights_bronze"]) > 1000
    for events in (two_runs["local_events"], two_runs["cluster_events"]):
        started = {e.name for e in events if isinstance(e, QueryStarted)}
        assert started == set(local)
        terminated = [e for e in events if isinstance(e, QueryTerminated)]
        assert len(terminated) == len(started) and not any(t.failed for t in terminated)


def test_followed_from_object_storage_while_it_ran(two_runs):
    followed, final = two_runs["followed"], two_runs["cluster_events"]
    assert [type(e).__name__ for e in followed] == [type(e).__name__ for e in final]
    assert _progress_by_query(followed) == _progress_by_query(final)


def test_streamwatch_log_master_runs_on_the_cluster(standalone_cluster, s3_endpoint, tmp_path):
    """`streamwatch log --master spark://…` (the CLI plumbing): headless on the cluster,
    recording to S3 segments, exit 0 when availableNow finished."""
    _land(tmp_path / "ws", 2)
    url = "s3://jobs/cli/events.jsonl"
    env = {**standalone_cluster.env, "PYSPARK_PYTHON": sys.executable, "STREAMWATCH_TABLE_FORMAT": "parquet"}
    out = subprocess.run([STREAMWATCH, "log", "--master", standalone_cluster.url, "--trigger", "availableNow",
                          "--workspace", str(tmp_path / "ws"), "--max-files", "0", "--no-ui", "--out", url,
                          "--segment-seconds", "1"], env=env, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == ""  # the recording went to S3
    assert f"on {standalone_cluster.url} (1 executor)" in out.stderr
    report = ReadReport()
    events = list(read_events(url, report))
    assert report.header.app["master"] == standalone_cluster.url
    assert sum(n for _, n in _progress_by_query(events)["flights_bronze"]) > 100
