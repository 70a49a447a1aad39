"""Run the flights pipeline with ``availableNow`` in its own process and SparkSession, on the
master given (``local[2]`` or ``spark://127.0.0.1:PORT``), recording every listener event
with ``streamwatch.record`` — the way a user's own job on a cluster would.

    python flights_driver.py WORKSPACE MASTER EVENTS_PATH_OR_URL RESULT_JSON

Writes RESULT_JSON: the master, the executor count, and the gold table's rows (sorted).
Exits 0 when every layer finished.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(root: Path, master: str, events: str, result: Path) -> int:
    import streamwatch
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import TableFormatDecision

    spark, info = create_session(SessionConfig(
        workspace=root / "driver-session", master=master, ui=False, quiet=True, shuffle_partitions=2,
        table_format=TableFormatDecision("parquet", "test"),
        conf={"spark.executor.memory": "512m", "spark.cores.max": "1"},
    ))
    recording = streamwatch.record(spark, events, segment_seconds=0.5, app={"pipeline": "flights"})
    runner = PipelineRunner(spark, get_pipeline("flights"), Workspace(root), "parquet")
    runner.run_available_now(timeout_s=400)
    recording.stop()
    gold = runner.tables.read("gold")
    rows = sorted(json.dumps(r.asDict(), sort_keys=True, default=str) for r in gold.collect())
    result.write_text(json.dumps({"master": info.master, "executors": info.executors,
                                  "gold_columns": gold.columns, "gold": rows}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3], Path(sys.argv[4])))
