"""Every checkpoint and log in ../shared/corpus/spark (written by Apache Spark) is read without
error, and the facts in ../shared/corpus/EXPECTED.md hold."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import (
    batch_timeline,
    read_checkpoint,
    read_commit_file,
    read_file_sink_log,
    read_file_source_log,
    read_offsets_log,
)
from streamwatch.cli import main

pytestmark = pytest.mark.corpus


@pytest.fixture(autouse=True)
def _corpus_read_only(corpus, unchanged):
    """Every test here reads ../shared/corpus: prove it is byte-identical afterwards."""
    unchanged(corpus / "spark")


def _checkpoints(corpus):
    spark = corpus / "spark"
    return sorted(p.parent for p in spark.rglob("metadata") if p.is_file() and "state" not in p.parts)


def test_every_corpus_checkpoint_reads_without_error(corpus, unchanged):
    root = unchanged(corpus / "spark")
    cps = _checkpoints(corpus)
    assert len(cps) >= 25
    for path in cps:
        cp = read_checkpoint(path)
        assert cp.query_id and len(cp.query_id) == 36, path
        assert cp.latest_batch_id is not None, path
        assert all(f.severity in ("info", "warning", "error") for f in cp.findings)
        assert not [f for f in cp.findings if f.code in ("unparsable-file", "unknown-log-version", "empty-file")], path
        rows = batch_timeline(cp)
        assert rows[-1].batch_id == max(cp.latest_batch_id, cp.last_committed_batch_id or -1)
    assert root.is_dir()


def test_every_corpus_checkpoint_through_the_cli(corpus):
    runner = CliRunner()
    for path in _checkpoints(corpus):
        for extra in ([], ["--json"], ["--batches"]):
            result = runner.invoke(main, ["inspect", str(path), *extra])
            assert result.exit_code == 0, (path, extra, result.output)
            assert "Traceback" not in result.output


def test_inconsistent_checkpoint_gap_is_an_error(corpus):
    cp = read_checkpoint(corpus / "spark" / "checkpoint-test-offsetId-commitId-inconsistent")
    assert cp.query_id == "d4358946-170c-49a7-823b-d8e4e9126616"
    assert cp.offset_batch_ids == (1, 2, 4)
    assert [e.watermark_ms for e in cp.offsets] == [5000] * 3
    assert {e.timestamp_ms for e in cp.offsets} == {1531292030005}
    assert [e.sources for e in cp.offsets] == [("1",), ("2",), ("4",)]
    assert cp.offsets[-1].conf["spark.sql.shuffle.partitions"] == "5"
    codes = {f.code: f for f in cp.findings}
    assert codes["previous-offsets-missing"].severity == "error"
    assert "offsets/3" in codes["previous-offsets-missing"].message
    assert "3" in codes["offsets-gap"].message
    assert codes["in-flight-batch"].severity == "info"


def test_offset_log_2_1_0(corpus):
    entries, findings = read_offsets_log(corpus / "spark" / "offset-log-version-2.1.0")
    assert findings == []
    latest = entries[-1]
    assert latest.batch_id == 0 and latest.version == 1
    assert latest.sources == ('{"logOffset":345}', '{"topic-0":{"0":1}}')
    assert latest.parsed[0].kind == "file" and latest.parsed[0].log_offset == 345
    assert latest.parsed[1].kind == "kafka" and latest.parsed[1].kafka_partitions == {"topic-0": {"0": 1}}
    assert (latest.watermark_ms, latest.timestamp_ms) == (0, 1480981499528)
    assert "spark.sql.streaming.stateStore.rowChecksum.enabled" not in latest.conf


def test_offset_map_v2(corpus):
    entries, findings = read_offsets_log(corpus / "spark" / "offset-map")
    assert findings == []
    latest = entries[-1]
    assert latest.batch_id == 3 and latest.version == 2
    assert latest.source_ids == ("0",) and latest.sources == ("3",)
    assert (latest.watermark_ms, latest.timestamp_ms) == (0, 1758651405232)
    assert [e.sources[0] for e in entries] == ["0", "1", "2", "3"]


def test_tws_unsaferow_operator_metadata_v2(corpus):
    cp = read_checkpoint(corpus / "spark" / "checkpoint-version-4.0.0-tws-unsaferow")
    assert cp.latest_batch_id == 1
    assert cp.offsets[-1].conf["spark.sql.streaming.stateStore.encodingFormat"] == "unsaferow"
    (op,) = cp.state
    assert (op.operator_id, op.name, op.metadata_version) == (0, "transformWithStateExec", 2)
    assert op.stores[0].num_partitions == 5
    assert [(v.name, v.kind, v.ttl_enabled) for v in op.state_variables] == [("countState", "ValueState", False)]
    assert (op.time_mode, op.output_mode) == ("NoTime", "Update")


def test_3_5_1_dedup_has_no_encoding_format(corpus):
    cp = read_checkpoint(corpus / "spark" / "checkpoint-version-3.5.1-streaming-deduplication")
    assert "spark.sql.streaming.stateStore.encodingFormat" not in cp.offsets[-1].conf


@pytest.mark.parametrize(
    "folder,version,wm,ids",
    [
        ("testCommitLogV1", 1, 1, None),
        ("testCommitLogV2", 2, 0, {"0": [["unique_id1", "unique_id2"], ["unique_id3", "unique_id4"]], "1": [["unique_id5", "unique_id6"], ["unique_id7", "unique_id8"]]}),
        ("testCommitLogV2-empty-unique-id", 2, 0, {}),
    ],
)
def test_commit_logs(corpus, folder, version, wm, ids):
    entry, findings = read_commit_file(corpus / "spark" / folder / "testCommitLog")
    assert findings == []
    assert (entry.version, entry.next_watermark_ms) == (version, wm)
    assert entry.state_unique_ids == ids


def test_file_source_log_compacted(corpus):
    log, findings = read_file_source_log(corpus / "spark" / "file-source-log-version-2.1.0")
    assert findings == []
    assert [tuple(e) for e in log.entries] == [
        ("/a/b/0", 1480730949000, 0),
        ("/a/b/1", 1480730950000, 1),
        ("/a/b/2", 1480730950000, 2),
        ("/a/b/3", 1480730950000, 3),
        ("/a/b/4", 1480730951000, 4),
    ]
    assert log.compact_batch_ids == (2,) and log.compact_interval == 3


def test_file_sink_log_with_delete(corpus):
    log, findings = read_file_sink_log(corpus / "spark" / "file-sink-log-version-2.1.0")
    assert findings == []
    live = log.live_files
    assert [e.path for e in live] == [f"/a/b/{i}" for i in range(1, 10)]  # version B: /a/b/0 deleted
    assert [e.action for e in log.entries].count("delete") == 1
    nine = live[-1]
    assert (nine.size, nine.modification_time_ms, nine.block_replication, nine.block_size) == (900, 900, 3, 200)
    assert all((e.size, e.block_replication) == (100 * int(e.path[-1]), 1) for e in live[:-1])
    assert log.compact_batch_ids == (7,)


def test_2_1_0_checkpoint_does_not_record_shuffle_partitions(corpus):
    cp = read_checkpoint(corpus / "spark" / "checkpoint-version-2.1.0")
    assert [e.sources for e in cp.offsets] == [("0",), ("2",)]
    assert all(e.conf == {} and e.watermark_ms == 0 for e in cp.offsets)
    assert "conf-not-recorded" in {f.code for f in cp.findings}


def test_2_3_1_checkpoints(corpus):
    s = corpus / "spark"
    assert read_checkpoint(s / "checkpoint-version-2.3.1-without-commit-log-metadata").offsets_for(1).watermark_ms == 5000
    multi = read_checkpoint(s / "checkpoint-version-2.3.1-for-multi-watermark-policy")
    assert all(len(e.sources) == 2 for e in multi.offsets)
    assert multi.offsets_for(1).watermark_ms == 10000 and multi.offsets_for(1).conf["spark.sql.shuffle.partitions"] == "10"
    fmg = read_checkpoint(s / "checkpoint-version-2.3.1-flatMapGroupsWithState-state-format-1")
    assert fmg.commit_for(1).next_watermark_ms is None and fmg.commit_for(1).version == 1
    join = read_checkpoint(s / "checkpoint-version-2.4.0-streaming-join")
    assert join.offsets_for(0).sources == ("0", "0")
    assert join.offsets_for(0).conf["spark.sql.streaming.multipleWatermarkPolicy"] == "min"


def test_4_0_0_joins_and_operator_metadata_v1(corpus):
    base = corpus / "spark" / "checkpoint-version-4.0.0"
    for provider in ("hdfs", "rocksdb"):
        for q in ("join1", "join2"):
            cp = read_checkpoint(base / provider / q)
            assert [len(e.sources) for e in cp.offsets] == [2] * 5
            assert [e.watermark_ms for e in cp.offsets] == [0, 0, 5000, 5000, 9000]
    (op,) = read_checkpoint(base / "hdfs" / "join2").state
    assert (op.name, op.metadata_version) == ("symmetricHashJoin", 1)
    assert [s.name for s in op.stores] == ["left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"]
    assert {s.num_partitions for s in op.stores} == {5}
    (agg,) = read_checkpoint(base / "rocksdb" / "agg").state
    assert (agg.name, [s.name for s in agg.stores], agg.stores[0].num_partitions) == ("stateStoreSave", ["default"], 5)
    assert agg.provider == "rocksdb"  # from the recorded conf: the store files are not in the corpus


def test_operator_metadata_folder_is_not_a_checkpoint(corpus):
    from streamwatch.checkpoint import CheckpointError

    with pytest.raises(CheckpointError, match="not a checkpoint"):
        read_checkpoint(corpus / "spark" / "checkpoint-version-4.0.0" / "hdfs" / "join2" / "state" / "0" / "_metadata")


def test_loose_offsets_files(corpus):
    from streamwatch.checkpoint.offsets import parse_source_offset

    s = corpus / "spark"
    assert parse_source_offset((s / "file-source-offset-version-2.1.0-json.txt").read_text()).log_offset == 345
    assert parse_source_offset((s / "file-source-offset-version-2.1.0-long.txt").read_text()).fields["value"] == 345
    kafka = parse_source_offset((s / "kafka-source-offset-version-2.1.0.txt").read_text())
    assert kafka.kind == "kafka" and kafka.kafka_partitions == {"topic1": {"0": 456, "1": 789}, "topic2": {"0": 0}}
