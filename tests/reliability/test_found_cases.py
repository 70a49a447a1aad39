"""The regression route of the fuzz tests: a case the ``reliability`` profile finds is
recorded in an example database, and the twin that :func:`found_case_twins` makes replays
exactly that case — no generation — while the ``ci`` profile itself stays derandomized."""

from __future__ import annotations

import pytest
from fuzzprofiles import PROFILE, found_case_twins
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase


def test_ci_profile_is_derandomized_and_reliability_records():
    ci, rel = settings.get_profile("ci"), settings.get_profile("reliability")
    assert ci.derandomize and ci.database is None
    assert not rel.derandomize and isinstance(rel.database, DirectoryBasedExampleDatabase)
    assert PROFILE in ("ci", "reliability")


def test_a_recorded_case_is_replayed_by_its_twin_and_nothing_else_runs(tmp_path):
    seen: list[int] = []

    def test_toy(n):
        seen.append(n)
        assert n < 1000

    explore = settings(database=DirectoryBasedExampleDatabase(tmp_path), derandomize=False, max_examples=200)
    with pytest.raises(AssertionError):  # "the reliability run": finds, shrinks and records n=1000
        explore(given(n=st.integers(min_value=0, max_value=10**6))(test_toy))()
    namespace = {"test_toy": given(n=st.integers(min_value=0, max_value=10**6))(test_toy), "helper": len}
    twins = found_case_twins(namespace, tmp_path)
    assert list(twins) == ["test_toy__found_cases"]
    seen.clear()
    with pytest.raises(AssertionError):
        twins["test_toy__found_cases"]()
    assert seen and set(seen) == {1000}, seen  # only the recorded (shrunk) case
    assert found_case_twins(namespace, tmp_path / "empty") == {}
