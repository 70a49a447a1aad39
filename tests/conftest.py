"""Shared fixtures: one real local SparkSession per test run (Parquet tables, no UI), the
shared corpus folder, and a read-only guard for checkpoint trees."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def spark_session(tmp_path_factory):
    """The test run's only SparkSession (~6 s to start) and its SessionInfo: local[2], UI off,
    JVM output in a log file under the session's temp folder; Delta Lake and the Kafka
    connector loaded when `make jars` resolved them (else Parquet, as without Maven).

    Spark's background state store maintenance (every ``maintenanceInterval``, 60 s) is off
    in practice (24 h): a test that needs maintenance asks for it at each commit
    (``stateStore.unloadOnCommit``, see tests/ops/test_ops_retention.py), so no snapshot is
    written after a test's query stopped, and ``StateStore.stop()`` (tests/helpers/
    state_queries.py) never waits on in-flight maintenance: that wait deadlocks in Spark 4.2
    (``stop`` holds the loaded-providers lock the maintenance task needs) until Spark's
    300 s + 60 s shutdown timeouts."""
    pytest.importorskip("pyspark")
    from streamwatch.spark.session import SessionConfig, create_session

    ws = tmp_path_factory.mktemp("spark-session")
    session, info = create_session(
        SessionConfig(workspace=ws, master="local[2]", ui=False, shuffle_partitions=2,
                      conf={"spark.sql.streaming.stateStore.maintenanceInterval": "24h"})
    )
    yield session, info
    session.stop()


@pytest.fixture(scope="session")
def spark(spark_session):
    """The shared SparkSession (see :func:`spark_session`)."""
    return spark_session[0]


@pytest.fixture(autouse=True)
def _no_query_outlives_its_test(request):
    """A test that failed half-way (a deadline under load) leaves its queries running in the
    shared session; the next test would meet them. Stop what a test left, after it."""
    yield
    if "spark" not in request.fixturenames:
        return
    for query in request.getfixturevalue("spark").streams.active:
        query.stop()


@pytest.fixture(scope="session")
def table_format(spark_session) -> str:
    """The pipelines' table format in this run: ``delta`` where its jars loaded, else ``parquet``."""
    return spark_session[1].table_format


@pytest.fixture(scope="session")
def delta(table_format) -> str:
    """``delta``; skips (saying why) when Delta's jars were not resolved (`make jars`)."""
    if table_format != "delta":
        pytest.skip("Delta Lake's jars are not resolved here (`make jars` needs mvn + Maven Central)")
    return table_format


