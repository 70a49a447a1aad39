"""A listener recording (``streamwatch log``'s JSON lines, schema v1) written by a test: a
header at ``t0`` (epoch ms) and one progress line per ``(t, event)`` pair."""

from __future__ import annotations

import json
from pathlib import Path


def write_recording(path: Path, t0: int, *progress: tuple[int, dict]) -> Path:
    """``path`` holding the header and the progress events (``t`` in epoch ms, ``event`` a
    StreamingQueryProgress JSON object as Spark writes it); returns ``path``."""
    lines = [{"v": 1, "kind": "header", "time": t0, "source": "listener", "app": {}, "conf": {}}]
    lines += [{"v": 1, "kind": "progress", "t": t, "event": event} for t, event in progress]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path
