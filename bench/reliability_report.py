"""``make reliability``: run the reliability suite with the ``reliability`` hypothesis profile
(≥ 10,000 cases), the exactly-once test of the pipelines, and write ``bench/RELIABILITY.md``:
cases tried, crashes, rows lost/duplicated, events dropped, files modified — each with the
command that produced it. The last soak run (``bench/soak_last.json``, written by
``make soak``) is included when present.

Usage: ``.venv/bin/python bench/reliability_report.py [--profile ci|reliability] [--skip-exactly-once]``
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "RELIABILITY.md"
SOAK = ROOT / "bench" / "soak_last.json"
PY = sys.executable


@dataclass
class PytestRun:
    """One pytest run: its exit status, the junit counts, the failed test ids, seconds taken and
    the last 15 lines of its output."""

    returncode: int
    tests: int
    failures: int
    errors: int
    skipped: int
    failed: list[str]
    seconds: float
    tail: str


def _junit_counts(junit: Path) -> tuple[dict[str, int], list[str]]:
    """(tests/failures/errors/skipped summed over the suites, failed or errored test ids)."""
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    failed: list[str] = []
    if junit.exists():
        root = ET.parse(junit).getroot()
        for suite in root.iter("testsuite"):
            for k in counts:
                counts[k] += int(suite.get(k, 0))
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed.append(f"{case.get('classname')}::{case.get('name')}")
    return counts, failed


def run_pytest(args: list[str], env: dict[str, str]) -> PytestRun:
    """Run pytest with ``args`` in the checkout and read its junit report."""
    with tempfile.TemporaryDirectory() as td:
        junit = Path(td) / "junit.xml"
        t0 = time.monotonic()
        p = subprocess.run([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", *args],
                           cwd=ROOT, env=env, capture_output=True, text=True)
        secs = time.monotonic() - t0
        counts, failed = _junit_counts(junit)
    tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-15:])
    return PytestRun(p.returncode, counts["tests"], counts["failures"], counts["errors"], counts["skipped"],
                     failed, secs, tail)


@dataclass
class Inputs:
    """What the report is made of: the fuzz suite's run and per-test stats rows (the suite's
    ``STREAMWATCH_RELIABILITY_STATS`` JSON lines), the exactly-once run (None: skipped), the
    last soak run (None: none yet) and the commands that produced them."""

    profile: str
    fuzz_cmd: str
    fuzz: PytestRun
    rows: list[dict[str, Any]]
    eo_cmd: str
    eo: PytestRun | None
    soak: dict[str, Any] | None

    @property
    def total(self) -> int:
        return sum(int(r["cases"]) for r in self.rows)

    @property
    def crashes(self) -> int:
        return sum(int(r["crashes"]) for r in self.rows) + len(self.fuzz.failed)

    @property
    def modified(self) -> int:
        return sum(int(r["files_modified"]) for r in self.rows)


def _summary_lines(i: Inputs) -> list[str]:
    """The summary table: each measure, its value and the command that measured it."""
    lines = [
        "## Summary",
        "",
        "| measure | value | command |",
        "| --- | --- | --- |",
        f"| fuzz cases tried | {i.total:,} | `{i.fuzz_cmd}` |",
        f"| crashes (uncaught exceptions, hangs, failed properties) | {i.crashes} | `{i.fuzz_cmd}` |",
        f"| checkpoint files modified by the reader / `inspect` | {i.modified} | `{i.fuzz_cmd}` (every case hashes the tree before and after) |",
    ]
    if i.eo is not None:
        ok = i.eo.returncode == 0
        lines.append(
            f"| rows lost / duplicated across SIGKILL restarts | {'0 / 0' if ok else 'FAILED — see below'} | `{i.eo_cmd}` "
            "(every layer must hold every input exactly once) |"
        )
    else:
        lines.append("| rows lost / duplicated across SIGKILL restarts | not run (--skip-exactly-once) | `" + i.eo_cmd + "` |")
    follow = [r for r in i.rows if "follow" in r["test"]]
    lines.append(
        f"| events lost while following rotating recordings | {0 if follow and not any(r['crashes'] for r in follow) else 'see below'} "
        f"| `{i.fuzz_cmd}` ({sum(r['cases'] for r in follow):,} runs of test_follow_*) |"
    )
    if i.soak is not None:
        lines.append(
            f"| events dropped in the last soak run | {i.soak.get('dropped')} of {i.soak.get('published')} published | `{i.soak.get('command')}` |"
        )
    else:
        lines.append("| events dropped in the soak run | not run yet | `make soak` |")
    return lines


def _fuzz_lines(i: Inputs) -> list[str]:
    """The suite's counts and the per-test table, with what the columns and the mutations are."""
    lines = [
        "",
        f"Suite: {i.fuzz.tests} tests, {len(i.fuzz.failed)} failed, {i.fuzz.skipped} skipped, {i.fuzz.seconds:.0f} s.",
        "",
        "## Fuzz tests",
        "",
        "| test | cases | crashes | findings | problems named | lines skipped (counted) | files modified | seconds |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in i.rows:
        name = r["test"].split("::")[-1]
        lines.append(
            f"| `{name}` | {r['cases']:,} | {r['crashes']} | {r['findings']:,} | {r.get('named', 0):,} | {r['skipped_lines']:,} "
            f"| {r['files_modified']} | {r['seconds']} |"
        )
    return lines + [
        "",
        "*findings*: health findings reported over all cases; *problems named*: certainly-invalid files "
        "(empty, binary, wrong version, FIFO, folder, symlink loop) and stray files the oracle required a "
        "finding for, and found; *lines skipped*: bad or unknown lines the event readers skipped and counted.",
        "",
        "What is mutated: truncated files, flipped bytes, deleted and extra files, wrong version headers "
        "(`v99`, `v0`, …), huge numbers, deeply nested and enormous JSON, FIFOs and folders where files "
        "belong, files where folders belong, symlink loops, dangling links (permission cases only when not "
        "root: root reads anyway); for event logs and recordings: garbage, truncated and CRLF lines, unknown "
        "kinds and event types, a newer schema version, wrong JSON types, a last line still being written, "
        "rotation, gzip/zstd/lz4 streams cut or corrupted. Faulty disks: a recording path under a file, "
        "RLIMIT_FSIZE, and a 24 KiB tmpfs under a running `streamwatch log`.",
    ]


def _soak_lines(soak: dict[str, Any]) -> list[str]:
    """The last soak run's checks and measures (``bench/soak_last.json``)."""
    return [
        "",
        "## Last soak run",
        "",
        f"`{soak.get('command')}` — {soak.get('minutes')} min, `{soak.get('trigger')}`; "
        f"{'passed' if soak.get('passed') else 'FAILED'}.",
        "",
        "| check | result |",
        "| --- | --- |",
        *[f"| {k} | {'ok' if v else 'FAIL'} |" for k, v in soak.get("checks", {}).items()],
        "",
        f"Events recorded: {soak.get('events')}; RSS of `streamwatch log` (KiB): {soak.get('rss_kib')}; "
        f"batch runs (first, last, count): {soak.get('batch_runs')}.",
    ]


def report(i: Inputs) -> str:
    """``bench/RELIABILITY.md``'s text."""
    lines = [
        "# Reliability report",
        "",
        f"Generated by `make reliability` (`.venv/bin/python bench/reliability_report.py`) on "
        f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, hypothesis profile `{i.profile}`. "
        "Do not edit by hand.",
        "",
        *_summary_lines(i),
        *_fuzz_lines(i),
    ]
    if i.fuzz.failed:
        lines += ["", "## Failures", "", *[f"- `{f}`" for f in i.fuzz.failed], "", "```", i.fuzz.tail, "```"]
    if i.eo is not None and i.eo.returncode != 0:
        lines += ["", "## Exactly-once test output", "", "```", i.eo.tail, "```"]
    if i.soak is not None:
        lines += _soak_lines(i.soak)
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="reliability", choices=["ci", "reliability"])
    ap.add_argument("--skip-exactly-once", action="store_true")
    opts = ap.parse_args()

    stats_file = Path(tempfile.mkdtemp(prefix="streamwatch-rel-")) / "stats.jsonl"
    env = {**os.environ, "STREAMWATCH_HYPOTHESIS_PROFILE": opts.profile, "STREAMWATCH_RELIABILITY_STATS": str(stats_file)}
    fuzz_cmd = f"STREAMWATCH_HYPOTHESIS_PROFILE={opts.profile} .venv/bin/python -m pytest tests/reliability"
    print(f"reliability: {fuzz_cmd}", flush=True)
    fuzz = run_pytest(["tests/reliability"], env)
    rows = [json.loads(ln) for ln in stats_file.read_text().splitlines()] if stats_file.exists() else []

    eo_cmd = ".venv/bin/python -m pytest tests/spark/test_exactly_once.py"
    eo = None
    if not opts.skip_exactly_once:
        print(f"reliability: {eo_cmd}", flush=True)
        eo = run_pytest(["tests/spark/test_exactly_once.py"], {**os.environ})

    soak = json.loads(SOAK.read_text()) if SOAK.exists() else None
    inputs = Inputs(opts.profile, fuzz_cmd, fuzz, rows, eo_cmd, eo, soak)
    OUT.write_text(report(inputs))
    print(f"reliability: wrote {OUT.relative_to(ROOT)}: {inputs.total:,} cases, {inputs.crashes} crashes, "
          f"{inputs.modified} files modified", flush=True)
    return 0 if fuzz.returncode == 0 and (eo is None or eo.returncode == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
