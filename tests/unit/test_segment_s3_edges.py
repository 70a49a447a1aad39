"""Segment recordings on a bucket store (the S3 API: moto's server on 127.0.0.1 through
s3fs): a missing bucket is one clear error before anything is recorded, and a key under
folders that do not exist yet is fine (object stores have no folders). Every test uses a
bucket of its own, so reruns in one process (mutation testing) see no objects of earlier
runs. (Written against the mutation run of bench/MUTATION.md.)"""

from __future__ import annotations

import uuid

import pytest

from streamwatch.events.reader import read_events
from streamwatch.events.segments import SegmentRecorder, open_recorder
from tests.unit.test_jsonl import _progress


@pytest.fixture
def bucket(s3_server):
    """A fresh, empty bucket on the module's moto S3 server; its name."""
    name = f"seg-{uuid.uuid4().hex[:12]}"
    s3_server.client.create_bucket(Bucket=name)
    return name


def test_a_missing_bucket_is_one_clear_error(s3_server):
    name = f"missing-{uuid.uuid4().hex[:12]}"
    for url in (f"s3://{name}/jobs/events.jsonl", f"s3://{name}/events.jsonl"):
        with pytest.raises(OSError) as e:
            SegmentRecorder(url)
        assert str(e.value) == f"cannot write {url}: bucket {name!r} does not exist"
    assert name not in [b["Name"] for b in s3_server.client.list_buckets()["Buckets"]]  # nothing created


def test_keys_under_new_folders_in_an_existing_bucket(s3_server, bucket):
    url = f"s3://{bucket}/a/b/events.jsonl"
    with open_recorder(url, segment_seconds=60) as rec:
        rec.write(_progress(0))
        rec.write(_progress(1))
    keys = [o["Key"] for o in s3_server.client.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys == ["a/b/events.jsonl.1"]
    assert [e.batch_id for e in read_events(url)] == [0, 1]
