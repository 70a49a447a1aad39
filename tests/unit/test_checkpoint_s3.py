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
        (root / "offsets" / str(b)).write_text(f'v1\n{{"batchWatermarkMs":0,"batchTimestampMs":{b},"conf":{{"spark.sql.shuffle.partitions":"2"}}}}\n{{"logOffset":{b}}}')
        (root / "sources" / "0" / str(b)).write_text(f'v1\n{{"path":"s3://in/f{b}","timestamp":1,"batchId":{b}}}')
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


def test_s3_reads_list_per_folder_never_per_file(tmp_path):
    """On object storage the reader lists each state partition folder once (recursively, one
    paginated ListObjectsV2) and reads only the log files it parses: requests are counted at
    the S3 server (a counting wrapper around moto's app), nothing is mocked."""
    pytest.importorskip("moto.server", reason="moto[server] not installed")
    pytest.importorskip("s3fs", reason="s3fs not installed")
    from bench.inspect_bench import Shape, synthesize
    from streamwatch.checkpoint import read_checkpoint
    from tests.helpers.s3_counting import counting_s3

    shape = Shape("test", batches=300, retained=20, files_per_batch=2, compact=10, operators=2, partitions=8,
                  versions=20, snapshot_every=10, delta_bytes=16)
    local = tmp_path / "cp"
    files = synthesize(local, shape)
    from concurrent.futures import ThreadPoolExecutor

    with counting_s3("counted") as s3:
        def put(p: Path) -> None:
            s3.client.put_object(Bucket="counted", Key=f"cp/{p.relative_to(local).as_posix()}", Body=p.read_bytes())

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(put, [p for p in local.rglob("*") if p.is_file()]))
        s3.log.reset()
        cp = read_checkpoint("s3://counted/cp", full=False, sizes=False)
        counts = s3.log.snapshot()
    here = read_checkpoint(local, full=False)
    state_files = shape.operators * shape.partitions * (shape.versions + shape.versions // shape.snapshot_every)
    assert files > state_files >= 350
    # one listing per partition folder + a handful for the root, logs and operator folders
    assert counts["list"] <= shape.operators * shape.partitions + 20, counts
    # reads: the retained offsets and commits, the source log, operator metadata — no per-file HEAD/GET
    assert counts.get("get", 0) <= 2 * shape.retained + shape.compact + 2 * shape.operators + 8, counts
    assert counts.get("head", 0) <= 4, counts
    assert sum(counts.values()) < state_files // 3, counts
    # and the same answers as the local read, with sizes for free from the listings
    assert [p.versions for op in cp.state for p in op.partitions] == [p.versions for op in here.state for p in op.partitions]
    assert [op.bytes for op in cp.state] == [op.bytes for op in read_checkpoint(local, sizes=True).state]
    assert sorted(f.code for f in cp.findings) == sorted(f.code for f in here.findings)
