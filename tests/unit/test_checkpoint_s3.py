"""``streamwatch inspect s3://…`` against a real S3 API (moto's standalone server on
127.0.0.1, started here), through fsspec/s3fs: the same answers as for a local folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner


@pytest.fixture(scope="module")
def s3(s3_server):
    """The module's moto S3 server (``s3_server``, tests/conftest.py) with bucket ``cps``:
    (boto3 client, endpoint URL)."""
    s3_server.client.create_bucket(Bucket="cps")
    return s3_server.client, s3_server.endpoint


def _upload(client, local: Path, prefix: str) -> None:
    for p in sorted(local.rglob("*")):
        if p.is_file():
            client.put_object(Bucket="cps", Key=f"{prefix}/{p.relative_to(local).as_posix()}", Body=p.read_bytes())


def _local_cp(root: Path) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "sources" / "0").mkdir(parents=True)
    (root / "metadata").write_text('{"id":"s3-query"}')
    for b in range(4):
        (root / "offsets" / str(b)).write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":%d,"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"logOffset":%d}' % (b, b))
        (root / "sources" / "0" / str(b)).write_text('v1\n{"path":"s3://in/f%d","timestamp":1,"batchId":%d}' % (b, b))
    for b in range(3):
        (root / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    (root / "state" / "0" / "0").mkdir(parents=True)
    for v in (1, 2, 3):
        (root / "state" / "0" / "0" / f"{v}.delta").write_bytes(b"d" * 7)
    return root


def test_read_checkpoint_from_s3_matches_local(s3, tmp_path):
    from streamwatch.checkpoint import batch_timeline, read_checkpoint

    client, _ = s3
    local = _local_cp(tmp_path / "cp")
    _upload(client, local, "q1")
    before = {o["Key"]: o["ETag"] for o in client.list_objects_v2(Bucket="cps")["Contents"]}
    remote = read_checkpoint("s3://cps/q1")
    here = read_checkpoint(local)
    assert remote.query_id == "s3-query"
    assert (remote.latest_batch_id, remote.last_committed_batch_id) == (3, 2)
    assert [e.path for e in remote.sources[0].entries] == [f"s3://in/f{b}" for b in range(4)]
    assert remote.state[0].partitions[0].versions == (1, 2, 3) and remote.state[0].bytes == 21
    assert sorted(f.code for f in remote.findings) == sorted(f.code for f in here.findings) == ["in-flight-batch"]
    assert [(r.batch_id, r.has_commit, r.state_version) for r in batch_timeline(remote)] == [(r.batch_id, r.has_commit, r.state_version) for r in batch_timeline(here)]
    after = {o["Key"]: o["ETag"] for o in client.list_objects_v2(Bucket="cps")["Contents"]}
    assert after == before  # read-only: nothing created, modified or deleted


def test_cli_on_s3(s3, tmp_path):
    from streamwatch.cli import main

    client, _ = s3
    _upload(client, _local_cp(tmp_path / "cp"), "q2")
    r = CliRunner().invoke(main, ["inspect", "s3://cps/q2", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["batches"]["in_flight"] == 3
    missing = CliRunner().invoke(main, ["inspect", "s3://cps/nothing-here"])
    assert missing.exit_code == 4 and "no such file or directory" in missing.stderr
