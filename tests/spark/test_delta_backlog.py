"""The Delta source backlog — versions and files committed upstream that a downstream Delta
streaming source has not read — computed without a JVM from the downstream checkpoint's
latest ``DeltaSourceOffset`` and the upstream table's ``_delta_log``, in the dashboard's
queries table and the pipeline tab. Real tables: an upstream streaming query commits N more
versions while the downstream query is stopped; Delta's own history is the oracle for the
files and bytes those versions added."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

N_COMMITS = 3


def _run(spark, fmt: str, src: Path, table: Path, cp: Path, name: str) -> None:
    """One availableNow run of ``src`` (a json folder or a Delta table) → Delta ``table``."""
    reader = spark.readStream.format(fmt)
    if fmt == "json":
        reader = reader.schema("k long, v long")
    q = (reader.load(str(src)).writeStream.format("delta").option("checkpointLocation", str(cp))
         .queryName(name).trigger(availableNow=True).start(str(table)))
    assert q.awaitTermination(300), f"{name}: availableNow did not finish"
    assert q.exception() is None


def _land(folder: Path, run: int, files: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        rows = [{"k": run, "v": run * 100 + f * 10 + i} for i in range(5)]
        (folder / f"run{run}-{f}.json").write_text("\n".join(json.dumps(r) for r in rows))


def _added_since(spark, table: Path, after: int) -> tuple[int, int, int]:
    """Delta's own account of the versions after ``after``: (versions, files added, bytes)."""
    from delta.tables import DeltaTable

    rows = [r for r in DeltaTable.forPath(spark, str(table)).history().collect() if r.version > after]
    return (len(rows), sum(int(r.operationMetrics["numAddedFiles"]) for r in rows),
            sum(int(r.operationMetrics["numOutputBytes"]) for r in rows))


def test_delta_source_backlog_in_queries_table_and_pipeline_tab(spark, delta, tmp_path, unchanged):
    from delta.tables import DeltaTable

    from streamwatch.analysis.dashboard import DashboardModel
    from streamwatch.analysis.pipeview import PlanPipeline
    from streamwatch.model.runtime import QueryPlan, RunPlan
    from streamwatch.tui.readers import read_checkpoints
    from streamwatch.tui.views.queries import backlog_cell

    landing, up, down = tmp_path / "landing", tmp_path / "up", tmp_path / "down"
    cp_up, cp_down = tmp_path / "cp_up", tmp_path / "cp_down"
    plan = RunPlan("t", "", (
        QueryPlan("t_up", "bronze", str(cp_up), str(up)),
        QueryPlan("t_down", "silver", str(cp_down), str(down), upstream=("t_up",)),
    ), (), "availableNow")

    def scan() -> tuple[DashboardModel, object]:
        model = DashboardModel(plan, clock=lambda: 0)
        read = read_checkpoints(plan)
        assert not read.errors, read.errors
        model.set_checkpoints(read.checkpoints, read.errors, read.timelines)
        return model, PlanPipeline(plan).poll().links

    _land(landing, 0, 2)
    _run(spark, "json", landing, up, cp_up, "t_up")
    _run(spark, "delta", up, down, cp_down, "t_down")
    read_version = max(r.version for r in DeltaTable.forPath(spark, str(up)).history().collect())

    model, links = scan()
    caught_up = model.delta_backlog("t_down")
    assert caught_up is not None and (caught_up.versions, caught_up.files, caught_up.bytes) == (0, 0, 0)
    assert backlog_cell(model, "t_down", None) == "0 ver 0 files"
    assert [(x.upstream, x.downstream, x.backlog_versions, x.backlog_files) for x in links] == [("t_up", "t_down", 0, 0)]

    # N commits upstream while the downstream query is stopped (1, 2, 3 landed files each)
    for run in range(1, N_COMMITS + 1):
        _land(landing, run, run)
        _run(spark, "json", landing, up, cp_up, "t_up")
    versions, files, size = _added_since(spark, up, read_version)
    assert versions == N_COMMITS and files >= N_COMMITS  # the oracle itself
    with unchanged.around(tmp_path):
        _read_only_checks(scan, up, cp_down, read_version, (versions, files, size))

    # the downstream catches up: nothing left
    _run(spark, "delta", up, down, cp_down, "t_down")
    model, links = scan()
    done = model.delta_backlog("t_down")
    assert done is not None and (done.versions, done.files) == (0, 0)
    assert [(x.backlog_versions, x.backlog_files) for x in links] == [(0, 0)]
    assert spark.read.format("delta").load(str(down)).count() == 5 * (2 + 1 + 2 + 3)


def _read_only_checks(scan, up: Path, cp_down: Path, read_version: int, oracle: tuple[int, int, int]) -> None:
    """The backlog after N upstream commits, read without writing anything."""
    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.delta import read_delta_log
    from streamwatch.checkpoint.fs import open_storage
    from streamwatch.model.deltalog import delta_backlog
    from streamwatch.tui.views.queries import backlog_cell

    versions, files, size = oracle
    offset = read_checkpoint(str(cp_down)).offsets[-1].parsed[0]
    assert offset is not None and offset.delta_position is not None
    storage, root = open_storage(str(up))
    log, findings = read_delta_log(storage, root)
    assert log is not None and not findings
    assert offset.delta_position[0] == log.table_id
    b = delta_backlog(log.commits, *offset.delta_position[1:])
    assert (b.versions, b.files, b.bytes) == (versions, files, size)
    assert b.latest_version == read_version + N_COMMITS and b.next_version == read_version + 1

    model, links = scan()
    got = model.delta_backlog("t_down")
    assert got is not None and (got.versions, got.files, got.bytes) == (versions, files, size)
    assert backlog_cell(model, "t_down", None) == f"{versions} ver {files} files"
    assert model.delta_backlog("t_up") is None  # reads json files, not Delta
    assert [(x.upstream, x.downstream, x.backlog_versions, x.backlog_files) for x in links] == [
        ("t_up", "t_down", versions, files)]

