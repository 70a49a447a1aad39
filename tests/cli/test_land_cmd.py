"""``streamwatch land``: atomic landing into a workspace, resumable, clear errors."""

from __future__ import annotations

import csv
import json

from click.testing import CliRunner

from streamwatch.cli import main


def _land(*args):
    return CliRunner().invoke(main, ["land", *args])


def test_lands_each_source_and_resumes(tmp_path):
    out = _land("flights", "--files", "2", "--workspace", str(tmp_path))
    assert out.exit_code == 0, out.output
    paths = [line for line in out.stdout.splitlines() if line.endswith(".csv")]
    assert len(paths) == 4  # flights + weather
    flights = tmp_path / "landing" / "flights" / "flights"
    assert sorted(p.name for p in flights.glob("*.csv")) == ["flights_2013-01-01T06-00.csv", "flights_2013-01-01T12-00.csv"]
    assert not [p for p in flights.iterdir() if p.name.endswith(".tmp")]
    again = _land("flights", "--workspace", str(tmp_path))
    assert again.exit_code == 0
    assert len(list(flights.glob("*.csv"))) == 3
    assert "landed 1 file(s)" in again.stderr


def test_bad_ratio_writes_malformed_orders_as_their_own_files(tmp_path):
    out = _land("orders", "--files", "3", "--bad-ratio", "0.5", "--workspace", str(tmp_path))
    assert out.exit_code == 0, out.output
    landing = tmp_path / "landing" / "orders" / "orders"
    assert len(list(landing.glob("orders_*.json"))) == 3, "--files 3: three files, malformed ones among them"
    assert _land("orders", "--files", "20", "--bad-ratio", "0.5", "--workspace", str(tmp_path)).exit_code == 0
    bad = list(landing.glob("*_bad_*.json"))
    assert bad
    good = [p for p in landing.glob("orders_*.json") if "_bad_" not in p.name]
    assert good and all(isinstance(json.loads(p.read_text()), list) for p in good)
    assert len(bad) + len(good) == 23


def test_late_ratio_holds_rows_back_across_invocations(tmp_path):
    assert _land("flights", "--files", "2", "--late-ratio", "0.2", "--workspace", str(tmp_path)).exit_code == 0
    landing = tmp_path / "landing" / "flights" / "flights"
    assert len(list(landing.glob(".late-pending.*.csv"))) == 1
    assert _land("flights", "--files", "4", "--late-ratio", "0.2", "--workspace", str(tmp_path)).exit_code == 0
    rows = list(csv.DictReader((landing / "flights_2013-01-02T06-00.csv").open()))
    hours = [r["time_hour"] for r in rows]
    assert any(h < "2013-01-02" for h in hours), "rows held back from day 1 must land in a later file"
    assert hours != sorted(hours), "late rows arrive out of order"


def test_errors_are_one_line_without_traceback(tmp_path):
    out = _land("nope", "--workspace", str(tmp_path))
    assert out.exit_code == 2
    assert out.stderr.strip() == "streamwatch land: unknown pipeline 'nope'; known: clicks, events, flights, orders, sessions"
    out = _land("orders", "--late-ratio", "0.1", "--workspace", str(tmp_path))
    assert out.exit_code == 2
    assert "does not support --late-ratio" in out.stderr and "Traceback" not in out.output
    out = _land("flights", "--bad-ratio", "2", "--workspace", str(tmp_path))
    assert out.exit_code == 2 and "Traceback" not in out.output
