"""Checkpoints the ``streamwatch inspect`` tests build themselves, in Spark's own on-disk
formats (``offsets/N``: ``v1`` + OffsetSeqMetadata JSON + one offset per source;
``commits/N``: ``v1`` + CommitMetadata; ``sources/0/N`` and ``_spark_metadata/N``: ``v1`` +
one JSON entry per file; ``state/<op>/<partition>/<version>.delta``), and the inspector run
on them through click."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from streamwatch.cli import main

QID = "3f1c1d0e-0000-4000-8000-000000000019"
T0 = 1_700_000_000_000


def write_offsets(cp: Path, b: int, *, conf: dict | None = None, watermark: int = 0, log_offset: int | None = None,
                  version: str = "v1") -> None:
    """``offsets/b``: the log version line, OffsetSeqMetadata (watermark ms, batch timestamp
    ``T0 + b`` s, ``conf``), one file-source offset (``logOffset``, default ``b``)."""
    meta = {"batchWatermarkMs": watermark, "batchTimestampMs": T0 + b * 1000,
            "conf": {"spark.sql.shuffle.partitions": "2"} if conf is None else conf}
    src = json.dumps({"logOffset": b if log_offset is None else log_offset})
    (cp / "offsets" / str(b)).write_text(f"{version}\n{json.dumps(meta)}\n{src}")


def write_commit(cp: Path, b: int) -> None:
    """``commits/b``: ``v1`` + CommitMetadata."""
    (cp / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def file_entry(path: str, b: int, sink: bool) -> str:
    """One JSON line of a file sink log (SinkFileStatus) or a file source log (FileEntry)."""
    if sink:
        return json.dumps({"path": path, "size": 10, "isDir": False, "modificationTime": T0 + b,
                           "blockReplication": 1, "blockSize": 33554432, "action": "add"})
    return json.dumps({"path": path, "timestamp": T0 + b, "batchId": b})


def build_checkpoint(root: Path, offsets=(0, 1, 2), commits=(0, 1, 2), **offset_kw) -> Path:
    """A healthy file-source checkpoint with the given offsets/commits batch ids; its
    ``sources/0/`` log holds every planned batch."""
    cp = root / "cp"
    for d in ("offsets", "commits", "sources/0"):
        (cp / d).mkdir(parents=True)
    (cp / "metadata").write_text(json.dumps({"id": QID}))
    for b in offsets:
        write_offsets(cp, b, **offset_kw)
        (cp / "sources" / "0" / str(b)).write_text("v1\n" + file_entry(f"file:///in/f{b}.json", b, sink=False))
    for b in commits:
        write_commit(cp, b)
    return cp


def write_state(cp: Path, versions_by_partition: dict[int, list[int]]) -> None:
    """Empty ``state/0/<partition>/<version>.delta`` files."""
    for part, versions in versions_by_partition.items():
        d = cp / "state" / "0" / str(part)
        d.mkdir(parents=True, exist_ok=True)
        for v in versions:
            (d / f"{v}.delta").write_bytes(b"")


def write_sink(root: Path, batches: list[int], compact: int | None = None, compact_bytes: int = 0) -> Path:
    """A file sink ``root/out`` whose ``_spark_metadata/`` logs ``batches`` (batch ``compact`` as
    a ``.compact`` file padded past ``compact_bytes``)."""
    sink = root / "out"
    (sink / "_spark_metadata").mkdir(parents=True)
    for b in batches:
        name = f"{b}.compact" if b == compact else str(b)
        body = "v1\n" + file_entry(f"file:///out/part-{b}.parquet", b, sink=True)
        if b == compact and compact_bytes:
            line = file_entry("file:///out/" + "p" * 200 + ".parquet", b, sink=True)
            body += ("\n" + line) * (compact_bytes // len(line) + 1)
        (sink / "_spark_metadata" / name).write_text(body)
    return sink


def inspect_cli(*args: str):
    """``streamwatch inspect ARGS`` through click; fails on anything but a clean exit."""
    r = CliRunner().invoke(main, ["inspect", *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return r


def finding_messages(cp: Path) -> dict[str, str]:
    """code → message of the findings ``inspect --json`` reports for ``cp``."""
    return {f["code"]: f["message"] for f in json.loads(inspect_cli(str(cp), "--json").stdout)["findings"]}
