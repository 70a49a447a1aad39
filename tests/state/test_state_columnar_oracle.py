"""Oracle for the column-wise decoder: on a real store whose rows hold nulls (whole null
aggregates, null strings), non-ASCII and long strings, negatives, doubles, booleans and
timestamps, the rows ``read_state`` decodes (column-wise: every type here takes that path) are
Spark's own ``spark.read.format("statestore")`` rows, HDFS-backed and RocksDB; and ``--json
--limit 0`` streams the same rows."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.state.columnar import compile_columns
from streamwatch.state.reader import find_schema, open_context, stream_state
from tests.helpers import state_queries as Q
from tests.state.test_state_oracle import norm, our_rows, spark_rows

pytestmark = pytest.mark.spark


def _events() -> list[list[tuple]]:
    batches = []
    for i in range(3):
        rows = [(f"k{j}" + ("é" * j if j % 3 == 0 else "") + ("x" * (j * 7 % 40)), 10 * i + j % 5,
                 None if j % 4 == 0 else (j - 6) * (i + 1), None if j % 5 == 0 else -j / 3) for j in range(12)]
        rows.append(("nulls-only", i, None, None))
        batches.append(rows)
    return batches


@pytest.fixture(scope="module")
def nullable_cps(spark, tmp_path_factory):
    from pyspark.sql import functions as F

    out = {}
    for name, provider in (("hdfs", Q.HDFS), ("rocksdb", Q.ROCKSDB)):
        root = tmp_path_factory.mktemp(f"columnar-{name}")
        src = Q.land_events(root / "in", _events())
        with Q.confs(spark, provider, changelog=provider == Q.ROCKSDB):
            df = Q.stream(spark, src).groupBy("key").agg(
                F.max(F.when(F.col("v") > 0, F.concat(F.col("key"), F.lit("-ü")))).alias("label"),
                F.sum("v").alias("total"), F.min("d").alias("low"), F.max("ts").alias("last"),
                F.max(F.col("v") % 2 == 0).alias("even"), F.count("v").alias("n"))
            out[name] = Q.run(df, root / "cp")
    return out


@pytest.mark.parametrize("name", ["hdfs", "rocksdb"])
def test_nulls_and_strings_match_the_statestore_source(spark, nullable_cps, unchanged, name):
    cp = nullable_cps[name]
    _, ctx = open_context(str(cp))
    cf = find_schema(ctx.storage, ctx.storage.join(ctx.root, "state", "0"), "default", 2, [0])[0]
    # every type of this store decodes column-wise (so the oracle checks that path)
    assert compile_columns(cf.key) is not None and compile_columns(cf.value) is not None
    theirs = spark_rows(spark, cp)
    ours = our_rows(unchanged, cp)
    assert ours == theirs
    assert any(None in r for r in theirs) and any(isinstance(x, str) and "é" in x for r in theirs for x in r)
    nulls_only = [r for r in theirs if r[0] == "nulls-only"]
    assert nulls_only and nulls_only[0][1:6] == (None, None, None, nulls_only[0][4], None)


def test_json_limit_0_streams_every_row(spark, nullable_cps, unchanged):
    cp = nullable_cps["rocksdb"]
    with unchanged.around(cp):
        r = CliRunner().invoke(main, ["state", str(cp), "--json", "--limit", "0"])
    assert r.exit_code == 0, r.output
    t = json.loads(r.stdout)["tables"][0]
    assert t["total_rows"] == len(t["rows"]) == len(spark_rows(spark, cp))
    assert sum(p["rows"] for p in t["partitions"]) == t["total_rows"]
    keys = sorted(row[0] for row in t["rows"])
    assert keys == sorted(norm(row["key"][0]) for row in spark.read.format("statestore").load(str(cp)).collect())


def test_stream_state_decodes_partition_by_partition(spark, nullable_cps, unchanged):
    cp = nullable_cps["hdfs"]
    with unchanged.around(cp):
        (stream,) = stream_state(str(cp))
        assert stream.stats.sizes == []  # nothing read before the rows are asked for
        first = next(stream.rows)
        # a partition's rows come as it is decoded: only partitions before it without rows are done
        assert all(p.rows == 0 for p in stream.stats.sizes)
        assert first[-1] not in {p.partition for p in stream.stats.sizes}
        rest = list(stream.rows)
    parts = {r[-1] for r in [first, *rest]}
    assert len(stream.stats.sizes) == len({p.partition for p in stream.stats.sizes}) >= len(parts)
    assert stream.stats.total == 1 + len(rest) == sum(p.rows for p in stream.stats.sizes)
    assert sorted((tuple(norm(x) for x in r) for r in [first, *rest]), key=repr) == spark_rows(spark, cp)
