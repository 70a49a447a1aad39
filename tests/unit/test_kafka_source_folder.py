"""A Kafka source's ``sources/<i>/`` folder holds its initial offsets (``0``: a zero byte Spark
writes for Spark 2.1.0 readers, then a ``v1`` log with the starting offsets, as in every
Kafka checkpoint Spark 4.2 wrote in tests/spark/test_realtime_kafka.py), not a file-source
log: the reader neither reads it as one nor reports it."""

from __future__ import annotations

import json

from streamwatch.checkpoint.reader import read_checkpoint


def _checkpoint(root, offset_line: str | None):
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "sources" / "0").mkdir(parents=True)
    (root / "metadata").write_text('{"id":"5f1c2e0a-0000-4000-8000-000000000001"}')
    if offset_line is not None:
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1795784451202, "conf": {}}
        (root / "offsets" / "0").write_text(f"v1\n{json.dumps(meta)}\n{offset_line}")
        (root / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')
    (root / "sources" / "0" / "0").write_bytes(b'\x00v1\n{"clicks":{"0":0,"1":0,"2":0}}')
    return root


def test_kafka_initial_offsets_are_not_a_file_source_log(tmp_path):
    cp = read_checkpoint(str(_checkpoint(tmp_path / "cp", '{"clicks":{"0":5,"1":3,"2":0}}')))
    assert not [f for f in cp.findings if f.severity in ("error", "warning")], cp.findings
    assert cp.sources == ()


def test_before_the_first_offsets_the_file_itself_tells(tmp_path):
    cp = read_checkpoint(str(_checkpoint(tmp_path / "cp", None)))
    assert not [f for f in cp.findings if f.code == "unparsable-file"], cp.findings
    assert cp.sources == ()


def test_a_file_source_log_is_still_read(tmp_path):
    root = _checkpoint(tmp_path / "cp", '{"logOffset":0}')
    (root / "sources" / "0" / "0").write_text('v1\n{"path":"file:///in/a.json","timestamp":1,"batchId":0}')
    cp = read_checkpoint(str(root), full=True)
    assert [s.name for s in cp.sources] == ["0"]
    assert [e.path for e in cp.sources[0].entries] == ["file:///in/a.json"]
