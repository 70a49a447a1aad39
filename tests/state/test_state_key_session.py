"""``streamwatch state CP --key`` on session window state (``streamwatch.state.keygroups``),
against Spark itself on session window aggregations written in this run (grouping key of two
columns, 5 shuffle partitions), HDFS-backed, RocksDB with changelogs and RocksDB without:

- placement and lookup: for every batch, every grouping key in Spark's ``statestore`` reader
  (``batchId``) is placed in the ``partition_id`` the reader reports and in Spark's own
  ``pmod(hash(key, ik), 5)``, and its entries are exactly the reader's rows under that key
  (``key.sessionStartTime`` and the value row);
- history: each grouping key's changes over the batches are the rows of Spark's change feed
  (``readChangeFeed``) under that key — HDFS deltas and RocksDB changelogs — with
  ``offsets/N``'s watermark beside each; without changelogs, the differences of the reader's
  successive batches;
- the CLI's JSON and text show the same, exit 1 for a key with no session, 2 for a key that
  does not fit the grouping columns.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main
from streamwatch.state.keys import key_history, lookup_key
from tests.helpers import state_queries as Q

pytestmark = pytest.mark.spark

N_PARTS = 5
KEYS = ["", "a", "user42", "héllo", "漢字キー", "x" * 13]


def norm(v):
    """Comparable form: timestamps → epoch µs (Spark gives naive local datetimes, we give
    aware UTC ones), structs → dicts, rows → lists."""
    if isinstance(v, dt.datetime):
        return round(v.timestamp() * 1_000_000)
    if hasattr(v, "asDict"):
        return {k: norm(x) for k, x in v.asDict().items()}
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (tuple, list)):
        return [norm(x) for x in v]
    return v


def values(row) -> list | None:
    """A Spark value row as the list of its (normalised) field values."""
    return None if row is None else [norm(x) for x in row]


def write_sessions(spark, root: Path, provider: str, changelog: bool) -> Path:
    """Session windows (3 s gap) by (key string, ik int), counted, 10-second watermark,
    4 batches of events 0–3 s apart, so sessions grow, close and are evicted."""
    from pyspark.sql import functions as F

    batches = [[(name, 10 * i + j, j % 2, 0.0) for j in range(4) for name in KEYS] for i in range(4)]
    src = Q.land_events(root / "in", batches)
    with Q.confs(spark, provider, changelog=changelog, extra={"spark.sql.shuffle.partitions": str(N_PARTS)}):
        df = (Q.stream(spark, src).withWatermark("ts", "10 seconds").withColumn("ik", F.col("v").cast("int"))
              .groupBy(F.session_window("ts", "3 seconds"), "key", "ik")
              .agg(F.count("*").alias("n"), F.max("ts").alias("last_ts")))
        return Q.run(df, root / "cp", "append")


@pytest.fixture(scope="module")
def session_cps(spark, tmp_path_factory):
    """name (``hdfs``, ``rocksdb_cl``, ``rocksdb``) → checkpoint, written on first use."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            made[name] = write_sessions(spark, tmp_path_factory.mktemp(f"key-session-{name}"),
                                        Q.HDFS if name == "hdfs" else Q.ROCKSDB, name == "rocksdb_cl")
        return made[name]
    return get


@pytest.fixture(params=["hdfs", "rocksdb_cl", "rocksdb"])
def session_cp(request, session_cps):
    return request.param, session_cps(request.param)


def last_batch(cp: Path) -> int:
    return max(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())


def group_key(k) -> str:
    return json.dumps({"key": k["key"], "ik": k["ik"]}, ensure_ascii=False)


def test_every_key_of_every_batch_is_placed_and_read_as_spark_does(spark, session_cp, unchanged):
    _name, cp = session_cp
    cp = unchanged(cp)
    seen_partitions = set()
    for b in range(last_batch(cp) + 1):
        df = spark.read.format("statestore").option("batchId", b).load(str(cp)).selectExpr(
            "key", "value", "partition_id", f"pmod(hash(key.key, key.ik), {N_PARTS}) AS spark_pmod")
        want: dict[str, list] = {}
        for r in df.collect():
            assert r["partition_id"] == r["spark_pmod"]
            want.setdefault(group_key(r["key"]), []).append(
                (r["partition_id"], norm(r["key"]["sessionStartTime"]), values(r["value"])))
        assert want, f"batch {b}: Spark's reader shows no session"
        for kj, rows in want.items():
            res = lookup_key(str(cp), kj, batch=b)
            assert res.found and res.value is None
            assert {p for p, _s, _v in rows} == {res.target.partition}, kj
            seen_partitions.add(res.target.partition)
            got = sorted((norm(e.sub_key[0]), norm(e.value)) for e in res.entries)
            assert got == sorted(((s, v) for _p, s, v in rows), key=lambda x: x[0]), (b, kj)
            assert [f.name for f in res.target.entry_key.fields] == ["sessionStartTime"]
    assert len(seen_partitions) > 1


