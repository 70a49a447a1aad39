"""Checkpoints Spark writes in this test run for the checkpoint operations (diff, retention):
a small file source → (optionally windowed aggregation) → Parquet file sink query, run with
``availableNow`` one landed file per batch (``maxFilesPerTrigger`` 1)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

SCHEMA = "k STRING, v INT, ts TIMESTAMP"


class MiniQuery:
    """One query with its landing folder, checkpoint and sink folder under ``root``.
    ``land(n)`` adds n JSON files (4 rows each, event time 20 s apart per file); ``run()``
    runs every pending file, one batch each, and returns when the query has stopped."""

    def __init__(self, spark, root: Path, *, stateful: bool) -> None:
        self.spark, self.root, self.stateful = spark, root, stateful
        # The checkpoint lives inside the sink folder (Spark's file sink skips "_" names), so a
        # copy of the sink folder is a snapshot of both and the reader discovers the sink.
        self.landing, self.out = root / "in", root / "out"
        self.cp = self.out / "_checkpoint"
        self.landing.mkdir(parents=True, exist_ok=True)
        self.n = 0

    def land(self, n: int) -> list[Path]:
        paths = []
        for i in range(self.n, self.n + n):
            rows = [{"k": f"k{j % 3}", "v": i * 10 + j, "ts": f"2024-01-01T00:{(i * 20) // 60:02d}:{(i * 20) % 60:02d}"} for j in range(4)]
            tmp = self.landing / f".f{i:03d}.json.tmp"
            tmp.write_text("\n".join(json.dumps(r) for r in rows))
            final = self.landing / f"f{i:03d}.json"
            tmp.rename(final)
            paths.append(final)
        self.n += n
        return paths

    def run(self, confs: dict[str, str] | None = None) -> None:
        from pyspark.sql import functions as F

        with session_confs(self.spark, confs or {}):
            df = self.spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(str(self.landing))
            if self.stateful:
                df = df.withWatermark("ts", "30 seconds").groupBy(F.window("ts", "20 seconds"), "k").agg(F.count("*").alias("n"))
                df = df.select(F.col("window.start").alias("start"), "k", "n")
            q = (
                df.writeStream.option("checkpointLocation", str(self.cp))
                .outputMode("append")
                .trigger(availableNow=True)
                .format("parquet")
                .start(str(self.out))
            )
            q.awaitTermination(180)
            assert q.exception() is None, q.exception()


@contextlib.contextmanager
def session_confs(spark, confs: dict[str, str]):
    """Set session confs for the block and restore the previous values after it (the session
    is shared by the whole test run)."""
    old = {k: spark.conf.get(k, None) for k in confs}
    for k, v in confs.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


@pytest.fixture
def mini_query(spark, tmp_path):
    """A factory: ``mini_query(stateful=True)`` → a fresh :class:`MiniQuery` under tmp_path."""
    made = []

    def make(*, stateful: bool, name: str = "q") -> MiniQuery:
        q = MiniQuery(spark, tmp_path / name, stateful=stateful)
        made.append(q)
        return q

    return make
