"""Changed versions of one query for `streamwatch compat` tests: FUNCTION(spark) returns a
configured, not started DataStreamWriter. ``PATHS`` is filled in by the test (landing folders
a, b, c; sink folder out)."""

from __future__ import annotations

PATHS: dict[str, str] = {}
SCHEMA = "k STRING, v INT, ts TIMESTAMP"


def _src(spark, name: str, max_files: int = 1):
    return spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", max_files).json(PATHS[name])


def _build(spark, *, sources=("a", "b"), max_files=1, where=False, key_hash=False, aggs="count,sum", dedup=False,
           delay="30 seconds", path_key="out", mode="append", name=None):
    from pyspark.sql import functions as F

    df = _src(spark, sources[0], max_files)
    for s in sources[1:]:
        df = df.unionByName(_src(spark, s, max_files))
    if where:
        df = df.where(F.col("v") >= 0)
    df = df.withWatermark("ts", delay)
    if dedup:
        df = df.dropDuplicates(["k", "v", "ts"])
    key = F.hash("k").alias("k") if key_hash else F.col("k")
    fns = {"count": F.count("*").alias("n"), "sum": F.sum("v").alias("s"), "max": F.max("v").alias("m")}
    out = df.groupBy(F.window("ts", "20 seconds"), key).agg(*[fns[a] for a in aggs.split(",")])
    w = out.writeStream.format("parquet").option("path", PATHS[path_key]).outputMode(mode)
    return w.queryName(name) if name else w


def base(spark):
    return _build(spark)


def add_filter(spark):
    return _build(spark, where=True)


def key_type(spark):
    return _build(spark, key_hash=True)


def add_aggregate(spark):
    return _build(spark, aggs="count,sum,max")


def remove_aggregate(spark):
    return _build(spark, aggs="count")


def add_dedup(spark):
    return _build(spark, dedup=True)


def sink_path(spark):
    return _build(spark, path_key="out2")


def shuffle_partitions(spark):
    spark.conf.set("spark.sql.shuffle.partitions", "3")
    return _build(spark)


def watermark(spark):
    return _build(spark, delay="60 seconds")


def swap_sources(spark):
    return _build(spark, sources=("b", "a"))


def rocksdb(spark):
    spark.conf.set("spark.sql.streaming.stateStore.providerClass",
                   "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
    return _build(spark)


def output_mode(spark):
    return _build(spark, mode="update")


def rename(spark):
    return _build(spark, name="renamed_query")


def max_files(spark):
    return _build(spark, max_files=2)


def add_source(spark):
    return _build(spark, sources=("a", "b", "c"))


def not_a_writer(spark):
    return 42


def recover_query(spark):
    """The stateless file → Parquet query of the recover tests (PATHS recover_in/recover_out)."""
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(PATHS["recover_in"])
    return df.writeStream.format("parquet").option("path", PATHS["recover_out"]).outputMode("append")
