"""Spark 4 checkpoint features on hand-written files in Spark's own formats (the live
versions are in tests/spark/test_checkpoint_spark4.py): the v1 → v2 commit log switch, and
what is NOT an offline repartition."""

from __future__ import annotations

import json
from pathlib import Path

from streamwatch.checkpoint import batch_timeline, read_checkpoint

CONF = {"spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"}


def write(root: Path, batches: int, *, conf=lambda b: CONF, ts=lambda b: 1_700_000_000_000 + b, offset=lambda b: b, commit=None) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"q"}')
    for b in range(batches):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": ts(b), "conf": conf(b)}
        (root / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + f'\n{{"logOffset":{offset(b)}}}')
        (root / "commits" / str(b)).write_text(commit(b) if commit else 'v1\n{"nextBatchWatermarkMs":0}')
    return root


def test_commit_log_switch_v1_to_v2_is_shown(tmp_path, unchanged):
    ids = lambda b: {"0": [[f"{b}aaaaaaa-0000-4000-8000-000000000000"], [f"{b}bbbbbbb-0000-4000-8000-000000000000"]]}  # noqa: E731
    root = write(tmp_path / "cp", 4, commit=lambda b: 'v1\n{"nextBatchWatermarkMs":0}' if b < 2 else
                 "v2\n" + json.dumps({"nextBatchWatermarkMs": 0, "stateUniqueIds": ids(b)}))
    for p in (0, 1):
        d = root / "state" / "0" / str(p)
        d.mkdir(parents=True)
        for v in (1, 2):
            (d / f"{v}.changelog").write_bytes(b"c")
        for b in (2, 3):
            (d / f"{b + 1}_{ids(b)['0'][p][0]}.changelog").write_bytes(b"c")
    cp = read_checkpoint(unchanged(root))
    switch = [f for f in cp.findings if f.code == "checkpoint-format-switch"]
    assert len(switch) == 1 and "v1 to v2 at batch 2" in switch[0].message and switch[0].path.endswith("commits/2")
    assert [(m.batch_id, m.named, m.found) for m in cp.unique_ids] == [(2, 2, 2), (3, 2, 2)]
    assert not [f for f in cp.findings if f.severity == "error"], cp.findings
    rows = batch_timeline(cp)
    assert [r.unique_ids is not None for r in rows] == [False, False, True, True]


def test_partition_change_with_new_input_is_drift_not_repartition(tmp_path):
    """A batch that read input (new offsets, new trigger time) under other shuffle partitions
    is conf drift, as before: only a batch repeating its predecessor is a repartition."""
    conf = lambda b: {**CONF, "spark.sql.shuffle.partitions": "2" if b < 2 else "3"}  # noqa: E731
    cp = read_checkpoint(write(tmp_path / "drift", 3, conf=conf))
    assert cp.repartitions == ()
    assert [f.severity for f in cp.findings if f.code == "conf-drift"] == ["error"]
    # same offsets but a new trigger time: a no-data batch, not a repartition
    nodata = read_checkpoint(write(tmp_path / "nodata", 3, conf=conf, offset=lambda b: min(b, 1)))
    assert nodata.repartitions == () and "conf-drift" in {f.code for f in nodata.findings}
    # same offsets and trigger time: what StreamingCheckpointManager.repartition writes
    rep = read_checkpoint(write(tmp_path / "rep", 3, conf=conf, offset=lambda b: min(b, 1), ts=lambda b: min(b, 1)))
    assert [(r.batch_id, r.from_partitions, r.to_partitions) for r in rep.repartitions] == [(2, 2, 3)]
    assert "conf-drift" not in {f.code for f in rep.findings}
