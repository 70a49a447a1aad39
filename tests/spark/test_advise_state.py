"""`streamwatch advise`'s ``advise-state-store`` against Spark itself: a real stateful query
(groupBy count over a file source, one file a micro-batch) on the shared local session, started
on each state store configuration (set in the session before ``start()``, restored after).
Spark's own account: the provider class it wrote into ``offsets/N`` conf, the ``N.delta``/
``N.zip``/``N.changelog`` files it wrote under ``state/`` (names and sizes from the file
system), and ``stateOperators`` of its ``recentProgress``. The rule must name the provider
Spark wrote, give Spark's numbers as evidence, and fire where the files say RocksDB uploads
a snapshot every commit."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.cli import main

pytestmark = pytest.mark.spark

PROVIDER = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
FILES = 3


@contextmanager
def _session_conf(spark, conf: dict[str, str]) -> Iterator[None]:
    before = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _run(spark, tmp_path: Path, conf: dict[str, str], files: range = range(FILES)) -> tuple[Path, list[dict]]:
    """The query on ``conf`` after landing ``files`` (50 new keys each), recorded; (its
    checkpoint, its stateful progress from Spark)."""
    from pyspark.sql import functions as F

    import streamwatch

    src, cp = tmp_path / "in", tmp_path / "cp"
    src.mkdir(exist_ok=True)
    for i in files:
        (src / f"f{i}.csv").write_text("".join(f"k{i}-{j}\n" for j in range(50)))
    with _session_conf(spark, {"spark.sql.shuffle.partitions": "2", **conf}), \
            streamwatch.record(spark, tmp_path / "events.jsonl"):
        q = (spark.readStream.schema("key STRING").option("maxFilesPerTrigger", 1).csv(str(src))
             .groupBy("key").agg(F.count("*").alias("n"))
             .writeStream.format("noop").outputMode("update").option("checkpointLocation", str(cp))
             .trigger(availableNow=True).start())
        try:
            assert q.awaitTermination(180), "the availableNow query did not finish in 180 s"
        finally:
            q.stop()
    return cp, [p for p in q.recentProgress if p["stateOperators"]]


def _advise(cp: Path, *args: str) -> dict:
    r = CliRunner().invoke(main, ["advise", str(cp), *args, "--json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return next(f for f in json.loads(r.stdout)["findings"] if f["code"] == "advise-state-store")


def _offsets_provider(cp: Path) -> tuple[int, str]:
    """(the newest offsets/N, the provider class Spark wrote into its conf)."""
    n = max(int(p.name) for p in (cp / "offsets").iterdir() if p.name.isdecimal())
    return n, json.loads((cp / "offsets" / str(n)).read_text().splitlines()[1])["conf"][PROVIDER]


def _state_files(cp: Path, suffix: str) -> list[Path]:
    return [p for p in (cp / "state" / "0").glob(f"*/*{suffix}") if p.name[0].isdigit()]


def _ev(a: dict) -> dict[str, int | float]:
    return {e["what"]: e["value"] for e in a["evidence"]}


def test_hdfs_state_is_judged_on_sparks_memory_used_and_files(spark, tmp_path):
    cp, progress = _run(spark, tmp_path, {PROVIDER: HDFS})
    n, cls = _offsets_provider(cp)
    assert cls == HDFS and len(progress) == FILES
    last = progress[-1]["stateOperators"]
    a = _advise(cp, "--recording", str(tmp_path / "events.jsonl"))
    assert a["setting"] == PROVIDER and f"HDFSBackedStateStoreProvider (offsets/{n} conf)" in a["summary"]
    assert _ev(a)["state memory (memoryUsedBytes)"] == sum(o["memoryUsedBytes"] for o in last)
    assert _ev(a)["state rows (numRowsTotal)"] == sum(o["numRowsTotal"] for o in last) == FILES * 50
    assert _ev(a)["newest version's map (stateOnCurrentVersionSizeBytes)"] == sum(
        o["customMetrics"]["stateOnCurrentVersionSizeBytes"] for o in last)
    assert _ev(a)["median state commit time (commitTimeMs)"] == int(statistics.median(
        sum(o["commitTimeMs"] for o in p["stateOperators"]) for p in progress))
    assert (a["verdict"], a["confidence"]) == ("keep", "measured")  # 150 rows: far under 64 MiB

    a = _advise(cp)  # no progress: the files Spark wrote give a lower bound only
    deltas = _state_files(cp, ".delta")
    assert not _state_files(cp, ".snapshot")  # no maintenance ran: the newest version loads from every delta
    assert _ev(a)["files to load the newest version"] == sum(p.stat().st_size for p in deltas)
    assert (a["verdict"], a["confidence"]) == ("unknown", "unknown") and "memoryUsedBytes" in a["needs"]


@pytest.mark.parametrize(("changelog", "verdict"), [("false", "change"), ("true", "keep")])
def test_rocksdb_changelog_checkpointing_is_read_off_the_files_spark_wrote(spark, tmp_path, changelog, verdict):
    cp, progress = _run(spark, tmp_path, {PROVIDER: ROCKSDB, CHANGELOG: changelog})
    n, cls = _offsets_provider(cp)
    assert cls == ROCKSDB and CHANGELOG not in json.loads((cp / "offsets" / str(n)).read_text().splitlines()[1])["conf"]
    zips, changelogs = _state_files(cp, ".zip"), _state_files(cp, ".changelog")
    assert bool(changelogs) is (changelog == "true")  # Spark's own account of the mode it ran
    a = _advise(cp, "--recording", str(tmp_path / "events.jsonl"))
    assert (a["setting"], a["verdict"]) == (CHANGELOG, verdict)
    assert f"RocksDBStateStoreProvider (offsets/{n} conf)" in a["summary"]
    versions = {(p.parent.name, p.name.split(".")[0]) for p in zips + changelogs}
    assert a["evidence"][-1]["unit"] == f"of {len(versions)} versions"
    assert _ev(a)["state versions uploaded as a full snapshot (N.zip)"] == len(zips)
    assert _ev(a)["median state commit time (commitTimeMs)"] == int(statistics.median(
        sum(o["commitTimeMs"] for o in p["stateOperators"]) for p in progress))
    if verdict == "change":
        assert a["confidence"] == "measured" and f"{CHANGELOG}=true" in a["action"]
        assert _ev(a)["median bytes uploaded at commit (rocksdbBytesCopied)"] == int(statistics.median(
            sum(o["customMetrics"]["rocksdbBytesCopied"] for o in p["stateOperators"]) for p in progress))
        # the action: the same checkpoint restarted with changelog checkpointing on
        _, after = _run(spark, tmp_path, {PROVIDER: ROCKSDB, CHANGELOG: "true"}, range(FILES, FILES + 1))
        assert sum(o["numRowsTotal"] for o in after[-1]["stateOperators"]) == (FILES + 1) * 50  # state kept
        assert _state_files(cp, ".changelog")  # Spark now writes changelogs
    else:
        assert (a["confidence"], a["action"]) == ("measured", None)
