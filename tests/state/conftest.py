"""Checkpoints of real stateful queries, written with the shared session
(:mod:`tests.helpers.state_queries`) for the state reader's oracle, CLI, fuzz and audit tests.

Each checkpoint is written the first time a test asks for it and kept for the run, so a
test waits only for the queries it reads (and pytest-timeout bounds each test, not all)."""

from __future__ import annotations

from pathlib import Path

import pytest


class Checkpoints:
    """``cps[name]`` → checkpoint folder, written on first access."""

    def __init__(self, spark, base: Path) -> None:
        from tests.helpers import state_queries as Q
        from tests.state import tws_queries as T

        self._spark, self._base, self._made = spark, base, {}
        self._recipes = {
            "agg_hdfs": lambda p: Q.write_aggregation(spark, p),
            "agg_rocks": lambda p: Q.write_aggregation(spark, p, Q.ROCKSDB),
            "agg_rocks_cl": lambda p: Q.write_aggregation(spark, p, Q.ROCKSDB, changelog=True),
            "agg_rocks_v2": lambda p: Q.write_aggregation(spark, p, Q.ROCKSDB, changelog=True, format_version=2),
            "dedup": lambda p: Q.write_dedup(spark, p),
            "dedup_ww": lambda p: Q.write_dedup(spark, p, Q.ROCKSDB, within_watermark=True, changelog=True),
            "join": lambda p: Q.write_join(spark, p),
            "join_rocks": lambda p: Q.write_join(spark, p, Q.ROCKSDB),
            "session": lambda p: Q.write_session_window(spark, p, Q.ROCKSDB),
            "pandas": lambda p: Q.write_pandas_state(spark, p),
            "types": lambda p: Q.write_types(spark, p, Q.ROCKSDB),
            "bounded": lambda p: Q.write_bounded(spark, p),
            "growing": lambda p: Q.write_growing(spark, p),
            "tws": lambda p: T.write_tws(spark, p),
            "tws_avro": lambda p: T.write_tws(spark, p, "avro"),
            # (checkpoint, recording) pairs: run while streamwatch.record wrote events.jsonl
            "bounded_rec": lambda p: T.recorded(spark, p, Q.write_bounded),
            "leak_rec": lambda p: T.recorded(spark, p, T.write_leak),
        }

    def __getitem__(self, name: str):
        if name not in self._made:
            self._made[name] = self._recipes[name](self._base / name)
        return self._made[name]


@pytest.fixture(scope="session")
def state_cps(spark, tmp_path_factory) -> Checkpoints:
    """name → checkpoint folder of every query the state tests read (lazily written)."""
    return Checkpoints(spark, tmp_path_factory.mktemp("state-cps"))
