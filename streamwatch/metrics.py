"""Latest per-query metrics in Prometheus text format (``streamwatch log --prometheus PORT``).

A sink for :class:`~streamwatch.events.bus.EventBus`: each ``QueryProgress`` updates gauges
labelled by query name (batch id, rates in rows/s, batch duration in ms, state rows, watermark
in epoch ms); input rows and failures are counters. Uses its own registry (no process
collectors) and ``prometheus_client``'s HTTP server thread. No pyspark, no textual.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from streamwatch.model.events import Event, QueryProgress, QueryStarted, QueryTerminated


class PrometheusSink:
    """Serves ``/metrics`` on ``port`` (0 picks a free one: see ``self.port``) on ``addr``.
    Raises ``OSError`` when the port is taken."""

    def __init__(self, port: int, addr: str = "127.0.0.1") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r, q = self.registry, ["query"]
        self.batch_id = Gauge("streamwatch_batch_id", "Latest micro-batch id", q, registry=r)
        self.input_rps = Gauge("streamwatch_input_rows_per_second", "Input rate of the latest batch (rows/s)", q, registry=r)
        self.processed_rps = Gauge("streamwatch_processed_rows_per_second", "Processing rate of the latest batch (rows/s)", q, registry=r)
        self.duration = Gauge("streamwatch_batch_duration_ms", "Duration of the latest batch (ms)", q, registry=r)
        self.state_rows = Gauge("streamwatch_state_rows_total", "Rows in all state stores (latest batch)", q, registry=r)
        self.watermark = Gauge("streamwatch_watermark_ms", "Watermark of the latest batch (epoch ms)", q, registry=r)
        self.active = Gauge("streamwatch_query_active", "1 while the query runs", q, registry=r)
        self.input_rows = Counter("streamwatch_input_rows", "Rows read by the query", q, registry=r)
        self.failures = Counter("streamwatch_query_failures", "Terminations with an exception", q, registry=r)
        self._names: dict[str, str] = {}
        self._server, self._thread = start_http_server(port, addr=addr, registry=r)
        self.port = self._server.server_port

    def __call__(self, obj: Any) -> None:
        if not isinstance(obj, Event):
            return
        if isinstance(obj, (QueryStarted, QueryProgress)) and obj.name:
            self._names[obj.id] = obj.name
        name = self._names.get(obj.id, obj.id)
        if isinstance(obj, QueryStarted):
            self.active.labels(name).set(1)
        elif isinstance(obj, QueryProgress):
            self.batch_id.labels(name).set(obj.batch_id)
            self.input_rps.labels(name).set(obj.input_rows_per_second or 0.0)
            self.processed_rps.labels(name).set(obj.processed_rows_per_second or 0.0)
            self.duration.labels(name).set(obj.batch_duration)
            self.state_rows.labels(name).set(sum(s.num_rows_total for s in obj.state_operators))
            if obj.watermark_ms is not None:
                self.watermark.labels(name).set(obj.watermark_ms)
            self.input_rows.labels(name).inc(obj.num_input_rows)
        elif isinstance(obj, QueryTerminated):
            self.active.labels(name).set(0)
            if obj.failed:
                self.failures.labels(name).inc()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
