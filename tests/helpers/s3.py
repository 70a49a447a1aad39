"""A real S3 API for tests: moto's standalone server on a free loopback port, with the
environment pointing boto3, s3fs (``AWS_ENDPOINT_URL``, ``FSSPEC_S3_ENDPOINT_URL``) and any
process started meanwhile (a Spark driver) at it. Used by the ``s3_server`` fixture in
``tests/conftest.py``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

INSTALL = "(pip install -e '.[test]')"


@dataclass(frozen=True)
class S3Server:
    """A running moto S3 server: ``endpoint`` (``http://127.0.0.1:<port>``) and a boto3 S3
    ``client`` talking to it."""

    endpoint: str
    client: Any


@contextlib.contextmanager
def moto_s3(*buckets: str) -> Iterator[S3Server]:
    """Start moto's S3 server, create ``buckets``, set the AWS test credentials/region and
    endpoint variables; on exit restore the environment and stop the server. s3fs caches its
    filesystems per process: the cache is cleared on entry and exit, so none points at a
    stopped server. Skips the test when moto[server] or s3fs is not installed."""
    moto_server = pytest.importorskip("moto.server", reason=f"moto[server] not installed {INSTALL}")
    s3fs = pytest.importorskip("s3fs", reason=f"s3fs not installed {INSTALL}")
    import boto3

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    mp = pytest.MonkeyPatch()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint,
                     "FSSPEC_S3_ENDPOINT_URL": endpoint}.items():
            mp.setenv(k, v)
        s3fs.S3FileSystem.clear_instance_cache()
        client = boto3.client("s3", endpoint_url=endpoint)
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        yield S3Server(endpoint, client)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        mp.undo()
        server.stop()


def point_s3a_at(spark: Any, endpoint: str) -> None:
    """Point the running session's Hadoop S3A connector at ``endpoint`` (a loopback moto
    server): path-style access, no SSL, the test credentials. Hadoop caches one S3A file
    system per bucket, so a test module uses a bucket of its own."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()  # noqa: SLF001 - the session's Hadoop conf
    for k, v in {"fs.s3a.endpoint": endpoint, "fs.s3a.path.style.access": "true",
                 "fs.s3a.access.key": "testing", "fs.s3a.secret.key": "testing",
                 "fs.s3a.connection.ssl.enabled": "false", "fs.s3a.endpoint.region": "us-east-1",
                 "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"}.items():
        conf.set(k, v)
