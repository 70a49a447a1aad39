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
def s3_endpoint(s3_server):
    """The module's moto S3 server (``s3_server``, tests/conftest.py) with bucket ``jobs``;
    returns the endpoint URL. The environment points boto3/s3fs at it (for this process and
    the drivers it starts)."""
    s3_server.client.create_bucket(Bucket="jobs")
    return s3_server.endpoint
