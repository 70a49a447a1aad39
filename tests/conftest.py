"""Shared fixtures: one real local SparkSession per test run (Parquet tables, no UI), the
shared corpus folder, and a read-only guard for checkpoint trees."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The test run's only SparkSession (~6 s to start): local[2], Parquet tables, UI off,
    JVM output in a log file under the session's temp folder."""
    pytest.importorskip("pyspark")
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    ws = tmp_path_factory.mktemp("spark-session")
    session, _info = create_session(
        SessionConfig(
            workspace=ws,
            master="local[2]",
            ui=False,
            shuffle_partitions=2,
            table_format=TableFormatDecision("parquet", "tests force Parquet"),
        )
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def corpus() -> Path:
    """``../shared/corpus`` beside the checkout; tests skip (saying why) when it is absent."""
    if not CORPUS.is_dir():
        pytest.skip(f"shared corpus not found at {CORPUS} (only present beside the team's checkout)")
    return CORPUS


def tree_digest(root: Path) -> dict[str, str]:
    """Path → sha256 (or 'dir'/'link') of everything under ``root``; used to prove that a
    reader changed nothing."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for d in dirnames:
            out[os.path.relpath(os.path.join(dirpath, d), root)] = "dir"
        for f in filenames:
            p = os.path.join(dirpath, f)
            rel = os.path.relpath(p, root)
            if os.path.islink(p):
                out[rel] = "link:" + os.readlink(p)
                continue
            try:
                with open(p, "rb") as fh:
                    out[rel] = hashlib.sha256(fh.read()).hexdigest()
            except OSError as e:
                out[rel] = f"unreadable:{e.errno}"
    return out


@pytest.fixture
def unchanged():
    """Call with a folder; asserts at teardown that nothing under it was created, modified or
    deleted."""
    roots: list[tuple[Path, dict[str, str]]] = []

    def guard(root: Path) -> Path:
        roots.append((root, tree_digest(root)))
        return root

    yield guard
    for root, before in roots:
        assert tree_digest(root) == before, f"{root} was modified"


@pytest.fixture(scope="session")
def flights_run(spark, tmp_path_factory):
    """The flights pipeline run once with ``availableNow`` over 12 landed files (3 days of
    NYC departures, ~2,700 rows) and 12 files of hourly weather. Returns (runner, workspace)."""
    from sample_pipelines.flights.factory import FlightsFactory
    from sample_pipelines.flights.weather import WeatherFactory
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner

    ws = Workspace(tmp_path_factory.mktemp("flights-ws"))
    pipeline = get_pipeline("flights")
    landed = FlightsFactory(ws.landing("flights", "flights")).land(12)
    assert len(landed) == 12
    assert len(WeatherFactory(ws.landing("flights", "weather")).land(12)) == 12
    runner = PipelineRunner(spark, pipeline, ws, "parquet")
    runner.run_available_now(timeout_s=300)
    return runner, ws
