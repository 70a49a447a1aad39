"""A checkpoint's batch files read directly — ``offsets/N`` and ``commits/N`` as Spark wrote
them, never through streamwatch's reader: the account the truth tests hold verdicts against."""

from __future__ import annotations

import json
from pathlib import Path

from streamwatch.analysis.diagnosis import CheckpointHead


def batch_ids(folder: Path) -> list[int]:
    """The batch ids of a log folder (``offsets``/``commits``): its files named by a number,
    ascending; [] when the folder does not exist (yet)."""
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.exists() else []


def head_of(cp: Path) -> CheckpointHead:
    """The checkpoint's latest planned and committed batch, read from its files: the latest
    ``offsets/N`` with its ``batchTimestampMs`` (epoch ms, from the file's second line, the
    ``OffsetSeqMetadata`` JSON) and the latest ``commits/N``."""
    offsets, commits = batch_ids(cp / "offsets"), batch_ids(cp / "commits")
    ts = None
    if offsets:
        ts = json.loads((cp / "offsets" / str(offsets[-1])).read_text().splitlines()[1])["batchTimestampMs"]
    return CheckpointHead(offsets[-1] if offsets else None, commits[-1] if commits else None, ts)
