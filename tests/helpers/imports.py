"""Which modules a piece of code loads, asked of a fresh interpreter (this venv's python), so
nothing the test run already imported counts."""

from __future__ import annotations

import subprocess
import sys


def loads_module(code: str, module: str) -> bool:
    """Run ``code`` in a new ``python -c`` process and say whether ``module`` (e.g.
    ``"textual"``, ``"pyspark"``) is in its ``sys.modules`` afterwards. Fails the test, with
    the child's stderr, when the code fails or prints anything itself."""
    probe = f"{code}\nimport sys\nprint({module!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    answer = out.stdout.strip()
    assert out.returncode == 0 and answer in ("True", "False"), (out.returncode, answer, out.stderr[-2000:])
    return answer == "True"
