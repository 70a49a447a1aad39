"""Named sources and named sinks (Spark 4.2+), on checkpoints pyspark 4.2 and 4.3 wrote
(``tests/fixtures/matrix/<version>/``, from ``scripts/version_matrix.py``; no JVM here).

* ``named``: two JSON file sources named with ``DataStreamReader.name`` ("orders" reads
  ``in_a``: 3 files of 3 rows; "refunds" reads ``in_b``: 2 files of 2 rows, one file a
  trigger each) — offsets log v2 (``OffsetMap``, lines ``name:{offset}``) and file-source logs
  under ``sources/<name>/``; the sink named "totals" (commit log v3).
* ``sink_named_v2``: a RocksDB count with checkpoint format v2 and its sink named "totals":
  commit log v3 with ``stateUniqueIds`` and ``sinkMetadataMap``.

Held against what Spark reported (``facts.json``: each batch's ``numInputRows``): the files
streamwatch says a batch read hold exactly the rows Spark read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from streamwatch.analysis.journeys import consumed_files, file_entries
from streamwatch.checkpoint.jsonout import batch_doc, summary_doc
from streamwatch.checkpoint.logs import MAX_COMMITS_VERSION, parse_commit, parse_offsets
from streamwatch.checkpoint.reader import read_checkpoint

MATRIX = Path(__file__).resolve().parent.parent / "fixtures" / "matrix"
VERSIONS = ("4.2.0", "4.3.0")
CASES = ("named", "sink_named_v2")
SINK = "totals"
#: the folder each named source reads (scripts/version_matrix.py ``write_named``)
INPUT_OF = {"orders": "in_a", "refunds": "in_b", "0": "in"}
CLI = str(Path(sys.executable).parent / "streamwatch")


def _case(version: str, name: str) -> dict[str, Any]:
    facts = MATRIX / version / "facts.json"
    if not facts.is_file():
        pytest.fail(f"{facts} is missing (being regenerated? look again in a minute)")
    case = json.loads(facts.read_text())["cases"].get(name)
    assert case is not None and "error" not in case, f"{version} {name}: {case and case.get('error')}"
    return case


def _cp(version: str, name: str) -> Path:
    return MATRIX / version / _case(version, name)["checkpoint"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250"}  # tables wide enough that no path is cut
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300, env=env)


def _rows(version: str, case: str, source: str, uri: str) -> int:
    """Rows of a file a source read: the lines of its copy in the fixture (the log holds the
    absolute path it had when Spark wrote it; only its name is used)."""
    name = Path(unquote(urlparse(uri).path)).name
    text = (MATRIX / version / case / INPUT_OF[source] / name).read_text()
    return sum(1 for line in text.splitlines() if line.strip())


BOTH = [(v, c) for v in VERSIONS for c in CASES]
BOTH_IDS = [f"{v}-{c}" for v, c in BOTH]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_named_cases_were_written(version):
    for name in CASES:
        assert _cp(version, name).is_dir()


@pytest.mark.parametrize(("version", "case"), BOTH, ids=BOTH_IDS)
def test_inspect_check_exits_0_on_a_healthy_named_checkpoint(version, case):
    r = _run("inspect", str(_cp(version, case)), "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    cp = read_checkpoint(str(_cp(version, case)))
    assert not [f for f in cp.findings if f.severity in ("error", "warning")], cp.findings


@pytest.mark.parametrize("version", VERSIONS)
def test_named_sources_are_known_by_name_with_their_logs(version):
    path = _cp(version, "named")
    cp = read_checkpoint(str(path))
    assert sorted(s.name for s in cp.sources) == ["orders", "refunds"]
    assert all(s.index is None for s in cp.sources)  # a named source has no index
    assert all(o.version == 2 for o in cp.offsets)
    assert {sid for o in cp.offsets for sid in o.source_ids} == {"orders", "refunds"}
    by_name = {s.name: s for s in cp.sources}
    assert [e.path.rsplit("/", 2)[-2] for e in by_name["orders"].entries] == ["in_a"] * 3
    assert [e.path.rsplit("/", 2)[-2] for e in by_name["refunds"].entries] == ["in_b"] * 2
    doc = summary_doc(cp)
    logs = {s["id"]: s["file_log"] for s in doc["sources"]}
    assert set(logs) == {"orders", "refunds"}
    assert logs["orders"]["path"].endswith("sources/orders") and logs["orders"]["entries"] == 3
    assert logs["refunds"]["path"].endswith("sources/refunds") and logs["refunds"]["entries"] == 2
    r = _run("inspect", str(path))
    assert r.returncode == 0, r.stderr
    assert "sources/orders: 3 files" in r.stdout and "sources/refunds: 2 files" in r.stdout
    assert "unexpected" not in r.stdout


@pytest.mark.parametrize(("version", "case"), BOTH, ids=BOTH_IDS)
def test_files_read_per_batch_hold_the_rows_spark_read(version, case):
    path = _cp(version, case)
    cp = read_checkpoint(str(path))
    fb = cp.files_by_batch()
    spark = {p["batchId"]: p["numInputRows"] for p in _case(version, case)["progress"]}
    assert spark
    for batch_id, rows in spark.items():
        got = 0
        for log, _ in fb.sources:
            files = fb.files_read(batch_id, log.name)
            assert files is not None, f"batch {batch_id}: files of {log.name} not known"
            got += sum(_rows(version, case, log.name, e.path) for e in files)
        assert got == rows, f"batch {batch_id}"
        doc = batch_doc(cp, batch_id)["batch"]
        assert sum(_rows(version, case, str(f["source"]), f["path"]) for f in doc["files_read"]) == rows
    # and through the CLI, by name: batch 2 read orders' third file only (refunds had no more)
    if case == "named":
        r = _run("inspect", str(path), "--batch", "2", "--json")
        assert r.returncode == 0, r.stderr
        b = json.loads(r.stdout)["batch"]
        assert [(f["source"], Path(f["path"]).name) for f in b["files_read"]] == [("orders", "part-00002.json")]
        assert sorted(b["source_log_batches"], key=lambda x: x["source"]) == [
            {"source": "orders", "log_batches": [2, 2]}, {"source": "refunds", "log_batches": []}]
        r = _run("inspect", str(path), "--batches", "--json")
        assert [row["files_read"] for row in json.loads(r.stdout)["timeline"]] == [2, 2, 1]
        r = _run("inspect", str(path), "--batch", "0")
        assert "orders" in r.stdout and "refunds" in r.stdout and "part-00000.json" in r.stdout


@pytest.mark.parametrize("version", VERSIONS)
def test_lineage_and_journeys_credit_named_sources(version):
    cp = read_checkpoint(str(_cp(version, "named")))
    read = sorted((f.source, Path(f.path).name, f.batch_id) for f in file_entries(cp))
    assert read == [("orders", "part-00000.json", 0), ("orders", "part-00001.json", 1), ("orders", "part-00002.json", 2),
                    ("refunds", "part-00000.json", 0), ("refunds", "part-00001.json", 1)]
    assert all(c.committed for c in consumed_files({"q": cp}).values())


@pytest.mark.parametrize("version", VERSIONS)
def test_retention_plans_only_the_named_source_folders(version):
    path = _cp(version, "named")
    for extra in ((), ("--min-batches", "1")):
        r = _run("retention", str(path), "--json", *extra)
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        logs = [lg for lg in doc["file_logs"] if lg["kind"] == "source"]
        assert sorted((lg["name"], lg["index"]) for lg in logs) == [("orders", "orders"), ("refunds", "refunds")]
        for lg in logs:
            folder = path / "sources" / lg["name"]
            assert Path(lg["path"]) == folder
            assert set(lg["delete_next"]) <= {p.name for p in folder.iterdir()}
            assert lg["bytes"] == sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
    text = _run("retention", str(path)).stdout
    assert "sources/orders:" in text and "sources/refunds:" in text and "sources/None" not in text


@pytest.mark.parametrize("version", VERSIONS)
def test_diff_pairs_named_sources_by_name(version):
    r = _run("diff", str(_cp(version, "named")), "--from-batch", "0", "--to-batch", "2", "--json")
    assert r.returncode == 1, r.stderr  # changes found
    moved = {s["id"]: s["files_added"] for s in json.loads(r.stdout)["sources"]}
    assert moved == {"orders": 2, "refunds": 1}


@pytest.mark.parametrize(("version", "case"), BOTH, ids=BOTH_IDS)
def test_commit_log_v3_names_the_sink(version, case):
    path = _cp(version, case)
    cp = read_checkpoint(str(path))
    assert cp.commits and all(c.version == 3 for c in cp.commits)
    for c in cp.commits:
        s = c.active_sink
        assert s is not None and s.name == SINK and s.active and s.api_version == "DSv2"
        assert s.provider is not None and s.provider_short == "NoopTable"
        assert s.commit_offset is None  # a noop sink keeps no offset: Spark writes "-"
    doc = summary_doc(cp)
    fmt = 2 if case == "sink_named_v2" else 1  # commit log v3 is no format: the ids tell
    assert doc["named_sink"]["name"] == SINK and doc["checkpoint_format"]["version"] == fmt
    assert doc["checkpoint_format"]["log_version"] == 3 and doc["checkpoint_format"]["switches"] == []
    assert all(c.checkpoint_format == fmt for c in cp.commits)
    assert batch_doc(cp, 0)["batch"]["commit"]["sinks"][0]["name"] == SINK
    r = _run("inspect", str(path))
    assert f"sink: {SINK} (NoopTable, DSv2)" in r.stdout, r.stdout
    assert f"checkpoint format  v{fmt} (commit log v3)" in r.stdout
    assert json.loads(_run("inspect", str(path), "--json").stdout)["named_sink"]["provider"].endswith("NoopTable$")


@pytest.mark.parametrize("version", VERSIONS)
def test_commit_log_v3_keeps_the_state_unique_ids(version):
    cp = read_checkpoint(str(_cp(version, "sink_named_v2")))
    assert all(c.state_unique_ids for c in cp.commits)
    checked = [m for m in cp.unique_ids if m.checked]
    assert len(checked) == len(cp.commits)
    assert all(m.named and m.found == m.named and not m.missing for m in checked)
    assert not [f for f in cp.findings if f.severity in ("error", "warning")]


# --- the v3 parser's edges (no fixture) --------------------------------------------------

def _commit(body: dict[str, Any] | str, version: int = 3):
    text = body if isinstance(body, str) else json.dumps(body)
    return parse_commit(f"v{version}\n{text}".encode(), 7, "commits/7")


def test_v3_without_sinks_or_ids_reads_as_v1_did():
    e, fs = _commit({"nextBatchWatermarkMs": 5})
    assert not fs and e is not None
    assert (e.version, e.next_watermark_ms, e.state_unique_ids, e.sinks, e.active_sink) == (3, 5, None, (), None)


def test_v3_with_an_evolved_sink_names_the_active_one():
    e, fs = _commit({"nextBatchWatermarkMs": 0, "sinkMetadataMap": {
        "old": {"sinkName": "old", "commitOffset": "-", "providerName": "a.b.ParquetSink", "apiVersion": "DSv1", "isActive": False},
        "new": {"sinkName": "new", "commitOffset": {"v": 3}, "providerName": "x.DeltaTable$", "apiVersion": "DSv2", "isActive": True}}})
    assert not fs and e is not None
    assert [s.name for s in e.sinks] == ["old", "new"]
    assert e.active_sink is not None and e.active_sink.name == "new" and e.active_sink.provider_short == "DeltaTable"
    assert e.active_sink.commit_offset == '{"v":3}'


def test_a_malformed_sink_map_is_an_error():
    for bad in ([], {"s": "x"}):
        e, fs = _commit({"nextBatchWatermarkMs": 0, "sinkMetadataMap": bad})
        assert e is not None and [f.code for f in fs] == ["unparsable-file"]


def test_a_newer_commit_log_is_refused_naming_what_is_supported():
    e, fs = _commit({"nextBatchWatermarkMs": 0}, version=MAX_COMMITS_VERSION + 1)
    assert e is None and [f.code for f in fs] == ["unknown-log-version"]
    assert f"v1 to v{MAX_COMMITS_VERSION}" in fs[0].message and "Spark 4.3" in fs[0].message


def test_offset_map_lines_are_found_by_name_not_position():
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
    e, fs = parse_offsets(f'v2\n{meta}\nrefunds:{{"logOffset":4}}\norders:-'.encode(), 3, "offsets/3")
    assert not fs and e is not None
    assert e.source_ids == ("refunds", "orders") and e.position("orders") == 1 and e.position("0") is None
    assert e.parsed[0] is not None and e.parsed[0].log_offset == 4 and e.sources[1] is None


def test_a_named_source_added_or_dropped_reads_nothing_while_absent():
    """Source evolution (Spark 4.2+): "refunds" joins at batch 1 (its log starts afresh) and
    "orders" leaves at batch 2 (its folder stays): the batches without a source's line read
    nothing from it, never "unknown"."""
    from streamwatch.model.filelogs import FileEntry, SourceLog
    from streamwatch.model.sourcebatches import FilesByBatch

    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
    lines = {0: ['orders:{"logOffset":0}'], 1: ['orders:{"logOffset":1}', 'refunds:{"logOffset":0}'],
             2: ['refunds:{"logOffset":1}']}
    offs = []
    for b, ls in lines.items():
        e, fs = parse_offsets(("v2\n" + meta + "\n" + "\n".join(ls)).encode(), b, f"offsets/{b}")
        assert e is not None and not fs
        offs.append(e)
    logs = [SourceLog(path="sources/orders", name="orders", entries=(FileEntry("a0", 0, 0), FileEntry("a1", 0, 1))),
            SourceLog(path="sources/refunds", name="refunds", entries=(FileEntry("b0", 0, 0), FileEntry("b1", 0, 1)))]
    fb = FilesByBatch.build(logs, offs)
    assert [[e.path for e in fb.files_read(b) or ()] for b in range(3)] == [["a0"], ["a1", "b0"], ["b1"]]
    assert fb.known(0) and fb.known(2) and not fb.known(3)
    assert sorted((s, e.path, b) for s, e, b in fb.query_batches()) == [
        ("orders", "a0", 0), ("orders", "a1", 1), ("refunds", "b0", 1), ("refunds", "b1", 2)]
