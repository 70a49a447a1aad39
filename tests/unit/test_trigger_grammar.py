"""The one trigger grammar (streamwatch.analysis.triggers) as the CLI, the dashboard and the
Spark layer see it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from streamwatch.analysis.triggers import (
    DEFAULT_TRIGGER_MS,
    ONCE_NOTE,
    TriggerError,
    parse_trigger,
    trigger_interval_ms,
    trigger_kwargs,
    trigger_note,
)
from streamwatch.tui.commands import CommandError, normalise_trigger


@pytest.mark.parametrize("spec,kwargs,canonical,ms", [
    ("default", {}, "default", DEFAULT_TRIGGER_MS),
    ("", {}, "default", DEFAULT_TRIGGER_MS),
    ("availableNow", {"availableNow": True}, "availableNow", DEFAULT_TRIGGER_MS),
    ("ONCE", {"once": True}, "once", DEFAULT_TRIGGER_MS),
    ("processingTime=2 seconds", {"processingTime": "2 seconds"}, "processingTime=2s", 2_000),
    ("processingTime=500ms", {"processingTime": "500 milliseconds"}, "processingTime=500ms", 500),
    ("5s", {"processingTime": "5 seconds"}, "processingTime=5s", 5_000),
    ("1 minute", {"processingTime": "1 minutes"}, "processingTime=1m", 60_000),
    ("continuous=1s", {"continuous": "1 seconds"}, "continuous=1s", 1_000),
    ("realTime=5s", {"realTime": "5 seconds"}, "realTime=5s", 5_000),
    ("realtime", {"realTime": "5 minutes"}, "realTime=5m", 300_000),
])
def test_every_front_end_reads_a_spec_the_same_way(spec, kwargs, canonical, ms):
    assert trigger_kwargs(spec) == kwargs  # the Spark layer
    assert parse_trigger(spec).spec == canonical
    if spec:
        assert normalise_trigger(spec) == canonical  # the dashboard's :trigger
    assert trigger_interval_ms(spec) == ms  # the stall diagnosis


@pytest.mark.parametrize("bad", ["sometimes", "processingTime=", "processingTime=fast", "5 parsecs", "x=5s"])
def test_bad_specs_are_refused_everywhere(bad):
    with pytest.raises(TriggerError, match="unknown trigger"):
        parse_trigger(bad)
    with pytest.raises(CommandError, match="bad trigger"):
        normalise_trigger(bad)
    assert trigger_interval_ms(bad) == DEFAULT_TRIGGER_MS
    assert trigger_note(bad) is None


def test_once_carries_the_deprecation_note():
    assert trigger_note("once") == ONCE_NOTE and trigger_note("availableNow") is None


def test_the_cli_checks_a_trigger_without_importing_pyspark():
    code = ("import sys\nfrom streamwatch.cli.options import check_run_options\n"
            "check_run_options('flights', '5s', (), 1.0, None, None)\n"
            "try:\n    check_run_options('flights', 'sometimes', (), 1.0, None, None)\n"
            "except ValueError as e:\n    print(e)\n"
            "print('pyspark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "unknown trigger 'sometimes': use default, availableNow, once, processingTime=<interval>, "
        "continuous=<interval> or realTime[=<interval>] (intervals like 500ms, 2s, 1 minute)", "False"]
