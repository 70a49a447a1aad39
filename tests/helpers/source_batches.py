"""Compare what streamwatch says each batch read from its file sources with Spark's own
account (the facts ``scripts/source_batches_fixture.py`` records: per batch the rows read per
source and the file each source read), through every reader that maps a file source's log
batches to the query's batches: ``inspect --batches`` / ``--batch N`` JSON, the landing
journeys, ``lineage``, the checkpoint watch's per-batch input and ``diff``'s batch snapshots.

Files are compared by base name: the checkpoints name them by the absolute path they had when
Spark wrote them, which differs from where a committed fixture is read."""

from __future__ import annotations

import json
import posixpath
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

from click.testing import CliRunner

from streamwatch.analysis.batchio import SourceReader
from streamwatch.analysis.journeys import consumed_files
from streamwatch.analysis.lineage import file_journey
from streamwatch.analysis.probe import Probe
from streamwatch.checkpoint import read_checkpoint
from streamwatch.checkpoint.ops.diff import at_batch, diff
from streamwatch.cli import main
from streamwatch.model.runtime import QueryPlan, RunPlan
from tests.helpers.scripts import load_script


def generator() -> ModuleType:
    """``scripts/source_batches_fixture.py`` as a module (it is no package)."""
    return load_script("source_batches_fixture")


def name(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))


def inspect_json(*args: str) -> Any:
    r = CliRunner().invoke(main, ["inspect", *args, "--json"])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def assert_scenario_is_telling(facts: dict[str, Any]) -> None:
    """The runs hold what the defect needs: no-data batches between data batches (the source
    log then lags the query's batch ids) and batches that read one source of two."""
    windowed, union = (next(q for q in facts["queries"] if q["query"] == n) for n in ("windowed", "union"))
    rows = [sum(b["numInputRows"]) for b in windowed["batches"]]
    assert rows.count(0) >= 2 and any(r == 0 and later for r, later in pairwise(rows)), rows
    one_side = [b for b in union["batches"] if sum(1 for n in b["numInputRows"] if n) == 1]
    assert {tuple(bool(n) for n in b["numInputRows"]) for b in one_side} == {(True, False), (False, True)}, union["batches"]


def check(root: Path, facts: dict[str, Any]) -> None:
    """Every batch of every query in ``facts`` (written under ``root``) read, per streamwatch,
    exactly the files Spark says it read — and their rows add up to Spark's count."""
    for q in facts["queries"]:
        _check_query(root, q)


def _check_query(root: Path, q: dict[str, Any]) -> None:
    cp_path = root / q["checkpoint"]
    table = root / q["table"] if q.get("table") else None
    rows_of: dict[str, int] = q["rows"]
    want = {b["batchId"]: b for b in q["batches"]}
    assert sorted(want) == list(range(len(want))), "every batch of the run is in the facts"
    n_src = len(q["landing"])
    sink = ["--sink", str(table)] if table else []

    # inspect --batches: files per batch
    timeline = {r["batch_id"]: r for r in inspect_json(str(cp_path), "--batches", *sink)["timeline"]}
    assert {b: timeline[b]["files_read"] for b in want} == {b: sum(len(f) for f in w["files"]) for b, w in want.items()}, q["query"]

    cp = read_checkpoint(cp_path, sink=table, full=True)
    reader = SourceReader(Probe(str(cp_path)), str(cp_path), file_sizes=False)
    for b, w in want.items():
        # inspect --batch N: which files, from which source, and their rows against numInputRows
        doc = inspect_json(str(cp_path), "--batch", str(b), *sink)["batch"]
        got = [[name(f["path"]) for f in doc["files_read"] if f["source"] == i] for i in range(n_src)]
        assert got == w["files"], (q["query"], b, got, w)
        assert [sum(rows_of[f] for f in fs) for fs in got] == w["numInputRows"], (q["query"], b)
        # the checkpoint watch's per-batch input (offsets N against offsets N-1)
        prev = cp.offsets_for(b - 1) if b else None
        inputs = reader.inputs(cp.offsets_for(b), prev)  # type: ignore[arg-type]
        assert [[name(p) for p in s.paths] for s in inputs] == w["files"], (q["query"], b, inputs)
        # (a source with no offset yet, ``-``, reads nothing: kind "none")
        assert [0 if s.kind == "none" else s.files for s in inputs] == [len(f) for f in w["files"]], (q["query"], b, inputs)
        # diff --from-batch b-1 --to-batch b: the files added between the two
        if b:
            d = diff(at_batch(cp, b - 1), at_batch(cp, b))
            assert [[name(p) for p in s["files"]] for s in d["sources"]] == w["files"], (q["query"], b, d["sources"])

    # the landing journeys: each landed file read by its batch, committed
    by_file = {f: b for b, w in want.items() for fs in w["files"] for f in fs}
    consumed = {name(p): c for p, c in consumed_files({q["query"]: cp}).items()}
    assert {f: (c.batch_id, c.committed) for f, c in consumed.items()} == {f: (b, True) for f, b in by_file.items()}

    # lineage: the hop of the landing-reading query
    landing = tuple(str(root / d) for d in q["landing"])
    plan = RunPlan("truth", "", (QueryPlan(q["query"], "bronze", str(cp_path), str(table) if table else "",
                                           sink="table" if table else "memory", landing=landing),),
                   tuple((name(d), d) for d in landing), "default")
    for f, b in by_file.items():
        j = file_journey(plan, f, rows=False)
        assert [h.batch_id for h in j.steps[0].hops] == [b], (q["query"], f, j.steps[0].hops)
        assert all(h.committed for h in j.steps[0].hops)
