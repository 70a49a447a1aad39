"""Timed ``streamwatch`` child processes as a user's installation runs them.

``pip install`` compiles every module to bytecode, so an installed ``streamwatch`` starts
from ``.pyc`` files. A checkout run with ``PYTHONDONTWRITEBYTECODE=1`` (as on the machines
these benchmarks were written on) compiles every module it imports in every fresh process:
~0.1 s of CPU that no user pays. :func:`installed_env` gives children a bytecode cache of
their own (``PYTHONPYCACHEPREFIX``, outside the source tree) and :func:`warm` fills it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def installed_env(cache: Path) -> dict[str, str]:
    """``os.environ`` with bytecode written to and read from ``cache`` (a folder)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def warm(cmd: list[str], env: dict[str, str]) -> None:
    """Run ``cmd`` once, untimed, so the modules it imports are compiled into the cache.
    Raises ``SystemExit`` with its stderr's tail when it fails."""
    r = subprocess.run(cmd, capture_output=True, env=env, timeout=900)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({r.returncode}): {r.stderr.decode()[-400:]}")
