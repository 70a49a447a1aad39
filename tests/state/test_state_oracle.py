"""Oracle: the rows ``streamwatch.state.read_state`` decodes without a JVM are, row for row,
the rows Spark's own state data source (``spark.read.format("statestore")``) returns, on
checkpoints written in this run (HDFS and RocksDB; aggregation, dropDuplicates, stream-stream
join, session window, applyInPandasWithState; checkpoint format v2 with changelogs)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from streamwatch.state import read_state

pytestmark = pytest.mark.spark


def norm(v):
    """Comparable form: timestamps → epoch µs (Spark gives naive local datetimes, we give
    aware UTC ones), structs → dicts, decimals → str."""
    if isinstance(v, dt.datetime):
        return round(v.timestamp() * 1_000_000)
    if hasattr(v, "asDict"):
        return {k: norm(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [norm(x) for x in v]
    if isinstance(v, Decimal):
        return str(v.normalize())
    return v


def spark_rows(spark, cp, batch=None, **opts):
    r = spark.read.format("statestore")
    if batch is not None:
        r = r.option("batchId", batch)
    for k, v in opts.items():
        r = r.option(k, v)
    out = []
    for row in r.load(str(cp)).collect():
        out.append(tuple(norm(x) for x in (*row["key"], *row["value"], row["partition_id"])))
    return sorted(out, key=repr)


def our_rows(guard, cp, batch=None, store=None, operator=0):
    with guard.around(cp):  # our read writes nothing (Spark's own reads are not guarded)
        tables = read_state(str(cp), operator=operator, store=store, batch=batch)
    assert len(tables) == 1
    t = tables[0]
    assert not t.findings, t.findings
    assert t.total_rows == len(t.rows)
    return sorted((tuple(norm(x) for x in r) for r in t.rows), key=repr)


@pytest.mark.parametrize("name", ["agg_hdfs", "agg_rocks", "agg_rocks_cl", "dedup", "dedup_ww", "session", "pandas", "types"])
def test_every_batch_matches_the_statestore_source(spark, state_cps, unchanged, name):
    cp = state_cps[name]
    batches = sorted(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    assert len(batches) <= 8, f"{name}: {len(batches)} batches (no-data batches?): keep the oracle quick"
    seen = 0
    for b in batches:
        ours = our_rows(unchanged, cp, b)
        assert ours == spark_rows(spark, cp, b), f"{name} batch {b}"
        seen += len(ours)
    assert seen > 0, "the query kept no state at all: the comparison proves nothing"


@pytest.mark.parametrize("name", ["join", "join_rocks"])
def test_join_stores_match_the_statestore_source(spark, state_cps, unchanged, name):
    cp = state_cps[name]
    last = max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    for b in (1, last):
        for store in ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"):
            assert our_rows(unchanged, cp, b, store) == spark_rows(spark, cp, b, storeName=store), f"{name} {store} batch {b}"
    # the side view: keyWithIndexToValue rows without the index, with the matched flag
    (left,) = read_state(str(cp), store="left")
    assert [c.name for c in left.columns][-2:] == ["value.matched", "partition_id"]
    raw = our_rows(unchanged, cp, None, "left-keyWithIndexToValue")
    assert sorted((r[0], *r[2:]) for r in raw) == sorted(tuple(norm(x) for x in r) for r in left.rows)
    assert any(r[-2] is True for r in left.rows) and any(r[-2] is False for r in left.rows)


def test_checkpoint_v2_with_changelogs(spark, state_cps, unchanged):
    """Checkpoint format v2 + changelog checkpointing (``N_<uuid>.changelog``): where Spark's
    reader can read it, it is the oracle; where it fails (Spark 4.2 looks for
    ``N.changelog``), the same query over the same input with format v1 is."""
    cp = state_cps["agg_rocks_v2"]
    twin = state_cps["agg_rocks"]
    assert any("_" in p.name for p in (cp / "state" / "0" / "0").glob("*.changelog"))
    batches = sorted(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    for b in batches:
        ours = our_rows(unchanged, cp, b)
        try:
            oracle = spark_rows(spark, cp, b)
        except Exception:  # noqa: BLE001 - CANNOT_READ_STREAMING_STATE_FILE in Spark 4.2
            oracle = spark_rows(spark, twin, b)
        assert ours == oracle, f"batch {b}"
        assert ours == our_rows(unchanged, twin, b)
    # the replay really went through changelogs for a version without a zip
    (t,) = read_state(str(cp), batch=1)
    assert all(p.replayed for p in t.partitions)
