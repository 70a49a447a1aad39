"""Write the version matrix: small real checkpoints from every pyspark users run, with the facts
that Spark itself reports about them — the generator of ``tests/fixtures/matrix/<version>/``.

Two modes:

* ``build`` (``make matrix``): one venv per pyspark version under ``.matrix/`` (pip's cache
  keeps this quick), then ``write`` run with each. Not part of CI: the output is committed.
* ``write OUT``: run by a venv's own python; writes every case that pyspark supports into
  ``OUT/<case>/`` and the facts into ``OUT/facts.json``.

Every case runs one stateful (or named-source) query to the end with ``availableNow`` over
files landed beforehand, one file per micro-batch, 2 shuffle partitions (kilobytes per
checkpoint). The queries are those of ``tests/helpers/state_queries.py`` and
``tests/state/tws_queries.py``; the confs below choose the store, changelog checkpointing,
checkpoint format, join state format, named sources and sink names.

Facts per case (``facts.json`` → ``cases[name]``), all from Spark:

* ``progress``: per executed batch (an ``addBatch`` duration) its ``batchId`` and each state
  operator's ``operatorName``, ``numRowsTotal``, ``numRowsUpdated``, ``numRowsRemoved``,
  ``numShufflePartitions``, ``numStateStoreInstances``, and the event-time watermark;
* ``metadata``: the ``state-metadata`` source's rows (Spark 4.0+), or the error it raised;
* ``stores``: per (operator, store or join side or state variable) the ``statestore`` source's
  rows at the last batch (key, value, partition_id; timestamps as epoch µs, decimals as text,
  bytes as hex) or the error Spark raised — Spark 4.0+;
* ``repartition`` (4.2+): what ``streams.repartition`` did (the error class when it failed), and
  what a restart of a copy of the repartitioned checkpoint did (batches run, or its error).

The facts are gathered by ``scripts/matrix_facts.py``; this module holds the cases and the
driver. Run ``python scripts/version_matrix.py build`` (all versions) or ``build 4.3.0 3.5.7``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# RECORDER and _err are re-exported for scripts/restart_matrix.py, norm for the matrix tests' references
from scripts.matrix_facts import RECORDER, Recorder, _err, metadata_facts, norm, progress_facts, store_facts  # noqa: E402, F401
from scripts.matrix_sources import kafka_jars, source_cases  # noqa: E402

VERSIONS = ("3.5.7", "4.0.5", "4.1.4", "4.2.0", "4.3.0")
OUT = ROOT / "tests" / "fixtures" / "matrix"
VENVS = ROOT / ".matrix"
PACKAGES = ("pandas<3", "numpy<2", "pyarrow<20", "grpcio", "grpcio-status", "protobuf", "googleapis-common-protos", "zstandard")


def _v(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(".")[:3])


# --------------------------------------------------------------------------- build (driver)

def build(versions: list[str]) -> None:
    from streamwatch.spark.kafka_broker import KafkaBrokerError, LocalKafka

    try:
        broker: LocalKafka | None = LocalKafka.start()
    except KafkaBrokerError as e:
        print(f"no Kafka broker, the kafka case is left out: {e}", flush=True)
        broker = None
    try:
        for version in versions:
            _build_one(version, broker.bootstrap if broker is not None else None)
    finally:
        if broker is not None:
            broker.stop()


def _build_one(version: str, bootstrap: str | None) -> None:
    venv = VENVS / f"venv-{version}"
    py = venv / "bin" / "python"
    if not py.exists():
        print(f"[{version}] making {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "--progress-bar", "off", f"pyspark=={version}", *PACKAGES],
                       check=True)
    out = OUT / version
    print(f"[{version}] writing {out}", flush=True)
    env = {**os.environ, "TZ": "UTC", "PYSPARK_PYTHON": str(py), "PYTHONPATH": str(ROOT)}
    jars = kafka_jars(version)
    if bootstrap is not None and isinstance(jars, list):
        env.update(MATRIX_KAFKA=bootstrap, MATRIX_KAFKA_JARS=",".join(map(str, jars)))
    else:
        env.pop("MATRIX_KAFKA", None)
        env["MATRIX_KAFKA_LEFT_OUT"] = jars if isinstance(jars, str) else "no Kafka broker"
        print(f"[{version}] the kafka case is left out: {jars if isinstance(jars, str) else 'no broker'}", flush=True)
    subprocess.run([str(py), str(Path(__file__).resolve()), "write", str(out)], check=True, env=env)


# --------------------------------------------------------------------------- write (in a venv)

def case_list(version: tuple[int, ...]) -> dict[str, tuple[Callable[..., Path], dict[str, Any]]]:
    from tests.helpers import state_queries as Q

    cases: dict[str, tuple[Callable[..., Path], dict[str, Any]]] = {
        "agg_hdfs": (Q.write_aggregation, {}),
        "agg_rocks": (Q.write_aggregation, {"provider": Q.ROCKSDB}),
        "agg_rocks_cl": (Q.write_aggregation, {"provider": Q.ROCKSDB, "changelog": True}),
        "dedup": (Q.write_dedup, {}),
        "dedup_ww": (Q.write_dedup, {"provider": Q.ROCKSDB, "within_watermark": True, "changelog": True}),
        "session": (Q.write_session_window, {"provider": Q.ROCKSDB}),
        "join": (Q.write_join, {}),
        "join_rocks": (Q.write_join, {"provider": Q.ROCKSDB}),
        "pandas": (Q.write_pandas_state, {}),
        "bounded": (Q.write_bounded, {}),
    }
    if version >= (4, 0):
        from tests.state import tws_queries as T

        cases["agg_rocks_v2"] = (Q.write_aggregation, {"provider": Q.ROCKSDB, "changelog": True, "format_version": 2})
        cases["tws"] = (T.write_tws, {})
        cases["tws_avro"] = (T.write_tws, {"encoding": "avro"})
    if version >= (4, 1):
        cases["join_v3"] = (Q.write_join, {"provider": Q.ROCKSDB, "extra": {"spark.sql.streaming.join.stateFormatVersion": "3"}})
    if version >= (4, 2):
        cases["join_v4"] = (Q.write_join, {"provider": Q.ROCKSDB, "extra": {
            "spark.sql.streaming.join.stateFormatVersion": "4", "spark.sql.streaming.join.stateFormatV4.enabled": "true"}})
        cases["named"] = (write_named, {})
        cases["sink_named_v2"] = (write_sink_named, {"provider": Q.ROCKSDB, "changelog": True, "format_version": 2})
    cases.update(source_cases(version))
    return cases


SINK_NAME = "totals"
#: Whether ``write_named`` runs the query with an unnamed sink where this Spark cannot name one
#: (writing fixtures); a restart (scripts/restart_matrix.py) reports the error instead.
UNNAMED_FALLBACK = True


def write_named(spark: Any, root: Path, **_: Any) -> Path:
    """A union of two named JSON file sources (``DataStreamReader.name``, offsets log v2)
    counted by key; the sink named too where this Spark can (commit log v3)."""
    from tests.helpers import state_queries as Q

    a = Q.land_events(root / "in_a", Q.default_batches(3, 3))
    b = Q.land_events(root / "in_b", Q.default_batches(2, 2))
    extra = {"spark.sql.streaming.queryEvolution.enableSourceEvolution": "true",
             "spark.sql.streaming.queryEvolution.enableSinkEvolution": "true",
             "spark.sql.streaming.offsetLog.formatVersion": "2"}
    with Q.confs(spark, Q.HDFS, extra=extra):
        da = spark.readStream.schema(Q.EVENT_SCHEMA).option("maxFilesPerTrigger", 1).name("orders").json(str(a))
        db = spark.readStream.schema(Q.EVENT_SCHEMA).option("maxFilesPerTrigger", 1).name("refunds").json(str(b))
        df = da.unionByName(db).groupBy("key").count()
        try:
            return RECORDER.run(df, root / "cp", sink_name=SINK_NAME)
        except Exception:  # noqa: BLE001 - no sink names in this Spark: sources named only
            if not UNNAMED_FALLBACK:
                raise
            shutil.rmtree(root / "cp", ignore_errors=True)
            return Q.run(df, root / "cp")


def write_sink_named(spark: Any, root: Path, provider: str, **kw: Any) -> Path:
    """A running count by key with its sink named (commit log v3 beside state checkpoint ids
    when ``format_version`` is 2)."""
    from tests.helpers import state_queries as Q

    src = Q.land_events(root / "in", Q.default_batches(3, 3))
    extra = {"spark.sql.streaming.queryEvolution.enableSinkEvolution": "true"}
    with Q.confs(spark, provider, extra=extra, **kw):
        return RECORDER.run(Q.stream(spark, src).groupBy("key").count(), root / "cp", sink_name=SINK_NAME)


def repartition_facts(spark: Any, out: Path, version: tuple[int, ...], rec: Recorder) -> dict[str, Any]:
    """Offline repartition (Spark 4.2+) of an HDFS and a RocksDB aggregation from 2 to 3
    partitions, then a restart of a copy of each with one more input file."""
    from tests.helpers import state_queries as Q

    facts: dict[str, Any] = {}
    if version < (4, 2):
        return facts
    for name, provider in (("repart_hdfs", Q.HDFS), ("repart_rocks", Q.ROCKSDB)):
        root = out / name
        rec.progress = []
        cp = Q.write_aggregation(spark, root, provider)
        entry: dict[str, Any] = {"checkpoint": f"{name}/cp", "progress": progress_facts(rec.progress)}
        try:
            spark._streamingCheckpointManager.repartition(str(cp), 3)
            entry["repartition"] = "done"
        except Exception as e:  # noqa: BLE001 - the error is the fact
            entry["repartition"] = _err(e)
        spark._jvm.org.apache.spark.sql.execution.streaming.state.StateStore.stop()
        entry["offsets"] = sorted(int(p.name) for p in (cp / "offsets").iterdir() if p.name.isdigit())
        entry["commits"] = sorted(int(p.name) for p in (cp / "commits").iterdir() if p.name.isdigit())
        entry["metadata"] = metadata_facts(spark, cp)
        # a restart of a copy, with one more file landed: what Spark does next
        copy = root / "restart"
        shutil.copytree(cp, copy / "cp")
        shutil.copytree(root / "in", copy / "in")
        Q.land_events(copy / "in", Q.default_batches(7))
        rec.progress = []
        try:
            from pyspark.sql import functions as F

            with Q.confs(spark, provider):
                df = (Q.stream(spark, copy / "in").withWatermark("ts", "5 seconds")
                      .groupBy(F.window("ts", "10 seconds"), "key")
                      .agg(F.count("*").alias("n"), F.sum("v").alias("total"), F.avg("d").alias("mean"),
                           F.max("ts").alias("last_ts")))
                Q.run(df, copy / "cp")
            entry["restart"] = {"batches": [p["batchId"] for p in progress_facts(rec.progress)],
                                "progress": progress_facts(rec.progress)}
        except Exception as e:  # noqa: BLE001 - the error is the fact
            entry["restart"] = {"error": _err(e)}
        shutil.rmtree(copy)
        facts[name] = entry
    return facts


def write(out: Path) -> None:
    import pyspark
    from pyspark.sql import SparkSession

    from tests.helpers import state_queries as Q

    version = _v(pyspark.__version__)
    only = os.environ.get("MATRIX_CASES", "").split(",") if os.environ.get("MATRIX_CASES") else None
    facts: dict[str, Any] = {"spark": pyspark.__version__, "cases": {}}
    if only and (out / "facts.json").is_file():  # some cases again: the others' facts kept
        facts = json.loads((out / "facts.json").read_text())
        for name in only:
            shutil.rmtree(out / name, ignore_errors=True)
            facts["cases"].pop(name, None)
    elif out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    facts.pop("left_out", None)
    if not os.environ.get("MATRIX_KAFKA"):
        facts["left_out"] = {"kafka": os.environ.get("MATRIX_KAFKA_LEFT_OUT", "no Kafka broker")}
    builder = SparkSession.builder
    if os.environ.get("MATRIX_KAFKA_JARS"):
        builder = builder.config("spark.jars", os.environ["MATRIX_KAFKA_JARS"])
    spark = (builder.master("local[2]").appName("streamwatch-matrix")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.streaming.stateStore.maintenanceInterval", "600s")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    rec = RECORDER
    rec.wrap(Q)
    for name, (fn, kw) in case_list(version).items():
        if only and name not in only:
            continue
        print(f"  {pyspark.__version__} {name}", flush=True)
        rec.progress = []
        try:
            cp = fn(spark, out / name, **kw)
        except Exception as e:  # noqa: BLE001 - an unsupported case is a fact too
            facts["cases"][name] = {"error": _err(e)}
            traceback.print_exc()
            continue
        entry: dict[str, Any] = {"checkpoint": f"{name}/cp", "options": {k: v for k, v in kw.items() if k != "provider"},
                                 "provider": kw.get("provider", Q.HDFS).rsplit(".", 1)[-1],
                                 "progress": progress_facts(rec.progress)}
        if version >= (4, 0):
            entry["metadata"] = metadata_facts(spark, cp)
            entry["stores"] = store_facts(spark, cp, entry["metadata"])
        facts["cases"][name] = entry
    if not only or any(n.startswith("repart") for n in only):
        facts["cases"].update(repartition_facts(spark, out, version, rec))
    for junk in out.rglob("*.crc"):
        junk.unlink()
    (out / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    spark.stop()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "write":
        write(Path(sys.argv[2]).resolve())
    elif len(sys.argv) >= 2 and sys.argv[1] == "build":
        build(sys.argv[2:] or list(VERSIONS))
    else:
        sys.exit(__doc__)
