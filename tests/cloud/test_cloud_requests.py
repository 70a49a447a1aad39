"""What reading a checkpoint costs on Azure Blob Storage and Google Cloud Storage, counted on
the wire by a proxy in front of Azurite / gcp-storage-emulator (nothing mocked): the reader
lists each state partition folder once — one flat, paged listing however many versions it
holds, sizes included — and reads only the log files it parses, so the requests follow the
folders, not the files; the watch's polls follow what changed.
"""

from __future__ import annotations

import json

import pytest

from bench.inspect_bench import Shape, synthesize
from tests.helpers.cloud import count_kinds, counted_store, store_url

#: Two checkpoints with the same folders (2 operators × 3 partitions) and 4× the state files.
SMALL = Shape("small", batches=60, retained=10, files_per_batch=1, compact=10, operators=2, partitions=3,
              versions=5, snapshot_every=10, delta_bytes=16)
LARGE = Shape("large", batches=60, retained=10, files_per_batch=1, compact=10, operators=2, partitions=3,
              versions=20, snapshot_every=10, delta_bytes=16)


def _server(request, store: str):
    return request.getfixturevalue("azurite_server" if store == "azure" else "gcs_server")


def _bucket(server, store: str, name: str) -> None:
    (server.create_container if store == "azure" else server.create_bucket)(name)


@pytest.mark.parametrize("store", ["azure", "gcs"])
def test_requests_follow_folders_not_files(request, tmp_path, store):
    from streamwatch.checkpoint import read_checkpoint

    server = _server(request, store)
    _bucket(server, store, "counted")
    files = {}
    for shape in (SMALL, LARGE):
        files[shape.name] = synthesize(tmp_path / shape.name, shape)
        server.upload(tmp_path / shape.name, "counted", shape.name)
    counts, read = {}, {}
    with counted_store(store, server) as (proxy, options):
        for shape in (SMALL, LARGE):
            proxy.take()
            read[shape.name] = read_checkpoint(store_url(store, "counted", shape.name), full=False, sizes=False,
                                               storage_options=options)
            counts[shape.name] = count_kinds(store, proxy.take())
    small, large = counts["small"], counts["large"]
    assert files["large"] > 2 * files["small"]
    # the same folders, 4× the state files: the same requests (gcsfs pages 1,000 objects a listing)
    assert sum(large.values()) == sum(small.values()), counts
    folders = LARGE.operators * LARGE.partitions
    # one listing per partition folder, per operator folder and its metadata, and a handful for
    # the root, offsets/, commits/, sources/ (6 partitions here: 20 on GCS, 22 on Azure)
    assert large["list"] <= folders + 3 * LARGE.operators + 10, counts
    # reads: the retained offsets/commits, the source log since its last compaction, metadata
    assert large.get("get", 0) <= 2 * LARGE.retained + LARGE.compact + 2 * LARGE.operators + 6, counts
    assert large.get("head", 0) <= 2 * LARGE.operators + 2, counts  # the root's and missing folders' look-ups
    assert sum(large.values()) < files["large"] // 2, counts
    for shape in (SMALL, LARGE):
        here = read_checkpoint(tmp_path / shape.name, full=False, sizes=True)
        there = read[shape.name]
        assert [p.versions for op in there.state for p in op.partitions] == [p.versions for op in here.state for p in op.partitions]
        assert [op.bytes for op in there.state] == [op.bytes for op in here.state]  # sizes came with the listings
        assert sorted(f.code for f in there.findings) == sorted(f.code for f in here.findings)


def _put(server, store: str, bucket: str, key: str, text: str) -> None:
    if store == "azure":
        from azure.storage.blob import ContainerClient

        with ContainerClient.from_connection_string(server.connection_string, bucket) as cc:
            cc.upload_blob(key, text.encode(), overwrite=True)
    else:
        server.fs().pipe_file(f"{bucket}/{key}", text.encode())


@pytest.mark.parametrize("store", ["azure", "gcs"])
def test_watch_polls_cost_what_changed(request, store):
    """An idle poll looks up the next offsets/ and commits/ files only; a new batch adds a
    handful of requests — on a checkpoint of 30 batches as on one of 3."""
    from streamwatch.analysis.records import CheckpointBatch
    from streamwatch.analysis.session import CheckpointWatch

    server = _server(request, store)
    bucket = "polled"
    _bucket(server, store, bucket)
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_790_000_000_000, "conf": {}}

    def batch(prefix: str, b: int) -> None:
        _put(server, store, bucket, f"{prefix}/offsets/{b}", "v1\n" + json.dumps(meta) + '\n{"logOffset":-1}')
        _put(server, store, bucket, f"{prefix}/commits/{b}", 'v1\n{"nextBatchWatermarkMs":0}')

    costs = {}
    for size in (3, 30):
        prefix = f"q{size}"
        _put(server, store, bucket, f"{prefix}/metadata", json.dumps({"id": f"id-{size}"}))
        for b in range(size):
            batch(prefix, b)
        with counted_store(store, server) as (proxy, options):
            watch = CheckpointWatch([store_url(store, bucket, prefix)], history=2, storage_options=options,
                                    rediscover_s=None)
            opened = [r.batch_id for r in watch.open() if isinstance(r, CheckpointBatch)]
            proxy.take()
            idle = [len(proxy.take()) for _ in range(3) if watch.poll() is not None]
            batch(prefix, size)
            got = [r.batch_id for r in watch.poll() if isinstance(r, CheckpointBatch)]
            one = count_kinds(store, proxy.take())
        assert opened == [size - 2, size - 1] and got == [size], (opened, got)
        assert idle == [idle[0]] * 3 and idle[0] <= 4, idle  # the next offsets/ and commits/ look-ups
        assert sum(one.values()) <= idle[0] + 8 and not one.get("list"), one  # no listing for a new batch
        costs[size] = (idle[0], sum(one.values()))
    assert costs[3] == costs[30], costs


