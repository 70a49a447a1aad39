"""Checkpoints on Azure Blob Storage / ADLS Gen2 and Google Cloud Storage, read through fsspec
(adlfs, gcsfs) from real API servers on loopback: Azurite and gcp-storage-emulator, each
started once for the test session on a free port and stopped at its end.

:func:`tests.helpers.cloud.build_workspace` lays out real Spark checkpoints (the 4.2.0 matrix fixtures: a RocksDB
aggregation with changelog checkpointing and a stream-stream join) as a streamwatch workspace
whose source logs name their input files on the store under test — as Spark writes them
there — so the same tree, uploaded, reads like the local copy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.helpers.azurite import AzuriteUnavailable, azurite
from tests.helpers.gcs_emulator import EmulatorUnavailable, gcs_emulator


def _session_server(name: str, client: str, serve: Callable[[], contextlib.AbstractContextManager[Any]],
                    unavailable: type[Exception], doc: str) -> Any:
    """A session fixture called ``name``: the server ``serve()`` yields, for the whole session;
    skips, saying why, when the fsspec ``client`` package is missing or ``serve`` raises
    ``unavailable``."""

    def fixture() -> Iterator[Any]:
        pytest.importorskip(client, reason=f"{client} not installed (pip install -e '.[test]')")
        try:
            with serve() as server:
                yield server
        except unavailable as e:
            pytest.skip(str(e))

    fixture.__doc__ = doc
    return pytest.fixture(scope="session", name=name)(fixture)


azurite_server = _session_server(
    "azurite_server", "adlfs", azurite, AzuriteUnavailable,
    "Azurite's blob service for the session (:mod:`tests.helpers.azurite`); skips, saying why, where node/npm or "
    "the package are unavailable.")
gcs_server = _session_server(
    "gcs_server", "gcsfs", gcs_emulator, EmulatorUnavailable,
    "gcp-storage-emulator for the session (:mod:`tests.helpers.gcs_emulator`); skips, saying why, without the "
    "package or gcsfs.")
