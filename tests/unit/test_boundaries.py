"""DESIGN.md's import boundaries, checked in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    ("streamwatch.model", ["pyspark", "textual"]),
    ("streamwatch.checkpoint", ["pyspark", "textual"]),
    ("streamwatch.checkpoint.reader", ["pyspark", "textual", "rich"]),
    ("streamwatch.model.findings", ["pyspark", "textual"]),
    ("streamwatch.model.events", ["pyspark", "textual"]),
    ("streamwatch.model.progress", ["pyspark", "textual"]),
    ("streamwatch.model.sparkjson", ["pyspark", "textual"]),
    ("streamwatch.model.checkpoint", ["pyspark", "textual"]),
    ("streamwatch.model.batchlogs", ["pyspark", "textual"]),
    ("streamwatch.model.filelogs", ["pyspark", "textual"]),
    ("streamwatch.model.deltalog", ["pyspark", "textual"]),
    ("streamwatch.model.statestore", ["pyspark", "textual"]),
    ("streamwatch.cli.inspect_cmd", ["pyspark", "textual"]),
    ("streamwatch.events", ["pyspark", "textual"]),
    ("streamwatch.cli", ["pyspark", "textual"]),
    ("streamwatch.tui.app", ["pyspark"]),
    ("streamwatch.analysis.board", ["pyspark", "textual"]),
    ("streamwatch.analysis.diagnosis", ["pyspark", "textual"]),
    ("streamwatch.analysis.journeys", ["pyspark", "textual"]),
    ("streamwatch.tui.commands", ["pyspark"]),
    ("streamwatch.spark.runner", ["textual"]),
    ("streamwatch.spark.live", ["textual"]),
    ("streamwatch.spark.record", ["textual"]),
    ("streamwatch.spark.listener", ["textual"]),
    ("streamwatch.events.eventlog", ["pyspark", "textual"]),
    ("streamwatch.events.reader", ["pyspark", "textual"]),
    ("streamwatch.events.summary", ["pyspark", "textual"]),
    ("streamwatch.events.segments", ["pyspark", "textual"]),
    ("streamwatch.events.remote", ["pyspark", "textual"]),
    ("streamwatch.events.runs", ["pyspark", "textual"]),
    ("streamwatch.cli.options", ["pyspark", "textual"]),
    ("streamwatch.backends.replay", ["pyspark", "textual"]),
    ("streamwatch.backends.base", ["pyspark", "textual"]),
    ("streamwatch.analysis.dashboard", ["pyspark", "textual"]),
    ("streamwatch.cli.log_cmd", ["pyspark", "textual"]),
    ("streamwatch.metrics", ["pyspark", "textual"]),
    ("streamwatch", ["pyspark", "textual"]),
    ("streamwatch.spark.tableformat", ["pyspark", "textual"]),
    ("sample_pipelines.flights", ["pyspark", "textual"]),
    ("sample_pipelines.orders", ["pyspark", "textual"]),
    ("sample_pipelines.events", ["pyspark", "textual"]),
    ("streamwatch.pipeline", ["pyspark", "textual"]),
]


@pytest.mark.parametrize("module,forbidden", CASES, ids=[c[0] for c in CASES])
def test_module_does_not_import(module, forbidden):
    code = (
        f"import sys, {module}\n"
        f"bad = [m for m in {forbidden!r} if m in sys.modules]\n"
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"{module} imports {out.stdout.strip()}"
