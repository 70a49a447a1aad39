"""Run the flights pipeline in its own process (its own SparkSession), for the kill -9 test.

    python exactly_once_driver.py WORKSPACE stream [delta|parquet]  # all layers, processingTime=100 ms, until killed
    python exactly_once_driver.py WORKSPACE finish [delta|parquet]  # every layer with availableNow, then exit 0

While streaming, one file per micro-batch (``max_files_per_trigger=1``), so there are many
batches to kill.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main(root: Path, mode: str, fmt: str = "parquet") -> int:
    from streamwatch.pipeline import Workspace, get_pipeline
    from streamwatch.spark.runner import PipelineRunner
    from streamwatch.spark.session import SessionConfig, create_session
    from streamwatch.spark.tableformat import decide_table_format

    spark, _info = create_session(SessionConfig(
        workspace=root / "driver-session", master="local[2]", ui=False, quiet=True,
        shuffle_partitions=2, table_format=decide_table_format(forced=fmt),
    ))
    options = {"max_files_per_trigger": 1} if mode == "stream" else {}
    runner = PipelineRunner(spark, get_pipeline("flights"), Workspace(root), fmt, options)
    if mode == "finish":
        runner.run_available_now(timeout_s=400)
        print("finished", flush=True)
        return 0
    runner.start("processingTime=100 milliseconds")
    print("started", flush=True)
    while True:  # until kill -9
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), *sys.argv[2:]))
