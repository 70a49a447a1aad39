"""Reliability tests: hypothesis profiles and case counting.

Profiles (chosen with ``STREAMWATCH_HYPOTHESIS_PROFILE``, default ``ci``):

* ``ci`` — a few hundred cases over the whole folder (~1–2 minutes on 2 busy cores);
* ``reliability`` — ≥ 10,000 cases in all (``make reliability``).

Each fuzz test multiplies the profile's ``max_examples`` by its own weight
(:func:`fuzz_settings`). When ``STREAMWATCH_RELIABILITY_STATS`` names a file, every fuzz test
appends one JSON line ``{"test", "cases", "crashes", "files_modified", "events_dropped"}``
to it; ``bench/reliability_report.py`` turns those lines into ``bench/RELIABILITY.md``.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from fuzzprofiles import PROFILE  # noqa: E402  (registers the profiles)


class CaseStats:
    """Counts what one fuzz test tried; written as a JSON line at teardown."""

    def __init__(self, test: str) -> None:
        self.test = test
        self.cases = 0
        self.findings = 0
        self.named = 0  # detectable problems checked to be named by a finding
        self.skipped_lines = 0
        self.events_dropped = 0
        self.files_modified = 0
        self.started = time.monotonic()


@pytest.fixture
def case_stats(request):
    stats = CaseStats(request.node.nodeid)
    yield stats
    out = os.environ.get("STREAMWATCH_RELIABILITY_STATS")
    if out:
        failed = bool(getattr(request.node, "rep_call", None) and request.node.rep_call.failed)
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(
                json.dumps(
                    {
                        "test": stats.test,
                        "profile": PROFILE,
                        "cases": stats.cases,
                        "crashes": int(failed),
                        "findings": stats.findings,
                        "named": stats.named,
                        "skipped_lines": stats.skipped_lines,
                        "events_dropped": stats.events_dropped,
                        "files_modified": stats.files_modified,
                        "seconds": round(time.monotonic() - stats.started, 1),
                    }
                )
                + "\n"
            )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if rep.when == "call":
        item.rep_call = rep
    return rep
