"""``log --prometheus``: the health verdict and the file sources' lag served as gauges
(``streamwatch_health{query,state}``, ``streamwatch_source_*{query,source}``), scraped from
the real HTTP server on loopback and read back with prometheus_client's own text parser."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from streamwatch.analysis.health_window import Health, HealthVerdict
from streamwatch.analysis.records import QueryHealth, SourceLag
from streamwatch.metrics import PrometheusSink

T = 1_795_806_268_181


def _scrape(sink: PrometheusSink) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample served, as (name, sorted labels) → value."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{sink.port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def _health(query: str, health: Health, previous: Health | None) -> QueryHealth:
    return QueryHealth("qid-" + query, query, f"/ws/checkpoints/{query}", T,
                       HealthVerdict(health, "test verdict", T - 1000), previous)


def _states(samples: dict, query: str) -> dict[str, float]:
    return {dict(labels)["state"]: v for (name, labels), v in samples.items()
            if name == "streamwatch_health" and dict(labels)["query"] == query}


def test_one_series_per_state_and_the_current_one_is_1():
    sink = PrometheusSink(0)
    try:
        sink(_health("events_bronze", Health.STOPPED, None))
        sink(_health("events_silver", Health.IDLE, None))
        first = _scrape(sink)
        sink(_health("events_bronze", Health.OK, Health.STOPPED))
        second = _scrape(sink)
    finally:
        sink.close()
    every_state = {h.value for h in Health}
    assert _states(first, "events_bronze") == {s: (1.0 if s == "stopped" else 0.0) for s in every_state}
    assert _states(first, "events_silver") == {s: (1.0 if s == "idle" else 0.0) for s in every_state}
    assert _states(second, "events_bronze") == {s: (1.0 if s == "ok" else 0.0) for s in every_state}
    assert _states(second, "events_silver") == _states(first, "events_silver")


def test_source_lag_gauges_and_unknown_removes_them():
    known = SourceLag("qid", "events_bronze", "/ws/cp", "0", "file", T, backlog=3, oldest_unread_ms=T - 12_500,
                      lag_s=12.5, catchup_s=4.0, catching_up=True)
    unknown = SourceLag("qid", "events_bronze", "/ws/cp", "0", "file", T + 5000, backlog=None,
                        oldest_unread_ms=None, lag_s=None, reason="folder cannot be listed")
    sink = PrometheusSink(0)
    try:
        sink(known)
        seen = _scrape(sink)
        sink(unknown)
        after = _scrape(sink)
    finally:
        sink.close()
    labels = (("query", "events_bronze"), ("source", "0"))
    assert seen[("streamwatch_source_lag_seconds", labels)] == 12.5
    assert seen[("streamwatch_source_backlog_files", labels)] == 3
    assert seen[("streamwatch_source_catching_up", labels)] == 1
    assert seen[("streamwatch_source_catchup_seconds", labels)] == 4.0
    gone = {name for name, lb in after if lb == labels and name.startswith("streamwatch_source_")}
    assert gone == set(), f"an unknown lag leaves no stale series: {gone}"


def test_a_kafka_source_backlog_is_records_not_files():
    kafka = SourceLag("qid", "clicks_bronze", "/ws/cp", "0", "kafka", T, backlog=120, oldest_unread_ms=T - 3000,
                      lag_s=3.0, catching_up=False)
    sink = PrometheusSink(0)
    try:
        sink(kafka)
        seen = _scrape(sink)
    finally:
        sink.close()
    labels = (("query", "clicks_bronze"), ("source", "0"))
    assert seen[("streamwatch_source_backlog_records", labels)] == 120
    assert ("streamwatch_source_backlog_files", labels) not in seen
    assert seen[("streamwatch_source_lag_seconds", labels)] == 3.0
    assert seen[("streamwatch_source_catching_up", labels)] == 0
    assert ("streamwatch_source_catchup_seconds", labels) not in seen  # not catching up: no estimate
