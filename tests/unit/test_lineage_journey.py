"""A landed file's journey from checkpoints and sink logs alone (no JVM): a bronze query
reading the landing folder, a silver query reading bronze's part files (and filtering rows),
a quarantine query, a gold query not started, a layer that has not read the file yet.
Rows are counted in real Parquet files through their source-file column."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from streamwatch.analysis.lineage import LineageError, file_journey, norm_path
from streamwatch.model.runtime import QueryPlan, RunPlan
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_700_000_000_000


def parquet(path: Path, column: str, sources: list[str]) -> tuple[str, int]:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({column: sources, "n": list(range(len(sources)))}), path)
    return f"file://{path}", path.stat().st_size


@pytest.fixture
def pipeline(tmp_path) -> tuple[RunPlan, Path]:
    land = tmp_path / "landing" / "flights"
    land.mkdir(parents=True)
    a, b = land / "a.csv", land / "b.csv"
    a.write_text("x\n")
    b.write_text("y\n")
    tables, cps = tmp_path / "tables", tmp_path / "cps"

    bronze = FakeCheckpoint(cps / "bronze", tables / "bronze")
    p0 = parquet(tables / "bronze" / "part-0.parquet", "_source_file", [f"file://{a}"] * 3)
    p1 = parquet(tables / "bronze" / "part-1.parquet", "_source_file", [f"file://{b}"] * 2)
    bronze.plan(0, T0, files=[f"file://{a}"])
    bronze.commit(0, T0 + 500, outputs=[p0])
    bronze.plan(1, T0 + 1000, files=[f"file://{b}"])
    bronze.commit(1, T0 + 1500, outputs=[p1])

    quarantine = FakeCheckpoint(cps / "quarantine", tables / "quarantine")
    q0 = parquet(tables / "quarantine" / "part-0.parquet", "source_file", [f"file:{a}", None])
    quarantine.plan(0, T0, files=[f"file://{a}", f"file://{b}"])
    quarantine.commit(0, T0 + 400, outputs=[q0])

    silver = FakeCheckpoint(cps / "silver", tables / "silver")
    s0 = parquet(tables / "silver" / "part-0.parquet", "_source_file", [f"file://{a}"] * 2 + [f"file://{b}"])
    silver.plan(0, T0 + 2000, files=[p0[0], p1[0]])
    silver.commit(0, T0 + 2500, outputs=[s0])

    waiting = FakeCheckpoint(cps / "silver2", tables / "silver2")  # started, read nothing yet
    lonely = FakeCheckpoint(cps / "other", tables / "other")  # another landing query
    lonely.plan(0, T0, files=["file:/elsewhere/z.csv"])
    del waiting

    plan = RunPlan("flights", "test", (
        QueryPlan("flights_bronze", "bronze", str(cps / "bronze"), str(tables / "bronze"), landing=(str(land),)),
        QueryPlan("flights_quarantine", "bronze-quarantine", str(cps / "quarantine"), str(tables / "quarantine"),
                  landing=(str(land),)),
        QueryPlan("other_bronze", "bronze", str(cps / "other"), str(tables / "other"), landing=("/elsewhere",)),
        QueryPlan("flights_silver", "silver", str(cps / "silver"), str(tables / "silver"), upstream=("flights_bronze",)),
        QueryPlan("flights_silver2", "silver", str(cps / "silver2"), str(tables / "silver2"), upstream=("flights_bronze",)),
        QueryPlan("flights_gold", "gold", str(cps / "gold"), str(tables / "gold"), upstream=("flights_silver",)),
    ), (("flights", str(land)),), "processingTime=1s")
    return plan, a


def test_journey_through_every_layer(pipeline):
    plan, a = pipeline
    j = file_journey(plan, str(a))
    assert (j.pipeline, j.file, j.source) == ("flights", f"file://{a}", "flights")
    steps = {s.query_name: s for s in j.steps}
    [hop] = steps["flights_bronze"].hops
    assert (hop.batch_id, hop.planned_ms, hop.committed, hop.rows) == (0, T0, True, 3)
    assert hop.wrote == (f"file://{a.parent.parent.parent / 'tables' / 'bronze' / 'part-0.parquet'}",)
    assert hop.written_ms == T0 + 400  # the sink file's modification time
    assert steps["flights_quarantine"].note == "1 malformed row of this file → table quarantine"
    assert steps["other_bronze"].note == "did not read this file" and not steps["other_bronze"].hops
    [s_hop] = steps["flights_silver"].hops
    assert s_hop.batch_id == 0 and s_hop.rows == 2 and s_hop.read == hop.wrote
    assert steps["flights_silver"].note == "2 of 3 rows carried on (1 filtered out by this layer)"
    assert steps["flights_silver2"].note == "not read yet"
    assert steps["flights_gold"].note == "no checkpoint yet"
    assert j.landed_ms == T0 - 500  # the source log's timestamp


def test_journey_without_row_counts_and_by_file_name(pipeline):
    plan, a = pipeline
    j = file_journey(plan, "/archive/2024/a.csv", rows=False)  # cleanSource=archive moved it
    steps = {s.query_name: s for s in j.steps}
    assert steps["flights_bronze"].hops[0].rows is None and steps["flights_bronze"].note is None
    assert steps["flights_silver"].hops[0].batch_id == 0


def test_a_file_no_landing_query_read(pipeline):
    plan, a = pipeline
    with pytest.raises(LineageError) as e:
        file_journey(plan, str(a.parent / "never.csv"))
    assert str(e.value) == (f"{a.parent / 'never.csv'}: not read by any landing query of pipeline flights "
                            "(flights_bronze, flights_quarantine, other_bronze): not landed there, or not processed yet")


def test_a_compacted_sink_log_places_files_by_time(pipeline, tmp_path):
    plan, a = pipeline
    meta = tmp_path / "tables" / "bronze" / "_spark_metadata"
    rows = [(meta / n).read_text().split("\n", 1)[1] for n in ("0", "1")]
    (meta / "1.compact").write_text("v1\n" + "\n".join(rows))
    (meta / "0").unlink()
    (meta / "1").unlink()
    j = file_journey(plan, str(a))
    [hop] = next(s for s in j.steps if s.query_name == "flights_bronze").hops
    # the compact file keeps no batch ids: part-0 was written before batch 1 was planned
    assert hop.batch_id == 0 and hop.wrote[0].endswith("part-0.parquet") and hop.rows == 3


def test_norm_path_forms(tmp_path):
    assert norm_path("file:///a/b%20c") == "/a/b c" == norm_path("file:/a/b%20c")
    assert norm_path("s3a://bucket/k") == "s3a://bucket/k"
    assert norm_path("rel/x.csv").endswith("/rel/x.csv") and norm_path("rel/x.csv").startswith("/")


def _delta_commit(log: Path, v: int, *actions: dict) -> None:
    import json

    log.mkdir(parents=True, exist_ok=True)
    (log / f"{v:020d}.json").write_text("\n".join(json.dumps(x) for x in actions))


def test_journey_through_delta_tables(tmp_path):
    """Bronze writes a Delta table (versions matched to batches by the streaming ``txn``);
    silver reads it as a Delta source (``reservoirVersion``/``index`` offsets); a memory-sink
    query reads the landing folder too."""
    import json

    from tests.helpers.fake_checkpoint import QUERY_ID

    land = tmp_path / "landing"
    land.mkdir()
    a = land / "a.csv"
    a.write_text("x\n")
    cps, tables = tmp_path / "cps", tmp_path / "tables"
    bronze = FakeCheckpoint(cps / "bronze")
    bronze.plan(0, T0, files=[f"file://{a}"])
    bronze.commit(0, T0 + 500)
    bronze.plan(1, T0 + 1000, files=["file:/landing/other.csv"])
    bronze.commit(1, T0 + 1500)
    log = tables / "bronze" / "_delta_log"
    _delta_commit(log, 0, {"metaData": {"id": "tbl"}}, {"protocol": {}})
    _delta_commit(log, 1, {"txn": {"appId": QUERY_ID, "version": 0}}, {"add": {"path": "p0.parquet"}},
                  {"commitInfo": {"timestamp": T0 + 450, "operation": "STREAMING UPDATE"}})
    _delta_commit(log, 2, {"txn": {"appId": QUERY_ID, "version": 1}}, {"add": {"path": "p1.parquet"}},
                  {"commitInfo": {"timestamp": T0 + 1450, "operation": "STREAMING UPDATE"}})

    silver = cps / "silver"
    FakeCheckpoint(silver)
    for b, (rv, idx) in enumerate([(1, -1), (2, -1), (3, -1)]):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0 + 2000 + b, "conf": {}}
        off = {"sourceVersion": 1, "reservoirId": "tbl", "reservoirVersion": rv, "index": idx, "isStartingVersion": False}
        (silver / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + "\n" + json.dumps(off))
    (silver / "commits" / "1").write_text("v1\n{}")

    memory = FakeCheckpoint(cps / "memory")
    memory.plan(0, T0, files=[f"file://{a}"])

    plan = RunPlan("p", "", (
        QueryPlan("bronze", "bronze", str(cps / "bronze"), str(tables / "bronze"), landing=(str(land),)),
        QueryPlan("memory", "bronze", str(cps / "memory"), "", sink="memory", landing=(str(land),)),
        QueryPlan("silver", "silver", str(silver), str(tables / "silver"), upstream=("bronze",)),
    ), (("landing", str(land)),), "availableNow")
    j = file_journey(plan, f"file:{a}")
    steps = {s.query_name: s for s in j.steps}
    [hop] = steps["bronze"].hops
    assert hop.wrote == ("delta v1",) and hop.written_ms == T0 + 450 and hop.rows is None
    [m] = steps["memory"].hops
    assert m.wrote == () and m.written_ms is None and not m.committed
    # version 1 is read by the batch whose offsets moved past it: batch 1 (from (1,-1) to (2,-1))
    [s] = steps["silver"].hops
    assert (s.batch_id, s.read, s.committed) == (1, ("delta v1",), True)