@pytest.fixture(scope="module")
def s3_server():
    """A real S3 API for one test module (:func:`tests.helpers.s3.moto_s3`): moto's server on a
    free loopback port, no bucket yet, the environment pointing boto3/s3fs at it; yields an
    :class:`~tests.helpers.s3.S3Server` (``endpoint``, boto3 ``client``). Skips without moto/s3fs."""
    from tests.helpers.s3 import moto_s3

    with moto_s3() as server:
        yield server


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``../shared/corpus`` beside the checkout; tests skip (saying why) when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (only present beside the team's checkout)")
    return CORPUS


def assert_golden(files: dict[Path, str]) -> None:
    """Each golden file holds exactly its text. With ``STREAMWATCH_UPDATE_GOLDEN`` set, write
    every file and skip: an update run asserts nothing, so it never passes."""
    if os.environ.get("STREAMWATCH_UPDATE_GOLDEN"):
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        pytest.skip(f"golden file(s) {', '.join(p.name for p in files)} written (STREAMWATCH_UPDATE_GOLDEN set): nothing asserted")
    for path, text in files.items():
        assert path.is_file(), f"missing golden file {path} (STREAMWATCH_UPDATE_GOLDEN=1 to create)"
        assert text == path.read_text(), f"output differs from {path}"


def tree_digest(root: Path) -> dict[str, str]:
    """Path → what is there, for everything under ``root`` (symlinks not followed): the sha256
    and permission bits of a regular file, ``dir``/``link:<target>``/``fifo``/``socket``/
    ``device`` otherwise. Used to prove that a reader created, modified or deleted nothing;
    never opens anything but regular files (a FIFO would block)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in (*dirnames, *filenames):
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            try:
                st = os.lstat(p)
            except OSError as e:
                out[rel] = f"gone:{e.errno}"
                continue
            mode = st.st_mode
            if stat.S_ISLNK(mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(mode):
                out[rel] = f"dir:{stat.S_IMODE(mode):o}"
            elif stat.S_ISFIFO(mode):
                out[rel] = "fifo"
            elif stat.S_ISSOCK(mode):
                out[rel] = "socket"
            elif not stat.S_ISREG(mode):
                out[rel] = "device"
            else:
                try:
                    with open(p, "rb") as fh:
                        out[rel] = f"{stat.S_IMODE(mode):o}:" + hashlib.file_digest(fh, "sha256").hexdigest()
                except OSError as e:
                    out[rel] = f"unreadable:{e.errno}"
    return out


def _diff(before: dict[str, str], after: dict[str, str]) -> str:
    created = sorted(set(after) - set(before))
    deleted = sorted(set(before) - set(after))
    modified = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = [f"{what}: {', '.join(names[:5])}{' …' if len(names) > 5 else ''}"
             for what, names in (("created", created), ("deleted", deleted), ("modified", modified)) if names]
    return "; ".join(parts)


class ReadOnlyGuard:
    """The read-only proof for checkpoints (and sink folders): ``guard(root)`` records a
    :func:`tree_digest` of ``root`` and returns it; at teardown every recorded tree must be
    byte-identical. ``with guard.around(root):`` checks one tree at the end of the block
    (used per hypothesis example); ``guard.digest(root)`` is :func:`tree_digest`."""

    digest = staticmethod(tree_digest)

    def __init__(self) -> None:
        self.roots: list[tuple[Path, dict[str, str]]] = []

    def __call__(self, root):
        root = Path(root)
        assert root.exists(), f"{root} does not exist: nothing to guard"
        self.roots.append((root, tree_digest(root)))
        return root

    @contextlib.contextmanager
    def around(self, root):
        before = tree_digest(Path(root))
        yield Path(root)
        after = tree_digest(Path(root))
        assert after == before, f"{root} was modified: {_diff(before, after)}"

    def verify(self) -> None:
        for root, before in self.roots:
            after = tree_digest(root)
            assert after == before, f"{root} was modified: {_diff(before, after)}"


@pytest.fixture
def unchanged():
    """THE read-only proof: call it with a checkpoint (or sink) folder before reading it; the
    test fails at teardown if anything under it was created, modified or deleted. Every test
    that opens a checkpoint through the inspector or the dashboard uses it."""
    guard = ReadOnlyGuard()
    yield guard
    guard.verify()


@pytest.fixture(scope="session")
def flights_run(spark, tmp_path_factory):
    """The flights pipeline run once with ``availableNow`` over 12 landed files (3 days of
    NYC departures, ~2,700 rows) and 12 files of hourly weather. Returns (runner, workspace).

    This is the suite's Parquet run (Spark's file sink, ``_spark_metadata``), which the
    inspector and fuzz tests read; the other pipelines run on Delta."""
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    from sample_pipelines.flights.factory import FlightsFactory
    from sample_pipelines.flights.weather import WeatherFactory

    ws = Workspace(tmp_path_factory.mktemp("flights-ws"))
    pipeline = get_pipeline("flights")
    landed = FlightsFactory(ws.landing("flights", "flights")).land(12)
    assert len(landed) == 12
    assert len(WeatherFactory(ws.landing("flights", "weather")).land(12)) == 12
    runner = PipelineRunner(spark, pipeline, ws, "parquet")
    runner.run_available_now(timeout_s=300)
    return runner, ws


@pytest.fixture(scope="session")
def kafka_broker():
    """A real single-node KRaft Kafka broker on 127.0.0.1 (ephemeral ports, temporary log
    folder) from the jars `make jars` resolved, for the whole run; yields its bootstrap
    ``HOST:PORT``. Skips, saying why, without the jars or java."""
    from streamwatch.spark.kafka_broker import LocalKafka, broker_available

    ok, why = broker_available()
    if not ok:
        pytest.skip(why)
    broker = LocalKafka.start()
    yield broker.bootstrap
    broker.stop()


@pytest.fixture(scope="session")
def sdp_logged(tmp_path_factory):
    """scripts/sdp_fixture.py's pipeline run once by ``streamwatch log --spec``
    (:func:`tests.helpers.sdp_runs.log_first_run`): one JVM for tests/spark/test_sdp_log.py and
    tests/cli/test_sdp_watch.py, which only read."""
    from tests.helpers.sdp_runs import log_first_run

    return log_first_run(tmp_path_factory.mktemp("sdp-runs"))


@pytest.fixture(scope="session")
def sdp_refreshed(sdp_logged):
    """:func:`sdp_logged`'s project after a landed file and ``spark-pipelines run --refresh
    bronze`` (:func:`tests.helpers.sdp_runs.refresh_bronze`); the flow states that run printed."""
    from tests.helpers.sdp_runs import refresh_bronze

    return refresh_bronze(sdp_logged)
