"""The dashboard's collector switches (``streamwatch.tui.gc_policy``), against the
interpreter's own account of its collector (``gc.isenabled``, ``gc.get_freeze_count``):
a hold turns automatic collection off and its release on again, a collector someone else
disabled is neither held nor enabled, and restore undoes the hold and the freeze."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from streamwatch.tui.gc_policy import GcPolicy


@pytest.fixture
def collector_as_found() -> Iterator[None]:
    """Whatever a test does to the process-global collector is undone after it."""
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_as_found")
def test_a_hold_disables_collection_until_released():
    gc.enable()
    policy = GcPolicy()
    steps = [policy.hold(), gc.isenabled(), policy.held, policy.hold(), gc.isenabled()]
    policy.release()
    steps += [gc.isenabled(), policy.held]
    policy.release()  # idempotent: nothing held, nothing changed
    steps.append(gc.isenabled())
    assert steps == [True, False, True, False, False, True, False, True]


@pytest.mark.usefixtures("collector_as_found")
def test_a_collector_disabled_elsewhere_is_not_held_nor_enabled():
    gc.disable()
    policy = GcPolicy()
    took = policy.hold()
    policy.release()
    policy.restore()
    assert (took, policy.held, gc.isenabled()) == (False, False, False)


@pytest.mark.usefixtures("collector_as_found")
def test_freeze_moves_what_lives_out_of_sight_and_restore_undoes_hold_and_freeze():
    gc.unfreeze()
    gc.enable()
    policy = GcPolicy()
    policy.freeze_long_lived()
    frozen = gc.get_freeze_count()
    policy.hold()
    policy.restore()
    assert frozen > 0  # the objects alive at the freeze (this test's module, pytest, …)
    assert (gc.get_freeze_count(), gc.isenabled(), policy.held, policy.frozen) == (0, True, False, False)


@pytest.mark.usefixtures("collector_as_found")
def test_restore_without_a_freeze_leaves_a_freeze_made_elsewhere():
    gc.freeze()
    assert gc.get_freeze_count() > 0
    GcPolicy().restore()
    # an unfreeze empties the permanent generation (count 0); frozen objects freed meanwhile by
    # other threads of the run only lower the count, so "still > 0" is what tells the two apart
    assert gc.get_freeze_count() > 0
