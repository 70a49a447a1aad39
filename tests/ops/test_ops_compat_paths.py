"""`streamwatch compat` compares places, not spellings: a sink or source folder named relative
or absolute, with a trailing slash, as a ``file:`` URI or ``s3a://`` for ``s3://`` is the same
folder (issue 32 item 3). The expected verdicts come from folders the tests build themselves."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from streamwatch.checkpoint import read_checkpoint
from streamwatch.checkpoint.fs import open_storage
from streamwatch.checkpoint.ops.compat_rules import NewQuery, NewSource, check
from streamwatch.cli import main
from tests.helpers.fake_checkpoint import FakeCheckpoint

T0 = 1_700_000_000_000


def _workspace(tmp: Path) -> tuple[Path, Path, Path]:
    """``tmp/ws/checkpoints/p/l`` reading ``tmp/in dir`` (a space: Spark's log writes %20) into
    the file sink ``tmp/ws/tables/p/l`` — where the reader looks for a workspace's sink."""
    landing = tmp / "in dir"
    landing.mkdir()
    sink = tmp / "ws" / "tables" / "p" / "l"
    fc = FakeCheckpoint(tmp / "ws" / "checkpoints" / "p" / "l", sink=sink)
    for b in range(2):
        (landing / f"f{b}.json").write_text("{}")
        fc.plan(b, T0 + b, files=[(landing / f"f{b}.json").as_uri()])
        fc.commit(b, T0 + b, outputs=[((sink / f"part-{b}.parquet").as_uri(), 10)])
    return fc.root, landing, sink


def _verdicts(doc: dict) -> dict[str, str]:
    return {r["rule"]: r["verdict"] for r in doc["rules"]}


def _check(cp_arg: str, source: str, sink: str):
    cp = read_checkpoint(cp_arg)
    storage, _ = open_storage(cp_arg)
    return cp, check(cp, storage, NewQuery(sources=(NewSource("file", source),), operators=(), sink_format="parquet",
                                           sink_path=sink, output_mode="append"))


@pytest.mark.parametrize("spelling", ["relative", "relative/", "absolute", "absolute/", "file:", "file://", "file://localhost"])
def test_same_folders_spelled_differently_are_compatible(tmp_path, monkeypatch, unchanged, spelling):
    root, landing, sink = _workspace(tmp_path)
    unchanged(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    # the checkpoint named as the example in docs/ops.md names it: relative to the current folder
    cp_arg = "./" + root.relative_to(tmp_path).as_posix()
    spell = {
        "relative": lambda p: "./" + p.relative_to(tmp_path).as_posix(),
        "relative/": lambda p: p.relative_to(tmp_path).as_posix() + "/",
        "absolute": str,
        "absolute/": lambda p: f"{p}/",
        "file:": lambda p: f"file:{p}",
        "file://": lambda p: p.as_uri(),  # percent-encoded, as Hadoop's Path.toUri writes it
        "file://localhost": lambda p: f"file://localhost{p}",
    }[spelling]
    cp, doc = _check(cp_arg, spell(landing), spell(sink))
    assert cp.sink_path is not None, "the workspace's sink folder was not found"
    assert _verdicts(doc) == {"sources": "compatible", "source 0 path": "compatible", "sink path": "compatible"}, doc["rules"]
    assert doc["verdict"] == "compatible"


def test_other_folders_still_differ(tmp_path, monkeypatch, unchanged):
    root, landing, sink = _workspace(tmp_path)
    unchanged(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "ws" / "tables" / "p" / "l2"  # a sibling whose name starts like the sink's
    cp, doc = _check("./ws/checkpoints/p/l", str(tmp_path / "in"), str(elsewhere))
    v = _verdicts(doc)
    assert v["sink path"] == "allowed" and v["source 0 path"] == "incompatible", doc["rules"]
    assert str(elsewhere) in next(r["reason"] for r in doc["rules"] if r["rule"] == "sink path")


def test_a_symlinked_workspace_is_the_folder_it_points_to(tmp_path, monkeypatch, unchanged):
    root, landing, sink = _workspace(tmp_path)
    unchanged(tmp_path / "ws")
    (tmp_path / "link").symlink_to(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    _, doc = _check("link/checkpoints/p/l", str(landing), str(sink))
    assert doc["verdict"] == "compatible", doc["rules"]


def test_s3a_and_s3_name_the_same_sink(tmp_path, unchanged):
    """fsspec names the checkpoint's sink s3://…, the query's writer (Hadoop) s3a://…/."""
    root, landing, sink = _workspace(tmp_path)
    unchanged(tmp_path / "ws")
    cp = dataclasses.replace(read_checkpoint(str(root)), sink_path="s3://bucket/ws/tables/p/l")
    storage, _ = open_storage(str(root))

    def verdict(path: str) -> str:
        new = NewQuery(sources=(NewSource("file", str(landing)),), operators=(), sink_format="parquet", sink_path=path,
                       output_mode="append")
        return _verdicts(check(cp, storage, new))["sink path"]

    assert verdict("s3a://bucket/ws/tables/p/l/") == "compatible"
    assert verdict("s3://bucket//ws/tables/p/l") == "compatible"
    assert verdict("s3a://bucket/ws/tables/p/other") == "allowed"
    assert verdict("s3a://other-bucket/ws/tables/p/l") == "allowed"


@pytest.mark.spark
def test_documented_example_with_a_relative_path(flights_run, tmp_path, monkeypatch, unchanged):
    """The line docs/ops.md shows (`streamwatch compat`), run from the folder holding ./streamwatch-workspace:
    `streamwatch compat ./streamwatch-workspace/checkpoints/flights/gold --pipeline flights
    --layer gold` — gold against its own checkpoint is compatible (exit 0), as with the
    absolute path."""
    _runner, ws = flights_run
    unchanged(ws.root / "checkpoints" / "flights")
    unchanged(ws.root / "tables" / "flights")
    here = tmp_path / "here"
    here.mkdir()
    (here / "streamwatch-workspace").symlink_to(ws.root)  # the folder name docs/ops.md uses
    monkeypatch.chdir(here)
    args = ["compat", "./streamwatch-workspace/checkpoints/flights/gold", "--pipeline", "flights", "--layer", "gold"]
    r = CliRunner().invoke(main, [*args, "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "compatible", doc["rules"]
    assert _verdicts(doc)["sink path"] == "compatible"
    text = CliRunner().invoke(main, args)
    assert text.exit_code == 0 and "the sink moves to" not in text.stdout, text.output
