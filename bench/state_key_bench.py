"""Benchmark: one state key (``streamwatch state CP --key``, :func:`streamwatch.state.keys.lookup_key`,
no JVM) against Spark's state data source filtered on that key
(``spark.read.format("statestore").load(cp).where(key = …)``), on the same checkpoints.

Writes (in a temp folder, with a local[2] SparkSession, ``PARTITIONS`` shuffle partitions) a
``groupBy(key).agg(count, sum)`` (value: the aggregation buffer) over ``KEYS`` distinct keys — on the HDFS-backed store, on
RocksDB (a snapshot zip per version) and on RocksDB with changelog checkpointing (one batch:
version 1 is a changelog, no zip yet) — then, alternating the two readers for ``ROUNDS``
rounds per checkpoint, times reading one key's value (a different key each round, both
readers asked for the same one; each answer checked against the other):

* streamwatch: the key hashed to its partition (Spark's Murmur3 placement), then a RocksDB
  point lookup (snapshot zip + SSTs of that partition, rocksdict ``get``, changelogs after it
  filtered on the key — with no zip yet, that partition's changelogs alone) or, HDFS-backed,
  that partition's snapshot and deltas replayed;
* Spark: the state reader over every partition, filtered on the key, ``.collect()``.

Prints the median and min seconds per key and the ratio. The SparkSession's start (~6 s) is not
counted against Spark. ``KEYS`` and ``ROUNDS`` may be given as arguments.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.rounds import Spread, arm_order, print_ratio  # noqa: E402

KEYS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
PARTITIONS = 4
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


def write_checkpoint(spark, base: Path, provider: str, changelog: bool) -> Path:
    from pyspark.sql import functions as F

    src = base / "in"
    if not src.exists():
        (spark.range(KEYS).selectExpr("concat('user', id) AS key", "id AS v").repartition(2).write.parquet(str(src)))
    cp = base / f"cp-{provider.rsplit('.', 1)[-1]}{'-changelog' if changelog else ''}"
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", provider)
    spark.conf.set("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", str(changelog).lower())
    df = (spark.readStream.schema("key STRING, v BIGINT").parquet(str(src))
          .groupBy("key").agg(F.count("*").alias("n"), F.sum("v").alias("total")))
    q = (df.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
    return cp


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision
    from streamwatch.state.keys import lookup_key

    with tempfile.TemporaryDirectory(prefix="state-key-bench-") as tmp:
        base = Path(tmp)
        print(f"starting Spark and writing three checkpoints of {KEYS:,} state keys …", flush=True)
        spark, _ = create_session(SessionConfig(workspace=base / "ws", master="local[2]", ui=False,
                                                shuffle_partitions=PARTITIONS,
                                                table_format=TableFormatDecision("parquet", "bench")))
        try:
            t0 = time.perf_counter()
            cps = {"hdfs": write_checkpoint(spark, base, HDFS, False),
                   "rocksdb": write_checkpoint(spark, base, ROCKSDB, False),
                   "rocksdb+changelog": write_checkpoint(spark, base, ROCKSDB, True)}
            print(f"  written in {time.perf_counter() - t0:.0f} s", flush=True)

            def ours(cp: Path, key: str):
                res = lookup_key(str(cp), json.dumps({"key": key}))
                return res.value

            def theirs(cp: Path, key: str):
                rows = spark.read.format("statestore").load(str(cp)).where(f"key.key = '{key}'").collect()
                return tuple(rows[0]["value"]) if rows else None

            for name, cp in cps.items():
                times: dict[str, list[float]] = {"streamwatch --key": [], "statestore .where(key)": []}
                for r in range(ROUNDS):
                    key = f"user{(r * 7_919_993) % KEYS}"
                    answers = []
                    order = (("streamwatch --key", ours), ("statestore .where(key)", theirs))
                    for label, fn in arm_order(order, r):
                        secs, got = timed(partial(fn, cp, key))
                        times[label].append(secs)
                        answers.append(got)
                    assert answers[0] == answers[1] and answers[0] is not None, (key, answers)
                    print(f"  {name} round {r + 1}/{ROUNDS}: {key} → value {answers[0]}", flush=True)
                print(f"\n{name}: one key of {KEYS:,}, {PARTITIONS} partitions, {ROUNDS} alternated rounds")
                for k, v in times.items():
                    s = Spread.of(v)
                    print(f"  {k:24s} median {s.median:.3f} s   min {s.min:.3f} s")
                print_ratio("statestore / streamwatch", times["statestore .where(key)"], times["streamwatch --key"])
        finally:
            spark.stop()


if __name__ == "__main__":
    main()
