"""A Google Cloud Storage JSON API for tests: ``gcp-storage-emulator`` (PyPI, in the ``test``
extra) started as its own process on a free loopback port, reached by gcsfs through
``STORAGE_EMULATOR_HOST`` — the variable a user sets to point streamwatch at an emulator.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.cloud import loopback_server

START_TIMEOUT_S = 60
#: Where google-auth looks for the GCE metadata server, sent to a closed loopback port: were
#: anything to ask for Application Default Credentials, it fails at once instead of reaching
#: for the network.
NO_METADATA = {"GCE_METADATA_HOST": "127.0.0.1:9", "GCE_METADATA_IP": "127.0.0.1:9", "NO_GCE_CHECK": "true"}


#: The emulator's own ``main``, its HTTP server given a deep listen queue. It serves one request
#: at a time (``http.server.HTTPServer``) with the standard library's backlog of 5: a client
#: opening more connections at once than that (gcsfs reads 16 objects concurrently) has the
#: rest dropped by the kernel and retried after 1, 3, 7 s — minutes lost. Queued, they wait
#: only for their turn.
_LAUNCH = """
import http.server, sys

class Server(http.server.HTTPServer):
    request_queue_size = 1024

http.server.HTTPServer = Server
from gcp_storage_emulator.__main__ import main

main(sys.argv[1:])
"""


class EmulatorUnavailable(RuntimeError):
    """The emulator cannot be run here; ``str()`` is the reason a test skips with."""


@dataclass(frozen=True)
class GcsEmulator:
    """A running emulator: ``endpoint`` (``http://127.0.0.1:<port>``)."""

    endpoint: str

    def env(self, endpoint: str | None = None) -> dict[str, str]:
        """Environment variables that point gcsfs at this server (or at ``endpoint``, a
        counting proxy in front of it), with the metadata server fenced off."""
        return {"STORAGE_EMULATOR_HOST": endpoint or self.endpoint, **NO_METADATA}

    def fs(self) -> Any:
        """A gcsfs filesystem on the emulator (anonymous, no listings cache) for test set-up."""
        from gcsfs.core import GCSFileSystem

        return GCSFileSystem(endpoint_url=self.endpoint, token="anon", skip_instance_cache=True,
                             use_listings_cache=False)

    def create_bucket(self, name: str) -> None:
        self.fs().mkdir(name)

    def upload(self, local: Path, bucket: str, prefix: str) -> int:
        """Upload every file under ``local`` to ``bucket/prefix/…`` (relative paths kept,
        gcsfs's concurrent ``pipe``); returns how many."""
        files = {f"{bucket}/{prefix}/{p.relative_to(local).as_posix()}": p.read_bytes()
                 for p in sorted(local.rglob("*")) if p.is_file()}
        self.fs().pipe(files)
        return len(files)

    def digest(self, bucket: str) -> dict[str, str]:
        """Object name → md5 of everything in ``bucket`` (proof that a reader wrote nothing)."""
        return {k: str(v.get("md5Hash") or v.get("etag")) for k, v in self.fs().find(bucket, detail=True).items()}


@contextlib.contextmanager
def gcs_emulator() -> Iterator[GcsEmulator]:
    """Start the emulator (in memory) on a free loopback port, wait until its bucket listing
    answers (polling, with a deadline), yield it, and stop it. Raises
    :class:`EmulatorUnavailable` when the package is missing or the server does not start."""
    try:
        import gcp_storage_emulator  # noqa: F401 - only whether it is installed
    except ImportError:
        raise EmulatorUnavailable("gcp-storage-emulator not installed (pip install -e '.[test]')") from None

    def argv(port: int) -> list[str]:
        return [sys.executable, "-c", _LAUNCH, "start", "--host", "127.0.0.1", "--port", str(port), "--in-memory",
                "--quiet"]

    with loopback_server("gcp-storage-emulator", argv, "/storage/v1/b", START_TIMEOUT_S, EmulatorUnavailable) as base:
        yield GcsEmulator(base)
