"""`inspect --recursive` judges each checkpoint as `inspect` does (issue 33 item 7): for every
checkpoint in a tree of varied ones, the fleet row's verdict is the worst severity of the
findings `inspect CHECKPOINT --json` prints for it, and the rows are exactly the checkpoint
folders the test built."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from streamwatch.cli import main
from tests.helpers.fake_checkpoint import FakeCheckpoint
from tests.helpers.spark_codecs import lz4java

T0 = 1_700_000_000_000
RANK = {"info": 0, "warning": 1, "error": 2}
#: An HDFS state store delta holding no rows (the -1 end marker, LZ4-framed as Spark writes it).
EMPTY_DELTA = lz4java(b"\xff\xff\xff\xff")


def _ran(fc: FakeCheckpoint, batches: int, committed: int) -> FakeCheckpoint:
    for b in range(batches):
        fc.plan(b, T0 + b * 1000, files=[f"file:///landing/f{b}.json"])
    for b in range(committed):
        fc.commit(b, T0 + b * 1000 + 500, outputs=[(f"file:///out/part-{b}.parquet", 10)] if fc.sink else [])
    return fc


def _state(root: Path, versions: int, body: bytes) -> None:
    for p in range(2):
        d = root / "state" / "0" / str(p)
        d.mkdir(parents=True, exist_ok=True)
        for v in range(1, versions + 1):
            (d / f"{v}.delta").write_bytes(body)


def _tree(root: Path) -> list[Path]:
    """Checkpoints whose findings come from each of inspect's sources: the reader alone, the
    state audit (readable state, unreadable state), and the sink the workspace's pipeline
    definition names (flights' `enriched` layer writes tables/flights/flights_weather)."""
    ws = root / "ws"
    built = [
        _ran(FakeCheckpoint(root / "plain" / "healthy"), 3, 3).root,
        _ran(FakeCheckpoint(root / "plain" / "in-flight"), 3, 2).root,
        _ran(FakeCheckpoint(root / "plain" / "behind"), 5, 1).root,
    ]
    bounded = _ran(FakeCheckpoint(root / "stateful" / "bounded"), 3, 3).root
    _state(bounded, 3, EMPTY_DELTA)  # the audit reads it: state-bounded (info)
    garbage = _ran(FakeCheckpoint(root / "stateful" / "garbage"), 3, 3).root
    _state(garbage, 3, b"s" * 10)  # the reader lists it; the audit cannot decode it (warning)
    # the pipeline's table holds batches 0-1 only while commits reach batch 2: inspect finds
    # that sink through the pipeline definition, a plain read of the folder would not
    enriched = FakeCheckpoint(ws / "checkpoints" / "flights" / "enriched", sink=ws / "tables" / "flights" / "flights_weather")
    _ran(enriched, 3, 3)
    (enriched.sink / "_spark_metadata" / "2").unlink()
    gold = _ran(FakeCheckpoint(ws / "checkpoints" / "flights" / "gold", sink=ws / "tables" / "flights" / "gold"), 2, 2)
    return sorted([*built, bounded, garbage, enriched.root, gold.root])


def _inspect_worst(path: str) -> str | None:
    """The worst severity of `inspect PATH --json`'s findings; ``unreadable`` when inspect
    cannot read it (exit 4), as the fleet's ``worst`` says for such a row."""
    r = CliRunner().invoke(main, ["inspect", path, "--json"])
    if r.exit_code == 4:
        return "unreadable"
    assert r.exit_code == 0, r.output
    sev = [f["severity"] for f in json.loads(r.stdout)["findings"]]
    return max(sev, key=RANK.__getitem__) if sev else None


def _fleet(root: Path) -> dict[str, dict]:
    r = CliRunner().invoke(main, ["inspect", "--recursive", str(root), "--json"])
    assert r.exit_code == 0, r.output
    return {row["path"]: row for row in json.loads(r.stdout)["checkpoints"]}


def test_fleet_verdict_is_inspects_worst_finding(tmp_path, unchanged):
    root = tmp_path / "fleet"
    built = _tree(root)
    unchanged(root)
    rows = _fleet(root)
    assert sorted(rows) == [str(p) for p in built]
    verdicts = {p: (rows[p]["worst"], _inspect_worst(p)) for p in rows}
    assert all(fleet == own for fleet, own in verdicts.values()), verdicts
    # the tree covers every kind of verdict, so the equality above is not vacuous
    assert {own for _, own in verdicts.values()} == {None, "info", "warning", "error"}, verdicts
    assert verdicts[str(root / "stateful" / "garbage")][1] == "warning"
    assert rows[str(root / "ws" / "checkpoints" / "flights" / "enriched")]["finding"]["code"].startswith("sink"), rows


def test_fleet_verdict_matches_inspect_on_real_spark_checkpoints(corpus, tmp_path, unchanged):
    """Every checkpoint Spark wrote in the shared corpus (skips, saying why, without it)."""
    root = tmp_path / "corpus"
    shutil.copytree(corpus / "spark", root)
    built = sorted(str(p.parent) for p in root.rglob("metadata") if (p.parent / "offsets").is_dir())
    assert built, f"no checkpoint under {corpus / 'spark'}"
    unchanged(root)
    rows = _fleet(root)
    assert sorted(rows) == built
    verdicts = {p: (row["worst"], _inspect_worst(p)) for p, row in rows.items()}
    mismatched = {p: v for p, v in verdicts.items() if v[0] != v[1]}
    assert not mismatched, mismatched
