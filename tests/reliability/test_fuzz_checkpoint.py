"""Fuzzing the checkpoint reader and ``streamwatch inspect`` with mutated real checkpoints.

Bases: every checkpoint in ``../shared/corpus/spark`` (written by Apache Spark's own test
suites) and the five checkpoints (with their file-sink logs) the flights pipeline writes.
Each hypothesis example copies one base into a temporary folder, applies 1–4 mutations
(:mod:`cpmutate`: truncation, flipped bytes, deleted and extra files, wrong version headers,
huge numbers, deeply nested or enormous JSON, FIFOs, folders where files belong, symlink
loops, unreadable permissions when not root) and then requires:

* ``read_checkpoint`` returns, or raises ``CheckpointError`` only when PATH itself is no
  longer a checkpoint;
* ``streamwatch inspect --json`` (click's CliRunner) exits 0 with parsable JSON (or 4 with
  one line on stderr in that same case), and one more mode (``--batches``, ``--batch N``,
  the text report, ``--check``) never shows a traceback;
* every certainly-invalid file the reader must parse, and every stray file, is named by a
  finding with a fitting code; no finding points outside the tree;
* the tree is byte-identical afterwards (the shared ``unchanged`` fixture).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import cpmutate
import pytest
from click.testing import CliRunner
from fuzzprofiles import found_case_twins, fuzz_settings
from hypothesis import given, note
from hypothesis import strategies as st

from streamwatch.checkpoint import CheckpointError, batch_timeline, read_checkpoint
from streamwatch.cli import main

CORPUS_SPARK = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "spark"
FLIGHTS_LAYERS = ("bronze", "silver", "gold", "weather", "enriched")


def _corpus_checkpoints() -> list[Path]:
    if not CORPUS_SPARK.is_dir():
        return []
    return sorted(p.parent for p in CORPUS_SPARK.rglob("metadata") if p.is_file() and "state" not in p.relative_to(CORPUS_SPARK).parts)


class Base:
    """A pristine tree to copy: ``src`` (folder), ``cp_rel`` (the checkpoint inside it),
    ``files``/``dirs`` (inventory) and the files the reader must parse."""

    def __init__(self, name: str, src: Path, cp_rel: str = "", sink_rel: str | None = None) -> None:
        self.name, self.src, self.cp_rel = name, src, cp_rel
        self.files, self.dirs = cpmutate.inventory(src)
        self.must_parse = self._must_parse(sink_rel)

    def _must_parse(self, sink_rel: str | None) -> set[str]:
        def under(prefix: str) -> list[str]:
            if not prefix:
                return list(self.files)
            return [f[len(prefix) + 1 :] for f in self.files if f.startswith(prefix + "/")]

        out = {os.path.join(self.cp_rel, f) for f in cpmutate.parsed_files(self.src, under(self.cp_rel))}
        if sink_rel:
            sink_files = ["sources/0/" + f[len("_spark_metadata/") :] for f in under(sink_rel) if f.startswith("_spark_metadata/")]
            out |= {os.path.join(sink_rel, "_spark_metadata", f.split("/", 2)[2]) for f in cpmutate.parsed_files(self.src, sink_files) if f.startswith("sources/")}
        return out


def _copy(base: Base, dest: Path) -> Path:
    shutil.copytree(base.src, dest, symlinks=True)
    return dest


def _rmtree(path: str) -> None:
    def fix(func, p, _exc):  # chmod 000 folders (non-root runs)
        try:
            os.chmod(os.path.dirname(p), 0o755)
            os.chmod(p, 0o755)
        except OSError:
            pass
        func(p)

    shutil.rmtree(path, onerror=fix)


def still_a_checkpoint(cp: Path) -> bool:
    """Whether PATH itself is still usable as a checkpoint folder (mirrors ``_check_root``):
    only then must the reader answer with findings instead of ``CheckpointError``."""
    try:
        if not cp.is_dir() or not os.access(cp, os.R_OK | os.X_OK):
            return False
        names = set(os.listdir(cp))
    except OSError:
        return False
    if not ({"metadata", "offsets", "commits"} & names):
        return False
    if not ({"offsets", "commits"} & names):
        try:
            fd = os.open(cp / "metadata", os.O_RDONLY | os.O_NONBLOCK)
            try:
                head = os.read(fd, 64).lstrip()
            finally:
                os.close(fd)
        except OSError:
            return False
        return head.startswith(b"{")
    return True


def _extra_mode(draw, cp) -> list[str]:
    mode = draw(st.sampled_from(["batches-json", "batch-json", "text", "check", "batches-text"]))
    if mode == "batch-json":
        ids = list(cp.offset_batch_ids) if cp is not None and cp.offset_batch_ids else [0]
        return ["--batch", str(draw(st.sampled_from(ids))), "--json"]
    return {"batches-json": ["--batches", "--json"], "text": [], "check": ["--check"], "batches-text": ["--batches"]}[mode]


def fuzz_one(base: Base, data, unchanged, stats) -> None:
    td = tempfile.mkdtemp(prefix="swfuzz-")
    try:
        tree = _copy(base, Path(td) / "t")
        cp_path = tree / base.cp_rel if base.cp_rel else tree
        muts = data.draw(cpmutate.mutations(base.files, base.dirs), label="mutations")
        applied = [m for m in muts if cpmutate.apply(tree, m)]
        note(f"base={base.name} applied={[str(m) for m in applied]}")
        expected = cpmutate.expected_findings(applied, base.must_parse, base.cp_rel)
        usable = still_a_checkpoint(cp_path)
        runner = CliRunner()
        before = unchanged.digest(tree)
        with unchanged.around(tree):
            try:
                cp = read_checkpoint(str(cp_path), full=True)
                batch_timeline(cp)
            except CheckpointError as e:
                assert not usable, f"PATH is still a checkpoint but the reader gave up: {e}"
                cp = None
            result = runner.invoke(main, ["inspect", str(cp_path), "--json"])
            extra = _extra_mode(data.draw, cp)
            result2 = runner.invoke(main, ["inspect", str(cp_path), *extra])
            if unchanged.digest(tree) != before:
                stats.files_modified += 1  # counted for the report; around() fails the test
        stats.cases += 1
        for r, args in ((result, ["--json"]), (result2, extra)):
            assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exc_info)
            assert "Traceback" not in r.output and "Traceback" not in r.stderr, args
        if cp is None:
            assert result.exit_code == 4, result.output
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("streamwatch inspect: "), result.stderr
            assert result.stdout == ""
            return
        assert result.exit_code == 0, (result.exit_code, result.stderr)
        assert result2.exit_code in (0, 1, 2, 3), (extra, result2.exit_code, result2.stderr)
        doc = json.loads(result.stdout)
        assert doc["schema"] == "streamwatch.inspect/1"
        if "--json" in extra and result2.exit_code != 2:  # 2: --batch N of a batch not in the logs
            json.loads(result2.stdout)
        stats.findings += len(cp.findings)
        stats.named += len(expected)
        for f in cp.findings:
            assert f.path is None or f.path.startswith(str(tree)), f
        for rel, codes in expected.items():
            want = str(tree / rel)
            got = {f.code for f in cp.findings if f.path == want}
            assert got & codes, f"no {sorted(codes)} finding names {rel} (findings: {[(f.code, f.path) for f in cp.findings]})"
            got_cli = {f["code"] for f in doc["findings"] if f["path"] == want}
            assert got_cli & codes, f"inspect --json names no {sorted(codes)} finding for {rel}"
    finally:
        _rmtree(td)


# --- the tests ------------------------------------------------------------------------------

CORPUS_BASES = [Base(p.name, p) for p in _corpus_checkpoints()]


@pytest.mark.corpus
@pytest.mark.skipif(not CORPUS_BASES, reason=f"shared corpus not found at {CORPUS_SPARK} (only present beside the team's checkout)")
@fuzz_settings(weight=6)
@given(data=st.data())
def test_mutated_corpus_checkpoints(data, unchanged, case_stats):
    base = data.draw(st.sampled_from(CORPUS_BASES), label="base")
    fuzz_one(base, data, unchanged, case_stats)


@pytest.fixture(scope="module")
def flights_bases(flights_run, tmp_path_factory) -> list[Base]:
    """Each flights checkpoint with its file sink's ``_spark_metadata`` in a mini workspace
    (``checkpoints/flights/<layer>`` + ``tables/flights/<layer>``), so the sink is discovered."""
    _runner, ws = flights_run
    out = []
    for layer in FLIGHTS_LAYERS:
        src_cp = Path(ws.checkpoint("flights", layer))
        src_sink = Path(ws.table("flights", layer)) / "_spark_metadata"
        if not src_cp.is_dir():
            continue
        mini = tmp_path_factory.mktemp(f"flights-{layer}")
        shutil.copytree(src_cp, mini / "checkpoints" / "flights" / layer)
        if src_sink.is_dir():
            shutil.copytree(src_sink, mini / "tables" / "flights" / layer / "_spark_metadata")
        out.append(Base(f"flights/{layer}", mini, f"checkpoints/flights/{layer}", f"tables/flights/{layer}"))
    assert len(out) >= 3, "the flights run wrote fewer than 3 checkpoints"
    return out


@pytest.mark.spark
@fuzz_settings(weight=4)
@given(data=st.data())
def test_mutated_flights_checkpoints(data, flights_bases, unchanged, case_stats):
    base = data.draw(st.sampled_from(flights_bases), label="base")
    fuzz_one(base, data, unchanged, case_stats)


def test_pristine_bases_read_cleanly(flights_bases, unchanged):
    """The oracle's premise: unmutated, no base has an unparsable/unreadable file finding,
    and the files the fuzzer counts as parsed exist."""
    for base in [*CORPUS_BASES, *flights_bases]:
        cp_path = base.src / base.cp_rel if base.cp_rel else base.src
        cp = read_checkpoint(str(unchanged(cp_path)), full=True)
        bad = [f for f in cp.findings if f.code in ("unparsable-file", "unreadable-file", "empty-file", "unknown-log-version")]
        assert not bad, (base.name, bad)
        assert all((base.src / f).is_file() for f in base.must_parse), base.name
        assert any(f.endswith("metadata") for f in base.must_parse), base.name


# cases the `reliability` profile recorded (fuzzprofiles.FOUND), replayed in every run
globals().update(found_case_twins(globals()))
