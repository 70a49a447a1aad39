"""`--output-mode LAYER=MODE` on `streamwatch run` and `streamwatch log`: checked before Spark
starts (one line, exit 2), passed to the runner, and Spark's refusal is one line (exit 3)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from streamwatch.pipeline import Workspace, get_pipeline

STREAMWATCH = str(Path(sys.executable).parent / "streamwatch")


def test_specs_become_layer_modes():
    flights = get_pipeline("flights")
    assert flights.output_modes(["gold=update", "flights_silver=Append"]) == {"gold": "update", "silver": "append"}
    assert flights.output_modes([]) == {}


@pytest.mark.parametrize("spec,message", [
    ("gold", "expected LAYER=MODE"),
    ("gold=", "expected LAYER=MODE"),
    ("nope=update", "has no layer 'nope'; layers: bronze"),
    ("gold=sometimes", "unknown output mode 'sometimes' for layer 'gold': use append, update, complete"),
])
def test_bad_specs_raise_one_line(spec, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        get_pipeline("flights").output_modes([spec])


def test_a_layer_given_twice_is_refused():
    with pytest.raises(ValueError, match="given twice"):
        get_pipeline("flights").output_modes(["gold=update", "flights_gold=complete"])


@pytest.mark.parametrize("command", ["run", "log"])
def test_bad_output_mode_exits_2_before_spark_starts(command, tmp_path):
    out = subprocess.run([STREAMWATCH, command, "--workspace", str(tmp_path), "--output-mode", "gold=sometimes"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == (f"streamwatch {command}: unknown output mode 'sometimes' for layer 'gold': "
                                  "use append, update, complete")
    assert out.stdout == "" and not (tmp_path / "logs").exists(), "Spark must not have started"


def test_the_dashboard_backend_shows_the_overridden_mode(tmp_path):
    from streamwatch.spark.live import LiveBackend

    backend = LiveBackend(get_pipeline("flights"), Workspace(tmp_path), output_modes={"gold": "update"})
    assert backend.output_modes["flights_gold"] == "update"
    assert backend.output_modes["flights_silver"] == "append"


@pytest.mark.spark
def test_a_mode_spark_refuses_is_one_line_and_exit_3(tmp_path):
    out = subprocess.run(
        [STREAMWATCH, "log", "--workspace", str(tmp_path / "ws"), "--no-ui", "--trigger", "availableNow",
         "--max-files", "1", "--output-mode", "silver=complete", "--out", str(tmp_path / "ev.jsonl")],
        capture_output=True, text=True, timeout=300)
    assert out.returncode == 3, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    assert "flights_silver (complete mode): Spark rejected the query" in out.stderr, out.stderr[-2000:]
