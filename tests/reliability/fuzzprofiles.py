"""Hypothesis profiles of the reliability tests: ``ci`` (default; a few hundred cases in all)
and ``reliability`` (≥ 10,000 cases in all, ``make reliability``), chosen with the
``STREAMWATCH_HYPOTHESIS_PROFILE`` environment variable."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("STREAMWATCH_HYPOTHESIS_PROFILE", "ci")
_COMMON = dict(
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile("ci", max_examples=25, **_COMMON)
settings.register_profile("reliability", max_examples=1000, **_COMMON)


def fuzz_settings(weight: float = 1.0) -> settings:
    """Settings of the active profile with ``max_examples`` scaled by ``weight``."""
    base = settings.get_profile(PROFILE)
    return settings(base, max_examples=max(1, int(base.max_examples * weight)))
