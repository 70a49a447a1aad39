"""Checkpoints of real stateful queries, written once per test run with the shared session
(:mod:`tests.helpers.state_queries`), for the state reader's oracle, CLI and audit tests."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def state_cps(spark, tmp_path_factory):
    """name → checkpoint folder of every query the state tests read."""
    from tests.helpers import state_queries as Q

    base = tmp_path_factory.mktemp("state-cps")
    return {
        "agg_hdfs": Q.write_aggregation(spark, base / "agg_hdfs"),
        "agg_rocks": Q.write_aggregation(spark, base / "agg_rocks", Q.ROCKSDB),
        "agg_rocks_cl": Q.write_aggregation(spark, base / "agg_rocks_cl", Q.ROCKSDB, changelog=True),
        "agg_rocks_v2": Q.write_aggregation(spark, base / "agg_rocks_v2", Q.ROCKSDB, changelog=True, format_version=2),
        "dedup": Q.write_dedup(spark, base / "dedup"),
        "dedup_ww": Q.write_dedup(spark, base / "dedup_ww", Q.ROCKSDB, within_watermark=True, changelog=True),
        "join": Q.write_join(spark, base / "join"),
        "join_rocks": Q.write_join(spark, base / "join_rocks", Q.ROCKSDB),
        "session": Q.write_session_window(spark, base / "session", Q.ROCKSDB),
        "pandas": Q.write_pandas_state(spark, base / "pandas"),
        "types": Q.write_types(spark, base / "types", Q.ROCKSDB),
        "bounded": Q.write_bounded(spark, base / "bounded"),
        "growing": Q.write_growing(spark, base / "growing"),
    }
