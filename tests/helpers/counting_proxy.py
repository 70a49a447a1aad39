"""A loopback HTTP proxy that counts the requests it forwards to a server (the moto S3
server in tests): proof of how many storage calls a reader makes, measured on the wire."""

from __future__ import annotations

import contextlib
import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


class CountingProxy:
    """``endpoint`` to point a client at; ``requests`` lists (method, path?query) forwarded;
    ``take()`` returns and clears them."""

    def __init__(self, target: str) -> None:
        t = urlsplit(target)
        self.host, self.port = t.hostname or "127.0.0.1", t.port or 80
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                with proxy.lock:
                    proxy.requests.append((self.command, self.path))
                conn = http.client.HTTPConnection(proxy.host, proxy.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP and (k.lower() != "content-length" or self.command == "HEAD"):
                        self.send_header(k, v)  # a HEAD's Content-Length is the object's size
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def take(self) -> list[tuple[str, str]]:
        with self.lock:
            out, self.requests = self.requests, []
        return out


@contextlib.contextmanager
def counting_proxy(target: str) -> Iterator[CountingProxy]:
    """Run a :class:`CountingProxy` in front of ``target`` (``http://host:port``)."""
    p = CountingProxy(target)
    p.thread.start()
    try:
        yield p
    finally:
        p.server.shutdown()
        p.server.server_close()
