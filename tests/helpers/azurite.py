"""A real Azure Blob Storage API for tests: Azurite (Microsoft's emulator, the npm package
``azurite``) started on a free loopback port, reached by adlfs (``abfss://…``, ``az://…``)
through a connection string — the way a user points streamwatch at Azurite too.

Azurite is a Node.js program. :func:`azurite_command` finds it — ``$STREAMWATCH_AZURITE`` (an
``azurite-blob`` executable), the project-local install under ``.tools/azurite/`` or one on
``PATH`` — and otherwise installs it once with ``npm install --prefix .tools/azurite
azurite@3`` (the npm registry; later runs reuse it). Without node/npm, or when the install
fails, :class:`AzuriteUnavailable` says why and the tests skip with that reason.

The server runs with ``--inMemoryPersistence`` (nothing written to disk), ``--disableTelemetry``
(Azurite otherwise reports usage to Microsoft: no traffic but loopback) and
``--skipApiVersionCheck`` (azure-storage-blob may speak a newer API version than the emulator
knows; checkpoint reads need nothing new).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.cloud import loopback_server

ROOT = Path(__file__).resolve().parents[2]
#: Where ``npm install`` puts Azurite (git-ignored ``.tools/``), shared by every checkout run.
TOOLS = ROOT / ".tools" / "azurite"
PACKAGE = "azurite@3"
#: Azurite's fixed development account (documented by Microsoft; not a secret).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
#: Seconds allowed for ``npm install`` (a cold npm cache downloads ~370 packages) and for start-up.
INSTALL_TIMEOUT_S = 300
START_TIMEOUT_S = 60


class AzuriteUnavailable(RuntimeError):
    """Azurite cannot be run here; ``str()`` is the one-line reason a test skips with."""


def connection_string(blob_endpoint: str) -> str:
    """The connection string for Azurite's development account at ``blob_endpoint``
    (``http://127.0.0.1:<port>/devstoreaccount1``)."""
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={blob_endpoint};")


def _installed() -> Path | None:
    exe = TOOLS / "node_modules" / ".bin" / "azurite-blob"
    return exe if exe.is_file() else None


def azurite_command() -> list[str]:
    """The command that starts Azurite's blob service (arguments to add). Installs Azurite
    into :data:`TOOLS` with npm the first time. Raises :class:`AzuriteUnavailable` when node or
    npm is missing or the install fails."""
    override = os.environ.get("STREAMWATCH_AZURITE")
    if override:
        if not Path(override).is_file():
            raise AzuriteUnavailable(f"STREAMWATCH_AZURITE={override}: no such file")
        return [override]
    if shutil.which("node") is None:
        raise AzuriteUnavailable("node is not installed (Azurite, the Azure Storage emulator, is a Node.js program)")
    exe = _installed() or (Path(p) if (p := shutil.which("azurite-blob")) else None)
    if exe is None:
        exe = _install()
    return [str(exe)]


def _install() -> Path:
    """``npm install --prefix`` into a temporary folder beside :data:`TOOLS`, then renamed into
    place: a half-finished install is never taken for a good one, and two test runs installing
    at once both end with one."""
    npm = shutil.which("npm")
    if npm is None:
        raise AzuriteUnavailable(f"npm is not installed: cannot install {PACKAGE} (or set STREAMWATCH_AZURITE)")
    TOOLS.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="azurite-", dir=TOOLS.parent))
    try:
        try:
            done = subprocess.run([npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save",
                                   "--loglevel=error", PACKAGE], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AzuriteUnavailable(f"npm install {PACKAGE} took over {INSTALL_TIMEOUT_S} s") from None
        if done.returncode != 0 or not (staging / "node_modules" / ".bin" / "azurite-blob").is_file():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise AzuriteUnavailable(f"npm install {PACKAGE} failed (exit {done.returncode}): {tail[0][:200]}")
        try:
            staging.rename(TOOLS)
        except OSError:
            if _installed() is None:  # not another run's install that won the race
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    exe = _installed()
    assert exe is not None
    return exe


@dataclass(frozen=True)
class Azurite:
    """A running Azurite blob service: ``blob_endpoint`` (``http://127.0.0.1:<port>/
    devstoreaccount1``) and its ``connection_string``."""

    blob_endpoint: str

    @property
    def connection_string(self) -> str:
        return connection_string(self.blob_endpoint)

    def env(self, blob_endpoint: str | None = None) -> dict[str, str]:
        """Environment variables that point adlfs at this server (or at ``blob_endpoint``, a
        counting proxy in front of it): the connection string, and no other Azure
        credential variable that could take precedence."""
        return {"AZURE_STORAGE_CONNECTION_STRING": connection_string(blob_endpoint or self.blob_endpoint)}

    def create_container(self, name: str) -> None:
        from azure.storage.blob import BlobServiceClient

        with BlobServiceClient.from_connection_string(self.connection_string) as svc:
            svc.create_container(name)

    def upload(self, local: Path, container: str, prefix: str, threads: int = 8) -> int:
        """Upload every file under ``local`` to ``container/prefix/…`` (relative paths kept);
        returns how many."""
        from azure.storage.blob import ContainerClient

        files = [p for p in sorted(local.rglob("*")) if p.is_file()]
        with ContainerClient.from_connection_string(self.connection_string, container) as cc:
            def put(p: Path) -> None:
                cc.upload_blob(f"{prefix}/{p.relative_to(local).as_posix()}", p.read_bytes(), overwrite=True)

            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(put, files))
        return len(files)

    def digest(self, container: str) -> dict[str, str]:
        """Blob name → ETag of everything in ``container`` (proof that a reader wrote nothing)."""
        from azure.storage.blob import ContainerClient

        with ContainerClient.from_connection_string(self.connection_string, container) as cc:
            return {b.name: str(b.etag) for b in cc.list_blobs()}


@contextlib.contextmanager
def azurite() -> Iterator[Azurite]:
    """Start Azurite's blob service on a free loopback port, wait until it answers (polling,
    with a deadline), yield it, and stop it. Raises :class:`AzuriteUnavailable` when it cannot
    be installed or started."""
    command = azurite_command()

    def argv(port: int) -> list[str]:
        return [*command, "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
                "--disableTelemetry", "--skipApiVersionCheck", "--loose", "--silent"]

    with loopback_server("Azurite", argv, f"/{ACCOUNT}?comp=list", START_TIMEOUT_S, AzuriteUnavailable) as base:
        yield Azurite(f"{base}/{ACCOUNT}")
