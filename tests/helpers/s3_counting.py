"""A loopback S3 API that counts the requests it serves: moto's S3 backend app behind a
small WSGI wrapper on a werkzeug server (port 0), so tests and benches can bound how many
requests a reader issues — counted at the server, nothing mocked."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs


@dataclass
class RequestLog:
    """Requests served: ``total``, and by kind (``list``, ``get``, ``head``, ``put``,
    ``other``). Thread-safe; ``reset()`` starts a new count."""

    kinds: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def record(self, method: str, path: str, query: str) -> None:
        q = parse_qs(query)
        bucket_level = path.strip("/").count("/") == 0
        if method == "GET" and bucket_level and ("list-type" in q or "prefix" in q or "delimiter" in q or not q):
            kind = "list"
        else:
            kind = {"GET": "get", "HEAD": "head", "PUT": "put"}.get(method, "other")
        with self.lock:
            self.kinds[kind] += 1

    @property
    def total(self) -> int:
        with self.lock:
            return sum(self.kinds.values())

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.kinds)

    def reset(self) -> None:
        with self.lock:
            self.kinds.clear()
            self.max_in_flight = self.in_flight


@dataclass(frozen=True)
class CountingS3:
    """``endpoint`` (``http://127.0.0.1:<port>``), a boto3 ``client`` and the ``log``."""

    endpoint: str
    client: Any
    log: RequestLog


@contextlib.contextmanager
def counting_s3(*buckets: str, env: bool = True) -> Iterator[CountingS3]:
    """Start the counting server, create ``buckets``; with ``env`` point AWS/s3fs at it
    (test credentials, ``AWS_ENDPOINT_URL``, ``FSSPEC_S3_ENDPOINT_URL``) until exit. Raises
    ImportError without moto[server]/s3fs."""
    import boto3
    import s3fs
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    log = RequestLog()
    app = DomainDispatcherApplication(create_backend_app)

    def counted(environ, start_response):
        log.record(environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
        log.enter()
        try:
            return list(app(environ, start_response))
        finally:
            log.leave()

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = make_server("127.0.0.1", 0, counted, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "FSSPEC_S3_ENDPOINT_URL")}
    try:
        if env:
            os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                               "AWS_ENDPOINT_URL": endpoint, "FSSPEC_S3_ENDPOINT_URL": endpoint})
        s3fs.S3FileSystem.clear_instance_cache()
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
        for b in buckets:
            client.create_bucket(Bucket=b)
        log.reset()
        yield CountingS3(endpoint, client, log)
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        if env:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        server.shutdown()
        thread.join(10)
