"""Version-matrix cases for sources other than files (scripts/version_matrix.py): the rate and
rate-micro-batch sources, and Kafka where the connector for that Spark is in the local Maven
repository. Each case runs its query to the end with ``availableNow`` several times (one
micro-batch or more per run) so the offsets log holds offsets that advanced; the facts are the
progress Spark reported (its ``sources[].endOffset`` and ``numInputRows`` per batch).

Kafka needs a broker: ``build`` (the project venv) starts one on loopback with
:class:`streamwatch.spark.kafka_broker.LocalKafka` and hands each matrix venv its address
(``MATRIX_KAFKA``) and the connector's jars (``MATRIX_KAFKA_JARS``, found by
:func:`kafka_jars`); the records are written by Spark's own batch Kafka writer.
Runs inside a matrix venv's pyspark; imports none of it itself.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from scripts.matrix_facts import RECORDER

M2 = Path.home() / ".m2" / "repository"
#: ``kafka-clients`` per Spark line (Spark's own parent POM) and ``commons-pool2``, where the
#: connector's POM does not pin them.
KAFKA_CLIENTS = {"3.5": "3.4.1", "4.0": "3.9.1", "4.1": "3.9.1", "4.2": "3.9.2", "4.3": "3.9.2"}
POOL2 = "2.11.1"
RUNS = 3
ROWS_PER_RUN = 10


def kafka_jars(version: str) -> list[Path] | str:
    """The jars Spark ``version``'s Kafka source needs, from ``~/.m2``; or the reason they are
    absent (Maven did not serve that connector here)."""
    scala = "2.12" if version.startswith("3.") else "2.13"
    line = ".".join(version.split(".")[:2])
    want = [_connector(a, scala, version) for a in ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10")]
    pom = want[0].with_suffix(".pom").read_text() if want[0].with_suffix(".pom").is_file() else ""
    clients = _pinned(pom, "kafka-clients") or KAFKA_CLIENTS.get(line, "3.9.2")
    pool2 = _pinned(pom, "commons-pool2") or POOL2
    want.append(M2 / "org/apache/kafka/kafka-clients" / clients / f"kafka-clients-{clients}.jar")
    want.append(M2 / "org/apache/commons/commons-pool2" / pool2 / f"commons-pool2-{pool2}.jar")
    missing = [p.name for p in want if not p.is_file()]
    return f"not in ~/.m2 (not served by Maven here): {', '.join(missing)}" if missing else want


def _connector(artifact: str, scala: str, version: str) -> Path:
    """The connector jar of Spark ``version``, else of the newest other patch release of the
    same line that Maven served (a connector is built against its line's APIs)."""
    folder = M2 / "org/apache/spark" / f"{artifact}_{scala}"
    exact = folder / version / f"{artifact}_{scala}-{version}.jar"
    line = version.rsplit(".", 1)[0] + "."
    patches = sorted((p for p in folder.glob(f"{line}*/{artifact}_{scala}-{line}*.jar")),
                     key=lambda p: tuple(int(x) for x in p.parent.name.split(".")))
    return exact if exact.is_file() or not patches else patches[-1]


def _pinned(pom: str, artifact: str) -> str | None:
    """The version the connector's POM pins for dependency ``artifact`` (None if not literal)."""
    m = re.search(rf"<artifactId>{re.escape(artifact)}</artifactId>\s*<version>([0-9][^<$]*)</version>", pom)
    return m[1] if m else None


def _keyed_count(df: Any) -> Any:
    return df.selectExpr("CAST(value % 3 AS STRING) AS key").groupBy("key").count()


def write_rate_micro_batch(spark: Any, root: Path, **_: Any) -> Path:
    """``rate-micro-batch`` (``{"offset": N, "timestamp": ms}`` offsets): 10 rows a batch from
    timestamp 0, one batch per ``availableNow`` run, counted by ``value % 3``."""
    df = (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", ROWS_PER_RUN)
          .option("startTimestamp", 0).option("advanceMillisPerBatch", 1000).load())
    for _ in range(RUNS):
        RECORDER.run(_keyed_count(df), root / "cp")
    return root / "cp"


def write_rate(spark: Any, root: Path, **_: Any) -> Path:
    """``rate`` (a LongOffset: seconds since the query started): each ``availableNow`` run
    reads what the elapsed seconds allow (wall-clock dependent: the facts say what it read)."""
    df = spark.readStream.format("rate").option("rowsPerSecond", ROWS_PER_RUN).load()
    for _ in range(RUNS):
        RECORDER.run(_keyed_count(df), root / "cp")
    return root / "cp"


def write_kafka(spark: Any, root: Path, **_: Any) -> Path:
    """A Kafka topic of 3 partitions (the broker's default): 10 records written before each of
    3 ``availableNow`` runs (at most 10 offsets a batch), counted by key."""
    bootstrap = os.environ["MATRIX_KAFKA"]
    topic = "matrix_" + spark.version.replace(".", "_")
    df = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
          .option("subscribe", topic).option("startingOffsets", "earliest")
          .option("maxOffsetsPerTrigger", ROWS_PER_RUN).load()
          .selectExpr("CAST(key AS STRING) AS key").groupBy("key").count())
    for run in range(RUNS):
        rows = [(f"k{i % 3}", f"v{run}-{i}") for i in range(ROWS_PER_RUN)]
        (spark.createDataFrame(rows, "key STRING, value STRING").write.format("kafka")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())
        RECORDER.run(df, root / "cp")
    return root / "cp"


def source_cases(version: tuple[int, ...]) -> dict[str, Any]:
    """The cases this module adds for Spark ``version`` (Kafka only with a broker and jars)."""
    cases: dict[str, Any] = {"rate_mb": (write_rate_micro_batch, {}), "rate": (write_rate, {})}
    if os.environ.get("MATRIX_KAFKA"):
        cases["kafka"] = (write_kafka, {})
    return cases
