"""Deterministic regressions for what fuzzing found in the checkpoint reader (each one hung,
ran out of memory or raised before it was fixed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from streamwatch.checkpoint import read_checkpoint
from streamwatch.cli import main

QID = "11111111-2222-3333-4444-555555555555"


def _cp(root: Path, batches: int = 3) -> Path:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text(json.dumps({"id": QID}))
    for b in range(batches):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000 + b, "conf": {"spark.sql.shuffle.partitions": "2"}}
        (root / "offsets" / str(b)).write_text("v1\n" + json.dumps(meta) + f'\n{{"logOffset":{b}}}')
        (root / "commits" / str(b)).write_text('v1\n{"nextBatchWatermarkMs":0}')
    return root


def _inspect(cp: Path, *args: str):
    r = CliRunner().invoke(main, ["inspect", str(cp), *args])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exc_info
    return r


def _named(cp, path: Path) -> set[str]:
    return {f.code for f in cp.findings if f.path == str(path)}


def test_fifo_in_place_of_a_log_file_is_unreadable_not_a_hang(tmp_path, unchanged):
    cp_dir = _cp(tmp_path / "cp")
    (cp_dir / "commits" / "1").unlink()
    os.mkfifo(cp_dir / "commits" / "1")
    os.unlink(cp_dir / "metadata")
    os.mkfifo(cp_dir / "metadata")
    unchanged(cp_dir)
    cp = read_checkpoint(str(cp_dir))
    assert "unreadable-file" in _named(cp, cp_dir / "commits" / "1")
    assert "unreadable-file" in _named(cp, cp_dir / "metadata")
    assert _inspect(cp_dir, "--json").exit_code == 0


def test_symlink_loops_inside_become_findings(tmp_path, unchanged):
    cp_dir = _cp(tmp_path / "cp")
    (cp_dir / "state" / "0" / "0").mkdir(parents=True)
    (cp_dir / "state" / "0" / "0" / "1.delta").write_bytes(b"x")
    os.symlink("..", cp_dir / "state" / "0" / "0" / "loop")  # back to an enclosing folder
    os.symlink("self", cp_dir / "state" / "0" / "0" / "self")  # ELOOP on stat
    os.symlink("sources", cp_dir / "sources")  # the folder itself loops
    unchanged(cp_dir)
    cp = read_checkpoint(str(cp_dir))
    assert "unreadable-file" in _named(cp, cp_dir / "state" / "0" / "0" / "loop")
    assert "unreadable-file" in _named(cp, cp_dir / "state" / "0" / "0" / "self")
    assert "unreadable-file" in _named(cp, cp_dir / "sources")
    assert [p.store_name for op in cp.state for p in op.partitions] == ["default"]


def test_huge_batch_ids_do_not_exhaust_memory(tmp_path, unchanged):
    cp_dir = _cp(tmp_path / "cp")
    (cp_dir / "offsets" / "99999999999999999999").write_text("v1\n{}")  # not a Java long: a stray
    (cp_dir / "offsets" / str((1 << 63) - 2)).write_text("v1\n{}")  # a long, far away
    (cp_dir / "commits" / "²").write_text("v1\n{}")  # isdigit() but not int()-able
    src = cp_dir / "sources" / "0"
    src.mkdir(parents=True)
    (src / f"{(1 << 62)}.compact").write_text('v1\n{"path":"f","timestamp":1,"batchId":0}')
    unchanged(cp_dir)
    cp = read_checkpoint(str(cp_dir))
    codes = {f.code for f in cp.findings}
    assert "offsets-gap" in codes and "stray-file" in codes
    assert "stray-file" in _named(cp, cp_dir / "offsets" / "99999999999999999999")
    assert "stray-file" in _named(cp, cp_dir / "commits" / "²")
    assert _inspect(cp_dir, "--json").exit_code == 0


def test_out_of_range_numbers_print_and_serialise(tmp_path, unchanged):
    cp_dir = _cp(tmp_path / "cp")
    big = str((1 << 63) - 1)
    (cp_dir / "offsets" / "2").write_text('v1\n{"batchWatermarkMs":9223372036854775807,"batchTimestampMs":-9223372036854775808}\n99999999999999999999999\n' + big)
    unchanged(cp_dir)
    for args in (["--json"], ["--batches", "--json"], ["--batch", "2", "--json"], [], ["--batches"], ["--batch", "2"]):
        r = _inspect(cp_dir, *args)
        assert r.exit_code == 0, (args, r.stderr)
        if "--json" in args:
            json.loads(r.stdout)
    doc = json.loads(_inspect(cp_dir, "--json").stdout)
    assert doc["watermark"] is None and doc["watermark_ms"] == 9223372036854775807
    assert [s["kind"] for s in doc["sources"]] == ["raw", "number"]


def test_operator_metadata_of_the_wrong_json_type_is_unparsable(tmp_path, unchanged):
    cp_dir = _cp(tmp_path / "cp")
    meta = cp_dir / "state" / "0" / "_metadata"
    meta.mkdir(parents=True)
    (meta / "metadata").write_text('v1\n[1, 2]')
    (cp_dir / "state" / "1" / "_metadata").mkdir(parents=True)
    (cp_dir / "state" / "1" / "_metadata" / "metadata").write_text('v1\n{"operatorInfo":[],"stateStoreInfo":{"a":1},"operatorPropertiesJson":"[3]"}')
    unchanged(cp_dir)
    cp = read_checkpoint(str(cp_dir))
    assert "unparsable-file" in _named(cp, meta / "metadata")
    assert [op.operator_id for op in cp.state] == [0, 1]
