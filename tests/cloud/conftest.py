"""Checkpoints on Azure Blob Storage / ADLS Gen2 and Google Cloud Storage, read through fsspec
(adlfs, gcsfs) from real API servers on loopback: Azurite and gcp-storage-emulator, each
started once for the test session on a free port and stopped at its end.

:func:`tests.helpers.cloud.build_workspace` lays out real Spark checkpoints (the 4.2.0 matrix fixtures: a RocksDB
aggregation with changelog checkpointing and a stream-stream join) as a streamwatch workspace
whose source logs name their input files on the store under test — as Spark writes them
there — so the same tree, uploaded, reads like the local copy.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def azurite_server():
    """Azurite's blob service for the session (:mod:`tests.helpers.azurite`); skips, saying
    why, where node/npm or the package are unavailable."""
    pytest.importorskip("adlfs", reason="adlfs not installed (pip install -e '.[test]')")
    from tests.helpers.azurite import AzuriteUnavailable, azurite

    try:
        with azurite() as server:
            yield server
    except AzuriteUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def gcs_server():
    """gcp-storage-emulator for the session (:mod:`tests.helpers.gcs_emulator`); skips, saying
    why, without the package or gcsfs."""
    pytest.importorskip("gcsfs", reason="gcsfs not installed (pip install -e '.[test]')")
    from tests.helpers.gcs_emulator import EmulatorUnavailable, gcs_emulator

    try:
        with gcs_emulator() as server:
            yield server
    except EmulatorUnavailable as e:
        pytest.skip(str(e))
