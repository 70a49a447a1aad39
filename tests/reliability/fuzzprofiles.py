"""Hypothesis profiles of the reliability tests, chosen with the
``STREAMWATCH_HYPOTHESIS_PROFILE`` environment variable:

* ``ci`` (default; a few hundred cases in all) is **derandomized**: the same cases every run,
  so CI cannot turn red on a case nobody changed code for. (Hypothesis ties a derandomized
  run to no example database, so the recorded cases below are replayed by twins of the fuzz
  tests made by :func:`found_case_twins`.)
* ``reliability`` (≥ 10,000 cases in all, ``make reliability``) keeps exploring with a new
  seed every run and records each failing case it finds (shrunk) in :data:`FOUND` — commit
  that folder with the fix so CI replays the case from then on.
"""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ReadOnlyDatabase

PROFILE = os.environ.get("STREAMWATCH_HYPOTHESIS_PROFILE", "ci")
#: failing cases found by the ``reliability`` profile, replayed by ``ci`` (hypothesis's
#: example-database layout, one folder per test)
FOUND = Path(__file__).resolve().parent / "found-cases"
_COMMON = dict(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("ci", max_examples=25, derandomize=True, database=None, **_COMMON)
settings.register_profile("reliability", max_examples=1000, derandomize=False,
                          database=DirectoryBasedExampleDatabase(FOUND), **_COMMON)


def found_cases_settings(found: Path = FOUND) -> settings:
    """Replay, read-only and in order, the cases recorded in ``found``; generate nothing."""
    return settings(settings.get_profile("ci"), derandomize=False, phases=[Phase.explicit, Phase.reuse],
                    database=ReadOnlyDatabase(DirectoryBasedExampleDatabase(found)))


def fuzz_settings(weight: float = 1.0) -> settings:
    """Settings of the active profile with ``max_examples`` scaled by ``weight``."""
    base = settings.get_profile(PROFILE)
    return settings(base, max_examples=max(1, int(base.max_examples * weight)))


def found_case_twins(namespace: dict, found: Path = FOUND) -> dict:
    """For each hypothesis test in ``namespace`` (a fuzz module's ``globals()``) with cases
    recorded in :data:`FOUND`, a twin test ``<name>__found_cases`` that replays exactly those
    cases (same strategies, same database key, same marks and fixtures); none otherwise."""
    from hypothesis import given
    from hypothesis.internal.reflection import function_digest

    db = DirectoryBasedExampleDatabase(found)
    twins = {}
    for name, test in list(namespace.items()):
        handle = getattr(test, "hypothesis", None)
        if not name.startswith("test_") or handle is None:
            continue
        if not any(True for _ in db.fetch(function_digest(handle.inner_test))):
            continue
        twin = found_cases_settings(found)(given(**handle._given_kwargs)(handle.inner_test))
        twin.pytestmark = list(getattr(test, "pytestmark", []))
        twin.__name__ = twin.__qualname__ = f"{name}__found_cases"
        twins[twin.__name__] = twin
    return twins