def test_missing_object_store_library_names_the_install(monkeypatch, tmp_path):
    """Without adlfs or gcsfs every command that reads a checkpoint exits 4 with one line
    naming the ``pip install`` to run (no server needed: the import fails first)."""
    import sys

    from click.testing import CliRunner

    from streamwatch.cli import main

    monkeypatch.setitem(sys.modules, "adlfs", None)  # import adlfs → ImportError, as when not installed
    monkeypatch.setitem(sys.modules, "gcsfs", None)
    monkeypatch.setitem(sys.modules, "gcsfs.core", None)
    cases = {"gs://b/cp": "pip install gcsfs (streamwatch's [gcs] extra)",
             "abfss://c@acct.dfs.core.windows.net/cp": "pip install adlfs (streamwatch's [azure] extra)",
             "az://c/cp": "pip install adlfs (streamwatch's [azure] extra)"}
    for url, install in cases.items():
        for args in (["inspect", url], ["inspect", "--recursive", url], ["state", url], ["retention", url],
                     ["diff", url, url], ["watch", url, "--log", "--once"]):
            r = CliRunner().invoke(main, args)
            assert r.exit_code == 4, (args, r.output, r.exception)
            assert r.stderr.count("\n") == 1 and install in r.stderr and "not installed" in r.stderr, (args, r.stderr)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")  # the emulator route imports gcsfs too
    r = CliRunner().invoke(main, ["inspect", "gs://b/cp"])
    assert r.exit_code == 4 and "pip install gcsfs" in r.stderr


def test_azure_url_without_account_or_with_another_account(monkeypatch):
    """``az://`` needs an account from the environment; an abfss:// URL naming another account
    than the connection string is refused rather than read from the wrong account."""
    pytest.importorskip("adlfs", reason="adlfs not installed (pip install -e '.[test]')")
    from click.testing import CliRunner

    from streamwatch.cli import main
    from tests.helpers.azurite import connection_string

    for k in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME"):
        monkeypatch.delenv(k, raising=False)
    r = CliRunner().invoke(main, ["inspect", "az://c/cp"])
    assert r.exit_code == 4 and "no Azure storage account" in r.stderr and "AZURE_STORAGE_ACCOUNT_NAME" in r.stderr
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", connection_string("http://127.0.0.1:9/devstoreaccount1"))
    r = CliRunner().invoke(main, ["inspect", "abfss://c@prod.dfs.core.windows.net/cp"])
    assert r.exit_code == 4 and "names storage account 'prod'" in r.stderr and "'devstoreaccount1'" in r.stderr


def test_urls_keep_the_azure_account():
    """Paths found under an abfss:// root are named with its account (adlfs paths drop it);
    Spark's abfss://…@account… file URIs map to adlfs paths."""
    from streamwatch.analysis.probe import storage_path
    from streamwatch.checkpoint.fs import url_of

    root = "abfss://cps@acct.dfs.core.windows.net/ws"
    assert url_of(root, "cps/ws/checkpoints/a") == "abfss://cps@acct.dfs.core.windows.net/ws/checkpoints/a"
    assert url_of("az://cps/ws", "cps/ws/x") == "az://cps/ws/x"
    assert url_of("gs://b/ws", "b/ws/x") == "gs://b/ws/x"
    assert url_of("/local/ws", "/local/ws/x") == "/local/ws/x"
    assert storage_path("abfss://cps@acct.dfs.core.windows.net/ws/f.json") == "cps/ws/f.json"
    assert storage_path("wasbs://cps@acct.blob.core.windows.net/ws/f.json") == "cps/ws/f.json"
    assert storage_path("gs://b/ws/f.json") == "b/ws/f.json"


def test_help_names_the_cloud_urls():
    from click.testing import CliRunner

    from streamwatch.cli import main

    for cmd in ("watch", "retention", "diff"):
        out = CliRunner().invoke(main, [cmd, "--help"]).output
        assert "abfss://" in out and "gs://" in out and "STORAGE_EMULATOR_HOST" in out, cmd



def test_wrong_azure_key_is_one_line_exit_4(azurite_server, monkeypatch):
    """Azurite refuses a request signed with another key (403): every command says so in one
    line and exits 4 — Azure's own exception never escapes as a traceback."""
    import base64

    from adlfs import AzureBlobFileSystem
    from click.testing import CliRunner

    from streamwatch.cli import main
    from tests.helpers.azurite import ACCOUNT_KEY

    azurite_server.create_container("creds")
    wrong = azurite_server.connection_string.replace(ACCOUNT_KEY, base64.b64encode(b"x" * 64).decode())
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", wrong)
    AzureBlobFileSystem.clear_instance_cache()  # fsspec reuses filesystems; this one must read the variable
    url = store_url("azure", "creds", "cp")
    for args in (["inspect", url], ["inspect", "--recursive", url], ["state", url], ["retention", url],
                 ["diff", url, url], ["watch", url, "--log", "--once"]):
        r = CliRunner().invoke(main, args)
        assert r.exit_code == 4, (args, r.output, r.exception)
        assert r.stderr.count("\n") == 1 and "authenticate" in r.stderr, (args, r.stderr)
    AzureBlobFileSystem.clear_instance_cache()
