"""Write small checkpoints in Spark's on-disk format (offsets/N, commits/N, sources/0/N,
a file sink's _spark_metadata/N) with chosen batch and commit times, for watch tests that
need an exact situation (a batch planned and never committed, a long idle gap)."""

from __future__ import annotations

import json
import os
from pathlib import Path

QUERY_ID = "4f6d3e1a-0000-4000-8000-00000000c0de"


class FakeCheckpoint:
    """A file-source → file-sink query's checkpoint at ``root`` with its sink at ``sink``
    (None: no sink). Times are epoch ms."""

    def __init__(self, root: Path, sink: Path | None = None, query_id: str = QUERY_ID) -> None:
        self.root, self.sink = Path(root), Path(sink) if sink else None
        for d in ("offsets", "commits", "sources/0"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        (self.root / "metadata").write_text(json.dumps({"id": query_id}))
        if self.sink:
            (self.sink / "_spark_metadata").mkdir(parents=True, exist_ok=True)
        self.log_offset = -1

    def plan(self, batch_id: int, at_ms: int, files: list[str] = (), watermark_ms: int = 0) -> None:
        """offsets/N (and sources/0/<logOffset> when ``files`` are given)."""
        if files:
            self.log_offset += 1
            rows = [json.dumps({"path": f, "timestamp": at_ms - 500, "batchId": self.log_offset}) for f in files]
            (self.root / "sources/0" / str(self.log_offset)).write_text("v1\n" + "\n".join(rows))
        meta = {"batchWatermarkMs": watermark_ms, "batchTimestampMs": at_ms,
                "conf": {"spark.sql.shuffle.partitions": "2"}}
        (self.root / "offsets" / str(batch_id)).write_text(
            "v1\n" + json.dumps(meta) + "\n" + json.dumps({"logOffset": self.log_offset}))

    def commit(self, batch_id: int, at_ms: int, outputs: list[tuple[str, int]] = ()) -> None:
        """_spark_metadata/N (when there is a sink) then commits/N, with mtime ``at_ms``."""
        if self.sink is not None:
            rows = [json.dumps({"path": p, "size": s, "isDir": False, "modificationTime": at_ms - 100,
                                "blockReplication": 1, "blockSize": 1, "action": "add"}) for p, s in outputs]
            (self.sink / "_spark_metadata" / str(batch_id)).write_text("v1\n" + "\n".join(rows))
        path = self.root / "commits" / str(batch_id)
        path.write_text("v1\n" + json.dumps({"nextBatchWatermarkMs": 0}))
        os.utime(path, ns=(at_ms * 1_000_000, at_ms * 1_000_000))
