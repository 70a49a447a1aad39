"""Fuzzing the state reader, the audit and ``streamwatch state`` with corrupted copies of
real state stores (HDFS deltas/snapshots, RocksDB zips/SSTs/changelogs, checkpoint format v2,
schema files): truncation, flipped bytes, garbage, empty and deleted files. Every case must
end in rows or one-line findings — ``StateReadError`` from the API, exit status 0 or 4 from
the command — never another exception or a traceback; the corrupted copy is never written."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, note, settings
from hypothesis import strategies as st

from streamwatch.cli import main
from streamwatch.state import StateReadError, read_state
from streamwatch.state.audit import audit_state
from streamwatch.state.audit_findings import with_audit_findings
from tests.reliability.fuzzprofiles import PROFILE, fuzz_settings

pytestmark = pytest.mark.spark
BASES = ("agg_hdfs", "agg_rocks_cl", "agg_rocks_v2", "join", "session", "tws_avro")


def _state_files(cp: Path) -> list[Path]:
    return sorted(p for p in (cp / "state").rglob("*") if p.is_file() and not p.name.endswith(".crc"))


@st.composite
def mutation(draw, n_files: int):
    return (draw(st.integers(0, n_files - 1)),
            draw(st.sampled_from(["truncate", "flip", "garbage", "empty", "delete"])),
            draw(st.integers(0, 1 << 16)), draw(st.binary(min_size=1, max_size=64)))


def _mutate(path: Path, how: str, n: int, blob: bytes) -> None:
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: n % max(1, len(data))])
    elif how == "flip" and data:
        i = n % len(data)
        path.write_bytes(data[:i] + bytes([data[i] ^ (blob[0] or 0xFF)]) + data[i + 1:])
    elif how == "garbage":
        path.write_bytes(blob)
    elif how == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()


@pytest.mark.parametrize("base", BASES)
def test_corrupt_state_files_become_findings(state_cps, unchanged, base):
    src = state_cps[base]
    n_files = len(_state_files(src))
    assert n_files > 3

    @settings(fuzz_settings(0.4), derandomize=PROFILE == "ci")
    @given(muts=st.lists(mutation(n_files), min_size=1, max_size=3))
    def case(muts):
        with tempfile.TemporaryDirectory() as tmp:
            cp = Path(shutil.copytree(src, Path(tmp) / "cp"))
            files = _state_files(cp)
            for i, how, n, blob in muts:
                target = files[i % len(files)]
                if target.exists():
                    note(f"{how} {target.relative_to(cp)}")
                    _mutate(target, how, n, blob)
            with unchanged.around(cp):
                try:
                    tables = read_state(str(cp), limit=5)
                    for t in tables:
                        for f in t.findings:
                            assert "\n" not in f.message
                except StateReadError as e:
                    assert "\n" not in str(e)
                for a in audit_state(str(cp)):
                    assert a.verdict in ("bounded", "growing", "unknown")
                from streamwatch.checkpoint import read_checkpoint

                with_audit_findings(read_checkpoint(str(cp), full=False), str(cp))
                r = CliRunner().invoke(main, ["state", str(cp), "--json"])
                assert r.exit_code in (0, 4), r.output
                assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
                assert "Traceback" not in r.stderr
                if r.exit_code == 4:
                    assert r.stderr.strip() and all(line.startswith("streamwatch state: ") for line in r.stderr.strip().splitlines())
    case()
