"""A file source's log numbers its batches itself (``sources/<i>/<n>``); query batch K read
the source-log batches after ``offsets/K-1``'s ``logOffset`` up to ``offsets/K``'s. Checked on
checkpoints Spark 3.5 wrote (``tests/fixtures/spark35/source-batches``, made by
``scripts/source_batches_fixture.py`` with Spark's own per-batch facts; no JVM here), and on
the edges: no-data batches, a source with no offset yet, offsets deleted by retention (the
files of a batch are then unknown, never guessed), a log offset that goes back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rich.console import Console

from streamwatch.analysis.journeys import consumed_files, file_entries
from streamwatch.analysis.lineage import file_journey
from streamwatch.analysis.lineage_text import journey_lines
from streamwatch.checkpoint import batch_timeline, read_checkpoint, report
from streamwatch.checkpoint.jsonout import batch_doc
from streamwatch.checkpoint.logs import parse_offsets
from streamwatch.model.checkpoint import Checkpoint, FileEntry, SourceLog
from streamwatch.model.runtime import QueryPlan, RunPlan
from streamwatch.model.sourcebatches import FilesByBatch, SourceBatches
from tests.helpers.source_batches import assert_scenario_is_telling, check, name

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "spark35" / "source-batches"


def facts() -> dict:
    return json.loads((FIXTURE / "facts.json").read_text())


def test_spark35_fixture_files_per_batch_match_spark(unchanged):
    unchanged(FIXTURE)
    f = facts()
    assert f["spark"].startswith("3.5.")
    assert_scenario_is_telling(f)
    check(FIXTURE, f)


def test_spark35_windowed_is_the_reported_case():
    """Spark read 50, 0, 51, 0, … rows; the source's log has one batch per file, so crediting
    its batch ids to the query's said 1, 1, 1, 1, 0, 0, 0, 0 files."""
    cp = read_checkpoint(FIXTURE / "checkpoints" / "windowed", full=True)
    assert cp.sources[0].batch_ids == (0, 1, 2, 3) and cp.offset_batch_ids == tuple(range(8))
    assert [r.files_read for r in batch_timeline(cp)] == [1, 0, 1, 0, 1, 0, 1, 0]
    assert [sum(b["numInputRows"]) for b in facts()["queries"][0]["batches"]] == [50, 0, 51, 0, 52, 0, 53, 0]


def _copy(tmp_path: Path, query: str) -> Path:
    dst = tmp_path / query
    shutil.copytree(FIXTURE / "checkpoints" / query, dst)
    return dst


def test_offsets_gone_make_the_files_unknown(tmp_path):
    """Retention deleted offsets/0–2: batch 3's files are unknown (offsets/2 is gone), later
    batches still known; the files read before are credited to no batch, yet committed."""
    cp_path = _copy(tmp_path, "windowed")
    for b in range(3):
        (cp_path / "offsets" / str(b)).unlink()
    cp = read_checkpoint(cp_path, full=True)
    rows = {r.batch_id: r.files_read for r in batch_timeline(cp)}
    assert rows == {0: None, 1: None, 2: None, 3: None, 4: 1, 5: 0, 6: 1, 7: 0}
    doc = batch_doc(cp, 3)["batch"]
    assert doc["files_read"] is None and doc["source_log_batches"] == [{"source": 0, "log_batches": None}]
    doc = batch_doc(cp, 4)["batch"]
    assert [name(f["path"]) for f in doc["files_read"]] == ["events-2.json"]
    assert doc["source_log_batches"] == [{"source": 0, "log_batches": [2, 2]}]
    assert batch_doc(cp, 5)["batch"]["files_read"] == [] and batch_doc(cp, 5)["batch"]["source_log_batches"][0]["log_batches"] == []
    consumed = {name(p): (c.batch_id, c.committed) for p, c in consumed_files({"w": cp}).items()}
    assert consumed == {"events-0.json": (None, True), "events-1.json": (None, True),
                        "events-2.json": (4, True), "events-3.json": (6, True)}
    assert {name(e.path): e.batch_id for e in file_entries(cp)} == {k: v[0] for k, v in consumed.items()}
    # lineage: the hop of a file whose batch is not known says so; a known one keeps its batch
    plan = RunPlan("p", "", (QueryPlan("w", "bronze", str(cp_path), "", sink="memory",
                                       landing=(str(FIXTURE / "landing" / "events"),)),), (), "default")
    gone = file_journey(plan, "events-1.json", rows=False)
    assert [(h.batch_id, h.committed, h.planned_ms) for h in gone.steps[0].hops] == [(None, True, None)]
    assert any("batch not known (its offsets are gone), committed" in line for line in journey_lines(gone))
    assert [h.batch_id for h in file_journey(plan, "events-3.json", rows=False).steps[0].hops] == [6]
    # inspect --batch 3 in text
    out = Console(width=200, record=True)
    out.print(report.batch(batch_doc(cp, 3)))
    assert "files read: unknown" in out.export_text()


