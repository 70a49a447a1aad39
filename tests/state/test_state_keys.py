"""One state key at a time (``streamwatch.state.keys``, ``streamwatch state CP --key``) against
Spark itself, on checkpoints written in this run:

- placement: for every key of a real aggregation over 7 partitions (string keys of every tail
  length, unicode, ints, longs, a window struct), the partition streamwatch computes is the
  ``partition_id`` Spark's ``statestore`` reader reports and Spark's own
  ``pmod(hash(cols), 7)``; Spark's ``hash()`` of single values of many types too;
- lookup: each key's value (HDFS and RocksDB point lookup) is the row Spark's reader gives;
- history: each key's changes are those of Spark's change feed (``readChangeFeed``), HDFS and
  RocksDB with changelog checkpointing, and the watermark beside each is ``offsets/N``'s.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.state.keys import KeyUsageError, key_history, lookup_key
from streamwatch.state.murmur import hash_row, partition_of
from streamwatch.state.types import parse_struct
from tests.helpers import state_queries as Q

pytestmark = pytest.mark.spark

N_PARTS = 7
NAMES = ["", "a", "ab", "abc", "abcd", "abcde", "user42", "héllo", "漢字キー", "ü" * 3, "x" * 13, "-\x7f\u00ff"]


def norm(v):
    """Comparable form: timestamps → epoch µs (Spark gives naive local datetimes, we give
    aware UTC ones), structs → dicts."""
    if isinstance(v, dt.datetime):
        return round(v.timestamp() * 1_000_000)
    if hasattr(v, "asDict"):
        return {k: norm(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    return v


def write_placement(spark, root: Path, provider: str) -> Path:
    """groupBy(10 s window, key string, ik int, v long) over 7 shuffle partitions, 2 batches."""
    from pyspark.sql import functions as F

    batches = [[(name, 10 * i + j % 7, (j * 7919 - 50_000) * (1 if j % 2 else -3_000_000_000), 0.0)
                for j, name in enumerate(NAMES * 4)] for i in range(2)]
    src = Q.land_events(root / "in", batches)
    with Q.confs(spark, provider, changelog=True, extra={"spark.sql.shuffle.partitions": str(N_PARTS)}):
        df = (Q.stream(spark, src).withWatermark("ts", "5 seconds").withColumn("ik", (F.col("v") % 1000).cast("int"))
              .groupBy(F.window("ts", "10 seconds"), "key", "ik", "v")
              .agg(F.count("*").alias("n"), F.max("ts").alias("last_ts")))
        return Q.run(df, root / "cp")


@pytest.fixture(scope="module", params=["hdfs", "rocksdb"])
def placement_cp(request, spark, tmp_path_factory):
    provider = Q.HDFS if request.param == "hdfs" else Q.ROCKSDB
    return write_placement(spark, tmp_path_factory.mktemp(f"keys-{request.param}"), provider)


def key_json(key_row) -> str:
    w = key_row["window"]
    return json.dumps({"window": {"start": norm(w["start"]), "end": norm(w["end"])}, "key": key_row["key"],
                       "ik": key_row["ik"], "v": key_row["v"]})


def test_partition_and_value_of_every_key_match_spark(spark, placement_cp, unchanged):
    cp = unchanged(placement_cp)
    df = spark.read.format("statestore").load(str(cp)).selectExpr(
        "key", "value", "partition_id", f"pmod(hash(key.window, key.key, key.ik, key.v), {N_PARTS}) AS spark_pmod")
    rows = df.collect()
    assert len(rows) >= 2 * len(NAMES) and len({r["partition_id"] for r in rows}) == N_PARTS
    schema = parse_struct(spark.read.format("statestore").load(str(cp)).schema["key"].dataType.json())
    for r in rows:
        k = r["key"]
        values = ({"start": k["window"]["start"].astimezone(dt.UTC),
                   "end": k["window"]["end"].astimezone(dt.UTC)}, k["key"], k["ik"], k["v"])
        ours = partition_of(schema, values, N_PARTS)
        assert ours == r["partition_id"] == r["spark_pmod"], (k, ours, r["partition_id"], r["spark_pmod"])
        res = lookup_key(str(cp), key_json(k))
        assert res.target.partition == r["partition_id"]
        assert res.value is not None, k
        assert [norm(v) for v in res.value] == [norm(v) for v in r["value"]], k
        # only the key's partition was read
        assert all("/" not in f for f in res.files) and res.files


def test_a_key_not_in_the_store_is_not_found(placement_cp, unchanged):
    cp = unchanged(placement_cp)
    res = lookup_key(str(cp), json.dumps({"window": {"start": "2020-01-01T00:00:00Z", "end": "2020-01-01T00:00:10Z"},
                                          "key": "nobody", "ik": 1, "v": 1}))
    assert res.value is None


def test_spark_hash_of_single_values(spark):
    cases = [
        ("int", "CAST(1 AS INT)", 1), ("int", "CAST(-7 AS INT)", -7), ("long", "CAST(1 AS BIGINT)", 1),
        ("long", "CAST(-3000000000 AS BIGINT)", -3_000_000_000), ("boolean", "true", True),
        ("short", "CAST(-2 AS SMALLINT)", -2), ("byte", "CAST(5 AS TINYINT)", 5),
        ("double", "CAST(1.5 AS DOUBLE)", 1.5), ("double", "CAST(-0.0 AS DOUBLE)", -0.0),
        ("float", "CAST(2.25 AS FLOAT)", 2.25), ("date", "DATE'2026-01-02'", dt.date(2026, 1, 2)),
        ("timestamp", "TIMESTAMP'2026-01-01 00:00:10 UTC'", dt.datetime(2026, 1, 1, 0, 0, 10, tzinfo=dt.UTC)),
        ("decimal(10,2)", "CAST(12.34 AS DECIMAL(10,2))", "12.34"),
        ("decimal(38,6)", "CAST(-123456789012345678901.5 AS DECIMAL(38,6))", "-123456789012345678901.5"),
        ("string", "CAST(NULL AS STRING)", None),
    ] + [("string", "'" + s.replace("'", "''") + "'", s) for s in NAMES]
    exprs = ", ".join(f"hash({sql})" for _t, sql, _v in cases)
    got = spark.sql(f"SELECT {exprs}").collect()[0]
    from decimal import Decimal

    for (t, sql, v), want in zip(cases, got, strict=True):
        schema = parse_struct({"type": "struct", "fields": [{"name": "c", "type": t}]})
        value = Decimal(v) if t.startswith("decimal") else v
        assert hash_row(schema, (value,)) == want, sql
    struct_hash = spark.sql("SELECT hash(named_struct('a', 1, 'b', 'xyz'), 'k')").collect()[0][0]
    s = parse_struct({"type": "struct", "fields": [
        {"name": "s", "type": {"type": "struct", "fields": [{"name": "a", "type": "integer"}, {"name": "b", "type": "string"}]}},
        {"name": "k", "type": "string"}]})
    assert hash_row(s, ({"a": 1, "b": "xyz"}, "k")) == struct_hash


def change_feed(spark, cp, a: int, b: int) -> dict[str, list]:
    rows = (spark.read.format("statestore").option("readChangeFeed", True).option("changeStartBatchId", a)
            .option("changeEndBatchId", b).load(str(cp)).collect())
    out: dict[str, list] = {}
    for r in rows:
        k = r["key"]
        kj = json.dumps({"window": {"start": norm(k["window"]["start"]), "end": norm(k["window"]["end"])},
                         "key": k["key"]})
        out.setdefault(kj, []).append((r["batch_id"], r["change_type"],
                                       [norm(v) for v in r["value"]] if r["value"] is not None else None))
    return {k: sorted(v, key=lambda c: (c[0], c[1] != "delete")) for k, v in out.items()}


@pytest.mark.parametrize("name", ["agg_hdfs", "agg_rocks_cl"])
def test_history_matches_spark_change_feed(spark, state_cps, unchanged, name):
    cp = unchanged(state_cps[name])
    last = max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    a = 1
    feed = change_feed(spark, cp, a, last)
    assert any(c[1] == "delete" for cs in feed.values() for c in cs), "the feed should hold evictions"
    watermarks = {}
    for b in range(a, last + 1):
        doc = json.loads((cp / "offsets" / str(b)).read_text().splitlines()[1])
        watermarks[b] = doc["batchWatermarkMs"]
    for kj, want in feed.items():
        h = key_history(str(cp), kj, a, last)
        got = sorted(((c.batch_id, c.change_type, [norm(v) for v in c.value] if c.value is not None else None)
                      for c in h.changes), key=lambda c: (c[0], c[1] != "delete"))
        assert got == want, kj
        assert all(c.watermark_ms == watermarks[c.batch_id] for c in h.changes)
        assert h.source == ("delta files" if name == "agg_hdfs" else "changelogs")


def test_history_by_comparing_versions_matches_the_statestore_per_batch(spark, state_cps, unchanged):
    cp = unchanged(state_cps["agg_rocks"])
    last = max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
    per_batch = {}
    for b in range(last + 1):
        for r in spark.read.format("statestore").option("batchId", b).load(str(cp)).collect():
            k = r["key"]
            kj = json.dumps({"window": {"start": norm(k["window"]["start"]), "end": norm(k["window"]["end"])}, "key": k["key"]})
            per_batch.setdefault(kj, {})[b] = [norm(v) for v in r["value"]]
    for kj, seen in per_batch.items():
        want, before = [], None
        for b in range(1, last + 1):
            now = seen.get(b)
            if b == 1:
                before = seen.get(0)
            if now != before:
                want.append((b, "update" if now is not None else "delete", now))
            before = now
        h = key_history(str(cp), kj, 1, last)
        assert h.source == "versions compared"
        assert [(c.batch_id, c.change_type, [norm(v) for v in c.value] if c.value is not None else None)
                for c in h.changes] == want, kj


def test_cli_key_value_history_and_errors(state_cps, unchanged):
    cp = unchanged(state_cps["agg_hdfs"])
    feed_key = {"window": {"start": "2026-01-01T00:00:00Z", "end": "2026-01-01T00:00:10Z"}, "key": "k1"}
    r = CliRunner().invoke(main, ["state", str(cp), "--key", json.dumps(feed_key), "--json", "--batch", "0"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    # the state's own value columns: the aggregation buffer (count, sum, sum and count of avg, max)
    names = [c["name"] for c in doc["value_columns"]]
    assert doc["found"] and doc["key"]["key"] == "k1" and doc["value"][names.index("count")] == 1
    assert len(doc["value"]) == len(names) == 5
    r = CliRunner().invoke(main, ["state", str(cp), "--key", json.dumps(feed_key), "--from-batch", "0"])
    assert r.exit_code == 0, r.output
    assert "update" in r.stdout and "delete" in r.stdout
    r = CliRunner().invoke(main, ["state", str(cp), "--key", '{"k": "user42"}'])
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert "\n" not in err and "window (struct<start:timestamp,end:timestamp>)" in err and "key (string)" in err
    r = CliRunner().invoke(main, ["state", "--help"])
    assert "--key" in r.stdout and "--from-batch" in r.stdout
    with pytest.raises(KeyUsageError):
        lookup_key(str(cp), json.dumps({**feed_key, "key": 5}))


def to_json(v):
    """A statestore key as --key JSON: timestamps as µs since the epoch, structs as objects."""
    if isinstance(v, dt.datetime):
        return norm(v)
    if hasattr(v, "asDict"):
        return {k: to_json(x) for k, x in v.asDict().items()}
    if isinstance(v, dt.date):
        return v.isoformat()
    return v


@pytest.mark.parametrize("name", ["agg_rocks_v2", "dedup", "dedup_ww", "pandas", "types"])
def test_every_key_of_other_operators_matches_spark(spark, state_cps, unchanged, name):
    cp = unchanged(state_cps[name])
    # Spark 4.2's reader cannot read checkpoint format v2 changelogs (N_<uuid>.changelog): the
    # same query over the same input in format v1 is the oracle there (test_state_oracle.py)
    oracle = state_cps["agg_rocks"] if name == "agg_rocks_v2" else cp
    # dropDuplicatesWithinWatermark's state is all expired after the last batch: batch 0 then
    batch = 0 if name == "dedup_ww" else None
    reader = spark.read.format("statestore")
    rows = (reader.option("batchId", batch) if batch is not None else reader).load(str(oracle)).collect()
    assert rows
    for r in rows:
        res = lookup_key(str(cp), json.dumps(to_json(r["key"])), batch=batch)
        assert res.target.partition == r["partition_id"], r["key"]
        assert res.value is not None and [norm(v) for v in res.value] == [norm(v) for v in r["value"]], r


@pytest.mark.parametrize("name, says", [("join", "stream-stream join state")])
def test_operators_not_covered_say_so_in_one_line(state_cps, unchanged, name, says):
    cp = unchanged(state_cps[name])
    r = CliRunner().invoke(main, ["state", str(cp), "--key", '{"key": "k1"}'])
    assert r.exit_code == 4, r.output
    assert says in r.stderr and r.stderr.count("\n") == 1
