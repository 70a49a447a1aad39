"""What the cloud tests (tests/cloud) and bench/cloud_listing_bench.py share: the emulator
process run on loopback (:func:`loopback_server`, for Azurite and the GCS emulator), the tree
they upload — real Spark checkpoints laid out as a streamwatch workspace whose source logs name
their input files on the store under test —, the CLI run as a user runs it, and requests to
Azurite / the GCS emulator counted on the wire (a proxy in front) and told apart by kind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.counting_proxy import CountingProxy, counting_proxy

MATRIX = Path(__file__).resolve().parents[1] / "fixtures" / "matrix" / "4.2.0"
#: (query, layer) in the workspace → (matrix fixture, input folders of its sources)
CHECKPOINTS = {("agg", "rocks"): ("agg_rocks_cl", ("in",)), ("join", "plain"): ("join", ("left", "right"))}
STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")
#: Batches kept in the older snapshot of agg/rocks (``old/agg``) that ``diff`` compares with.
OLD_UPTO = 3


def free_port() -> int:
    """A TCP port nothing listens on at this moment (bound and released on 127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, proc: subprocess.Popen[bytes] | None, deadline_s: float, log: Path | None = None) -> None:
    """Poll ``url`` until it answers with any HTTP status (the server is up), or raise
    RuntimeError when ``proc`` exits first or ``deadline_s`` seconds pass (with the log's tail)."""
    end = time.monotonic() + deadline_s
    delay = 0.02
    while True:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}: {_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # an HTTP answer, even 4xx: it is serving
        except OSError:
            pass
        if time.monotonic() > end:
            raise RuntimeError(f"no answer from {url} within {deadline_s:.0f} s: {_tail(log)}")
        time.sleep(delay)  # a poll interval, not a wait for readiness: the loop checks the port
        delay = min(delay * 2, 0.25)


def _tail(log: Path | None) -> str:
    if log is None or not log.is_file():
        return "(no log)"
    lines = log.read_text(errors="replace").strip().splitlines()
    return " | ".join(lines[-5:]) or "(empty log)"


@contextlib.contextmanager
def loopback_server(name: str, argv: Callable[[int], list[str]], ready: str, deadline_s: float,
                    unavailable: Callable[[str], Exception]) -> Iterator[str]:
    """Run ``argv(port)`` — a server told to listen on ``127.0.0.1:port``, a free port — in a
    fresh temporary folder (``sw-<name>-…``: its working directory, its output in a log
    there), poll ``http://127.0.0.1:<port><ready>`` until it answers (:func:`wait_http`, within
    ``deadline_s`` seconds), yield ``http://127.0.0.1:<port>``, and terminate it on the way out
    (killed when it has not exited 10 s later). Raises ``unavailable("<name> did not start:
    <why>")`` when the process exits or stays silent before answering."""
    with tempfile.TemporaryDirectory(prefix=f"sw-{name}-") as work:
        log = Path(work) / f"{name}.log"
        port = free_port()
        with log.open("wb") as out:
            proc = subprocess.Popen(argv(port), cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}"
            try:
                wait_http(f"{base}{ready}", proc, deadline_s, log)
            except RuntimeError as e:
                raise unavailable(f"{name} did not start: {e}") from None
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


@dataclass
class Store:
    """One store under test: ``name`` (``azure``/``gcs``), ``base`` (URL of the uploaded tree's
    root), ``inner`` (the same root as the fsspec path: ``container/prefix``), ``env`` for the
    CLI, and what uploads to it."""

    name: str
    base: str
    inner: str
    env: dict[str, str]
    server: object
    bucket: str
    prefix: str
    uploaded: dict[str, str] = field(default_factory=dict)

    def url(self, rel: str) -> str:
        return f"{self.base}/{rel}"


def build_workspace(dest: Path, files_url: str) -> Path:
    """Write under ``dest``: ``ws/checkpoints/<query>/<layer>`` (copies of the matrix
    checkpoints), ``ws/landing/<query>/<folder>/…`` (their input files) with every source log
    entry pointing at ``<files_url>/ws/landing/…``, and ``old/agg`` (agg/rocks as it was after
    batch :data:`OLD_UPTO`: later offsets, commits and source log files removed). Skips the
    test when the matrix fixtures are missing. Returns ``dest``."""
    if not MATRIX.is_dir():
        pytest.skip(f"matrix fixtures missing at {MATRIX} (make matrix)")
    for (query, layer), (fixture, inputs) in CHECKPOINTS.items():
        cp = dest / "ws" / "checkpoints" / query / layer
        shutil.copytree(MATRIX / fixture / "cp", cp)
        for folder in inputs:
            shutil.copytree(MATRIX / fixture / folder, dest / "ws" / "landing" / query / folder)
        for log in (cp / "sources").glob("*/*"):
            lines = log.read_text().split("\n")
            out = [lines[0]]
            for line in lines[1:]:
                entry = json.loads(line)
                parent, name = entry["path"].rsplit("/", 2)[-2:]
                entry["path"] = f"{files_url}/ws/landing/{query}/{parent}/{name}"
                out.append(json.dumps(entry, separators=(",", ":")))
            log.write_text("\n".join(out))
    old = dest / "old" / "agg"
    shutil.copytree(dest / "ws" / "checkpoints" / "agg" / "rocks", old)
    for folder in ("offsets", "commits", "sources/0"):
        for f in (old / folder).iterdir():
            if f.name.split(".")[0].isdigit() and int(f.name.split(".")[0]) > OLD_UPTO:
                f.unlink()
    return dest


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """``streamwatch ARGS`` as a user runs it (a fresh process), with ``env`` added to ours."""
    return subprocess.run([STREAMWATCH, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def request_kind(store: str, method: str, path: str) -> str:
    """What one HTTP request to a store's API was, from its method and ``path?query`` as a
    counting proxy saw it: ``list`` (a folder or prefix listing), ``get`` (an object's
    bytes), ``head`` (one object's, folder's or container's metadata) or ``other``. ``store``:
    ``azure`` (Blob REST: ``comp=list`` lists, HEAD is Get Blob Properties, a GET of
    ``restype=container`` alone Get Container Properties) or
    ``gcs`` (JSON API: ``/storage/v1/b/B/o`` lists, ``…/o/NAME`` is metadata unless
    ``alt=media``, ``/download/…`` is media)."""
    route, _, query = path.partition("?")
    if store == "azure":
        if method == "GET" and "comp=list" in query:
            return "list"
        if method == "GET" and "restype=container" in query:
            return "head"
        return {"GET": "get", "HEAD": "head"}.get(method, "other")
    if method != "GET":
        return "other"
    if route.rstrip("/").endswith("/o") and route.startswith("/storage/v1/b/"):
        return "list"
    if "alt=media" in query or route.startswith("/download/"):
        return "get"
    return "head" if "/o/" in route else "other"


def count_kinds(store: str, requests: list[tuple[str, str]]) -> dict[str, int]:
    """(method, path) pairs from :class:`~tests.helpers.counting_proxy.CountingProxy` counted
    by :func:`request_kind`."""
    out: dict[str, int] = {}
    for method, path in requests:
        k = request_kind(store, method, path)
        out[k] = out.get(k, 0) + 1
    return out


def store_url(store: str, bucket: str, path: str) -> str:
    """The URL of ``bucket/path`` on ``store`` (``azure``: the abfss:// form, naming Azurite's
    account; ``gcs``: gs://)."""
    from tests.helpers.azurite import ACCOUNT

    return f"abfss://{bucket}@{ACCOUNT}.dfs.core.windows.net/{path}" if store == "azure" else f"gs://{bucket}/{path}"


@contextlib.contextmanager
def counted_store(store: str, server: Any) -> Iterator[tuple[CountingProxy, dict[str, Any]]]:
    """A :class:`~tests.helpers.counting_proxy.CountingProxy` in front of ``server`` (an
    :class:`~tests.helpers.azurite.Azurite` or :class:`~tests.helpers.gcs_emulator.GcsEmulator`)
    and the ``storage_options`` that send adlfs/gcsfs through it: what a reader asks of the
    store, counted on the wire."""
    from tests.helpers.azurite import ACCOUNT, connection_string

    if store == "azure":
        with counting_proxy(server.blob_endpoint.rsplit("/", 1)[0]) as proxy:
            yield proxy, {"connection_string": connection_string(f"{proxy.endpoint}/{ACCOUNT}")}
    else:
        with counting_proxy(server.endpoint) as proxy:
            yield proxy, {"endpoint_url": proxy.endpoint}
