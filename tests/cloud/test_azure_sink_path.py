"""The sink folder found beside a checkpoint on Azure (a streamwatch workspace's
``…/checkpoints/<pipeline>/<layer>`` → ``…/tables/<pipeline>/<layer>``) is named with its full
``abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/…`` URL — the way it was uploaded to
Azurite — so the path shown (and reopened by ``retention``) still names the storage account."""

from __future__ import annotations

import json
import shutil

from tests.helpers.cloud import MATRIX


def test_discovered_sink_keeps_the_storage_account(azurite_server, tmp_path, monkeypatch):
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.checkpoint.reader import read_checkpoint
    from tests.helpers.azurite import ACCOUNT

    container, prefix = "sinkpath", "w"
    tree = tmp_path / "tree"
    shutil.copytree(MATRIX / "bounded" / "cp", tree / "ws" / "checkpoints" / "p" / "l")
    log = tree / "ws" / "tables" / "p" / "l" / "_spark_metadata" / "0"
    log.parent.mkdir(parents=True)
    # a file sink log as FileStreamSinkLog writes it: version line, then one SinkFileStatus per line
    part = f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/{prefix}/ws/tables/p/l/part-00000.json"
    log.write_text("v1\n" + json.dumps({"path": part, "size": 2, "isDir": False, "modificationTime": 1,
                                          "blockReplication": 1, "blockSize": 1, "action": "add"}))
    (log.parents[1] / "part-00000.json").write_text("{}")
    azurite_server.create_container(container)
    azurite_server.upload(tree, container, prefix)
    for k, v in azurite_server.env().items():
        monkeypatch.setenv(k, v)

    base = f"abfss://{container}@{ACCOUNT}.dfs.core.windows.net/{prefix}/ws"
    cp = read_checkpoint(f"{base}/checkpoints/p/l")
    assert cp.sink_path == f"{base}/tables/p/l"
    # the shown URL opens the same folder again: the blobs uploaded under tables/p/l
    storage, inner = open_storage(cp.sink_path)
    assert sorted(storage.names(inner) or []) == ["_spark_metadata", "part-00000.json"]
    assert cp.sink is not None and [(e.batch_id, e.path) for e in cp.sink.entries] == [(0, part)]
