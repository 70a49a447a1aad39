"""Headless entry points load neither pyspark nor textual, checked in fresh interpreters (the
layer contracts themselves are import-linter's, in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: What the import-linter contracts (pyproject.toml, run by ``make test``) cannot see: which
#: modules are *loaded* when a headless entry point is imported (lazy imports inside functions
#: count as imports for import-linter, so the pipelines and commands are checked here).
CASES = [
    ("streamwatch", ["pyspark", "textual"]),
    ("streamwatch.cli", ["pyspark", "textual"]),
    ("streamwatch.cli.inspect_cmd", ["pyspark", "textual"]),
    ("streamwatch.cli.log_cmd", ["pyspark", "textual"]),
    ("streamwatch.cli.options", ["pyspark", "textual"]),
    ("streamwatch.pipeline", ["pyspark", "textual"]),
    ("streamwatch.metrics", ["pyspark", "textual"]),
    ("streamwatch.spark.tableformat", ["pyspark", "textual"]),
    ("streamwatch.backends.replay", ["pyspark", "textual"]),
    ("streamwatch.tui.app", ["pyspark"]),
    ("sample_pipelines.flights", ["pyspark", "textual"]),
    ("sample_pipelines.orders", ["pyspark", "textual"]),
    ("sample_pipelines.events", ["pyspark", "textual"]),
    ("streamwatch.analysis.lineage", ["pyspark", "textual"]),
    ("streamwatch.model.lineage", ["pyspark", "textual"]),
    ("streamwatch.cli.lineage_cmd", ["pyspark", "textual"]),
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
