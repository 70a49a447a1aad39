"""Which Java pyspark will start (no pyspark import)."""

from __future__ import annotations

import os
import subprocess


def java_version() -> str | None:
    """First line of ``java -version`` (None when no java is on PATH or JAVA_HOME)."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0] if lines else None