def test_union_batches_read_one_source(tmp_path):
    cp = read_checkpoint(FIXTURE / "checkpoints" / "union", full=True)
    fb = cp.files_by_batch()
    assert [fb.batches_of(0).log_batches(b) for b in range(5)] == [range(0, 1), range(1, 1), range(1, 2), range(2, 3), range(3, 3)]
    assert [fb.batches_of(1).log_batches(b) for b in range(5)] == [range(0, 0), range(0, 1), range(1, 1), range(1, 2), range(2, 3)]
    assert [len(fb.files_read(b) or ()) for b in range(5)] == [1, 1, 1, 2, 1]


def _entry(batch_id: int, *lines: str):
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": batch_id, "conf": {}}
    e, _ = parse_offsets(("v1\n" + json.dumps(meta) + "\n" + "\n".join(lines)).encode(), batch_id, f"offsets/{batch_id}")
    assert e is not None
    return e


def test_mapping_edges():
    offs = [_entry(0, "-"), _entry(1, '{"logOffset":0}'), _entry(2, '{"logOffset":0}'), _entry(3, '{"logOffset":2}'),
            _entry(5, '{"logOffset":4}')]
    m = SourceBatches.from_offsets(0, offs)
    assert m.log_offsets == {0: -1, 1: 0, 2: 0, 3: 2, 5: 4}
    assert [m.log_batches(b) for b in range(6)] == [range(0, 0), range(0, 1), range(1, 1), range(1, 3), None, None]
    assert [m.query_batch(n) for n in range(6)] == [1, 3, 3, None, None, None]
    entries = tuple(FileEntry(f"file:/l/f{n}", 0, n) for n in range(5))
    fb = FilesByBatch.build([SourceLog(path="sources/0", name="0", entries=entries)], offs)
    assert [fb.files_read(b) for b in (0, 2)] == [(), ()] and fb.files_read(4) is None
    assert [e.path for e in fb.files_read(3) or ()] == ["file:/l/f1", "file:/l/f2"]
    assert fb.counts() == {1: 1, 3: 2}
    # a summary read (entries not loaded): unknown, not zero
    lazy = FilesByBatch.build([SourceLog(path="sources/0", name="0", entries_loaded=False)], offs)
    assert lazy.files_read(1) is None
    # a log offset that goes back (a torn or hand-edited log) still answers only what it knows
    odd = SourceBatches.from_offsets(0, [_entry(0, '{"logOffset":3}'), _entry(1, '{"logOffset":1}'), _entry(2, '{"logOffset":5}')])
    assert odd.log_batches(1) == range(4, 4) and odd.log_batches(2) == range(2, 6)
    assert (odd.query_batch(0), odd.query_batch(2), odd.query_batch(5)) == (0, None, 2)  # 2: claimed twice


def test_offset_map_v2_by_source_id():
    meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": {}})
    e0, _ = parse_offsets(f"v2\n{meta}\n1:{{\"logOffset\":0}}\n0:7".encode(), 0, "offsets/0")
    e1, _ = parse_offsets(f"v2\n{meta}\n1:{{\"logOffset\":0}}\n0:9".encode(), 1, "offsets/1")
    assert e0 is not None and e1 is not None
    m = SourceBatches.from_offsets(1, [e0, e1])
    assert m.log_batches(0) == range(0, 1) and m.log_batches(1) == range(1, 1)
    assert SourceBatches.from_offsets(0, [e0]).log_offsets == {}  # source 0 is no file source


@pytest.mark.parametrize("full", [True, False])
def test_checkpoint_files_by_batch_on_a_summary_read(full):
    cp = read_checkpoint(FIXTURE / "checkpoints" / "windowed", full=full)
    assert isinstance(cp, Checkpoint)
    rows = [r.files_read for r in batch_timeline(cp)]
    assert rows == ([1, 0, 1, 0, 1, 0, 1, 0] if full else [None] * 8)