def test_a_grouping_key_with_no_session_is_not_found(session_cp, unchanged):
    _name, cp = session_cp
    cp = unchanged(cp)
    res = lookup_key(str(cp), json.dumps({"key": "nobody", "ik": 0}))
    assert not res.found and res.entries == ()


def spark_changes(spark, cp: Path, a: int, b: int) -> dict[str, list]:
    rows = (spark.read.format("statestore").option("readChangeFeed", True).option("changeStartBatchId", a)
            .option("changeEndBatchId", b).load(str(cp)).collect())
    out: dict[str, list] = {}
    for r in rows:
        out.setdefault(group_key(r["key"]), []).append(
            (r["batch_id"], r["change_type"], norm(r["key"]["sessionStartTime"]), values(r["value"])))
    return out


def per_batch_diff(spark, cp: Path, a: int, b: int) -> dict[str, list]:
    """What changed between the reader's batches a-1 … b: a session gone is a delete, a new
    or changed one an update."""
    def at(batch):
        if batch < 0:
            return {}
        return {(group_key(r["key"]), norm(r["key"]["sessionStartTime"])): values(r["value"])
                for r in spark.read.format("statestore").option("batchId", batch).load(str(cp)).collect()}
    out: dict[str, list] = {}
    before = at(a - 1)
    for batch in range(a, b + 1):
        now = at(batch)
        for (kj, s) in before.keys() - now.keys():
            out.setdefault(kj, []).append((batch, "delete", s, None))
        for (kj, s), v in now.items():
            if before.get((kj, s)) != v:
                out.setdefault(kj, []).append((batch, "update", s, v))
        before = now
    return out


def test_history_of_every_key_matches_spark(spark, session_cp, unchanged):
    name, cp = session_cp
    cp = unchanged(cp)
    a, b = 1, last_batch(cp)
    want = per_batch_diff(spark, cp, a, b) if name == "rocksdb" else spark_changes(spark, cp, a, b)
    assert any(c[1] == "delete" for cs in want.values() for c in cs), "sessions should be evicted in the range"
    watermarks = {n: json.loads((cp / "offsets" / str(n)).read_text().splitlines()[1])["batchWatermarkMs"]
                  for n in range(a, b + 1)}
    for kj, changes in want.items():
        h = key_history(str(cp), kj, a, b)
        assert h.source == {"hdfs": "delta files", "rocksdb_cl": "changelogs", "rocksdb": "versions compared"}[name]
        got = [(c.batch_id, c.change_type, norm(c.sub_key[0]), norm(c.value) if c.value is not None else None)
               for c in h.changes]
        assert sorted(got, key=repr) == sorted(changes, key=repr), kj
        assert all(c.watermark_ms == watermarks[c.batch_id] for c in h.changes)


def test_cli_session_key(spark, session_cps, unchanged):
    cp = unchanged(session_cps("hdfs"))
    rows = [r for r in spark.read.format("statestore").option("batchId", 1).load(str(cp)).collect()
            if r["key"]["key"] == "user42" and r["key"]["ik"] == 1]
    assert rows
    key = json.dumps({"key": "user42", "ik": 1})
    r = CliRunner().invoke(main, ["state", str(cp), "--key", key, "--json", "--batch", "1"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["found"] and doc["key"] == {"key": "user42", "ik": 1} and doc["partition"] == rows[0]["partition_id"]
    assert [c["name"] for c in doc["entry_key_columns"]] == ["sessionStartTime"]
    names = [c["name"] for c in doc["value_columns"]]
    # the value is the aggregation buffer, Spark's value columns by name
    assert names == list(rows[0]["value"].asDict())
    got = sorted((e["value"][names.index("count")], e["value"][names.index("key")]) for e in doc["entries"])
    assert got == sorted((row["value"]["count"], "user42") for row in rows)
    assert len(doc["entries"]) == len(rows)
    r = CliRunner().invoke(main, ["state", str(cp), "--key", key, "--batch", "1"])
    assert r.exit_code == 0 and r.stdout.count("entry: sessionStartTime=") == len(rows), r.output
    r = CliRunner().invoke(main, ["state", str(cp), "--key", key, "--from-batch", "0", "--json"])
    assert r.exit_code == 0, r.output
    hist = json.loads(r.stdout)
    assert {c["change_type"] for c in hist["changes"]} == {"update", "delete"}
    assert all(set(c["entry_key"]) == {"sessionStartTime"} for c in hist["changes"])
    r = CliRunner().invoke(main, ["state", str(cp), "--key", json.dumps({"key": "nobody", "ik": 0})])
    assert r.exit_code == 1 and "not in the store" in r.stdout
    r = CliRunner().invoke(main, ["state", str(cp), "--key", '{"key": "user42"}'])
    assert r.exit_code == 2
    assert "missing ik" in r.stderr and "key (string), ik (int)" in r.stderr and "sessionStartTime" not in r.stderr
    assert r.stderr.count("\n") == 1
