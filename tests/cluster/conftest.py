"""Fixtures for the cluster tests: a real Spark standalone cluster (master + one 1-core
worker) on loopback, and a real S3 API (moto's server) the cluster's driver records to."""

from __future__ import annotations

import shutil

import pytest

from tests.cluster.standalone import StandaloneCluster, spark_home


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    """A running :class:`StandaloneCluster`; both daemons (and their executors) are stopped at
    teardown, whatever happened."""
    if shutil.which("java") is None:
        pytest.skip("java not on PATH")
    if not (spark_home() / "bin" / "spark-class").exists():
        pytest.skip("pyspark has no bin/spark-class")
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def s3_endpoint():
    """A moto S3 server on a free loopback port with bucket ``jobs``; yields the endpoint URL.
    The environment points boto3/s3fs at it (for this process and the drivers it starts)."""
    moto_server = pytest.importorskip("moto.server", reason="moto[server] not installed")
    s3fs = pytest.importorskip("s3fs", reason="s3fs not installed")
    import boto3

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    mp = pytest.MonkeyPatch()
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}.items():
        mp.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="jobs")
    try:
        yield endpoint
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        mp.undo()
        server.stop()
