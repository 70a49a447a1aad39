"""The backend interface's defaults: a control a backend does not list in CONTROLS raises
NotSupported naming the control (exit status 2 when it reaches a command), supports() and
why_not() answer from the capability flags; the package's lazy ``streamwatch.record``."""

from __future__ import annotations

import pytest

import streamwatch
from streamwatch.backends.base import Backend, Control, NotSupported
from streamwatch.errors import ExitCode

CALLS = {
    Control.START_QUERY: lambda b: b.start_query("q"),
    Control.STOP_QUERY: lambda b: b.stop_query("q"),
    Control.RESTART_QUERY: lambda b: b.restart_query("q"),
    Control.START_PIPELINE: lambda b: b.start_pipeline(),
    Control.STOP_PIPELINE: lambda b: b.stop_pipeline(),
    Control.RESTART_PIPELINE: lambda b: b.restart_pipeline(),
    Control.LAND: lambda b: b.land(2, "flights"),
    Control.SET_TRIGGER: lambda b: b.set_trigger("processingTime=5s", "q"),
    Control.READ_RESULTS: lambda b: b.read_results("q", 10),
}


class Bare(Backend):
    """Implements nothing but the lifecycle."""

    CONTROLS = frozenset({Control.LAND})


def test_every_control_has_a_default_that_refuses():
    assert set(CALLS) == set(Control)  # a new control needs a default (and this table)
    b = Bare()
    for control, call in CALLS.items():
        with pytest.raises(NotSupported) as e:
            call(b)
        assert e.value.control is control
        assert str(e.value) == f"{control.value}: not supported by this backend"
        assert e.value.exit_code == ExitCode.USAGE
        assert isinstance(e.value, NotImplementedError)


def test_capabilities_and_lifecycle_defaults():
    b = Bare()
    assert b.supports(Control.LAND) and not b.supports(Control.STOP_QUERY)
    assert b.why_not(Control.STOP_QUERY) == "stop a query: not supported by this backend"
    assert dict(b.triggers) == {} and dict(b.output_modes) == {} and b.emits_pipeline is False
    with pytest.raises(NotImplementedError):
        b.start(lambda _: None)
    b.stop()
    b.stop()  # idempotent


def test_record_is_loaded_on_first_use_and_other_names_are_attribute_errors():
    from streamwatch.spark.record import record

    assert streamwatch.record is record
    assert "record" in streamwatch.__all__
    with pytest.raises(AttributeError, match="module 'streamwatch' has no attribute 'recrod'"):
        streamwatch.recrod  # noqa: B018
