"""`--prometheus`: the latest per-query metrics served in Prometheus text format."""

from __future__ import annotations

import urllib.request

from streamwatch.metrics import PrometheusSink
from streamwatch.model.events import QueryProgress, QueryStarted, QueryTerminated
from tests.unit.test_events_model import PROGRESS


def test_scrape_shows_latest_progress_per_query():
    sink = PrometheusSink(0)
    try:
        sink(QueryStarted(PROGRESS["id"], PROGRESS["runId"], None, name="flights_gold"))
        sink(QueryProgress.from_dict(PROGRESS))
        sink(QueryProgress.from_dict({**PROGRESS, "batchId": 8}))
        sink(QueryTerminated(PROGRESS["id"], PROGRESS["runId"], None, exception="boom"))
        sink("not an event")
        text = urllib.request.urlopen(f"http://127.0.0.1:{sink.port}/metrics", timeout=10).read().decode()
    finally:
        sink.close()
    assert 'streamwatch_batch_id{query="flights_gold"} 8.0' in text
    assert 'streamwatch_input_rows_per_second{query="flights_gold"} 115.0' in text
    assert 'streamwatch_input_rows_total{query="flights_gold"} 460.0' in text  # 2 batches × 230 rows
    assert 'streamwatch_watermark_ms{query="flights_gold"} 1.35705594e+12' in text
    assert 'streamwatch_query_active{query="flights_gold"} 0.0' in text
    assert 'streamwatch_query_failures_total{query="flights_gold"} 1.0' in text
