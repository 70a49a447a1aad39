"""The checkpoint watch on an s3:// workspace (moto's S3 server on loopback): the records are
the same as on a local disk, and the requests each poll sends — counted on the wire by a proxy
in front of the server — grow with what changed, not with the checkpoint's size."""

from __future__ import annotations

import json

import pytest

from streamwatch.analysis.records import CheckpointBatch
from streamwatch.analysis.session import CheckpointWatch
from tests.helpers.counting_proxy import counting_proxy

T0 = 1_790_000_000_000


class S3Checkpoint:
    """A file-source query's checkpoint written as S3 objects (``bucket``/``prefix``)."""

    def __init__(self, client, bucket: str, prefix: str) -> None:
        self.c, self.bucket, self.prefix = client, bucket, prefix
        self.put("metadata", json.dumps({"id": f"id-{prefix}"}))
        self.log_offset = -1

    def put(self, key: str, text: str) -> None:
        self.c.put_object(Bucket=self.bucket, Key=f"{self.prefix}/{key}", Body=text.encode())

    def batch(self, b: int, files: int = 1, commit: bool = True) -> None:
        names = []
        for i in range(files):
            name = f"landing/{self.prefix}/f{b}-{i}.csv"
            self.c.put_object(Bucket=self.bucket, Key=name, Body=b"x" * (10 + i))
            names.append(name)
        if files:
            self.log_offset += 1
            rows = [json.dumps({"path": f"s3a://{self.bucket}/{n}", "timestamp": T0, "batchId": self.log_offset})
                    for n in names]
            self.put(f"sources/0/{self.log_offset}", "v1\n" + "\n".join(rows))
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + b * 1000, "conf": {}}
        self.put(f"offsets/{b}", "v1\n" + json.dumps(meta) + "\n" + json.dumps({"logOffset": self.log_offset}))
        if commit:
            self.put(f"commits/{b}", "v1\n" + json.dumps({"nextBatchWatermarkMs": 0}))


def _batches(recs):
    return [r for r in recs if isinstance(r, CheckpointBatch)]


@pytest.mark.parametrize("size", [20, 200])
def test_poll_cost_follows_changes_not_size(s3_server, size):
    bucket = f"ws-{size}"
    s3_server.client.create_bucket(Bucket=bucket)
    cp = S3Checkpoint(s3_server.client, bucket, "checkpoints/p/q")
    for b in range(size):
        cp.batch(b, files=0)
    with counting_proxy(s3_server.endpoint) as proxy:
        watch = CheckpointWatch([f"s3://{bucket}/checkpoints"], history=5,
                                storage_options={"endpoint_url": proxy.endpoint}, rediscover_s=None)
        recs = watch.open()
        assert [b.batch_id for b in _batches(recs)] == list(range(size - 5, size))
        proxy.take()
        idle = [len(proxy.take()) for _ in range(3) if watch.poll() is not None]
        cp.batch(size, files=2)
        got = _batches(watch.poll())
        one = proxy.take()
        for b in range(size + 1, size + 5):
            cp.batch(b, files=2)
        four = _batches(watch.poll())
        many = proxy.take()
    assert [(b.batch_id, b.input_files, b.input_bytes, b.id) for b in got] == [(size, 2, 21, "id-checkpoints/p/q")]
    assert [b.batch_id for b in four] == list(range(size + 1, size + 5))
    assert idle == [idle[0]] * 3 and idle[0] <= 4, idle  # next offsets/ and commits/ look-ups only
    per_batch = len(one) - idle[0]
    assert per_batch <= 10, one
    assert len(many) <= idle[0] + 4 * per_batch, many  # proportional to the 4 new batches
    assert not any(m == "GET" and "list-type=2" in path and "delimiter" not in path for m, path in one + many)
    _costs[size] = (idle[0], len(one))


_costs: dict[int, tuple[int, int]] = {}


def test_poll_cost_is_the_same_for_a_20x_bigger_checkpoint():
    if set(_costs) != {20, 200}:
        pytest.skip("needs both sizes of test_poll_cost_follows_changes_not_size")
    assert _costs[20] == _costs[200]
