"""Latest per-query metrics in Prometheus text format (``streamwatch log --prometheus PORT``).

A sink for :class:`~streamwatch.events.bus.EventBus`: each ``QueryProgress`` updates gauges
labelled by query name (batch id, rates in rows/s, batch duration in ms, state rows, watermark
in epoch ms); input rows and failures are counters. The health ``log`` judges (the same
verdict as ``streamwatch watch --log``) arrives as
:class:`~streamwatch.analysis.records.QueryHealth` records: ``streamwatch_health{query,state}``,
one series per :class:`~streamwatch.analysis.health_window.Health` state, 1 for the current
verdict and 0 for the others; :class:`~streamwatch.analysis.records.SourceLag` records set,
per source whose lag the checkpoint watch measures (labels ``query``, ``source``),
``streamwatch_source_lag_seconds`` (age of the oldest unread input: a landed file's
modification time, a Kafka record's broker timestamp; 0 with none),
``…_backlog_files`` (file sources) or ``…_backlog_records`` (Kafka), ``…_catching_up`` (1
draining or caught up, 0 not) and ``…_catchup_seconds`` (the estimate, only while catching
up), each absent while unknown. Uses its own registry (no process collectors) and
``prometheus_client``'s HTTP server thread. No pyspark, no textual.
"""

from __future__ import annotations

import contextlib
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server

from streamwatch.analysis.health_window import Health
from streamwatch.analysis.records import QueryHealth, SourceLag
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
        self.health = Gauge("streamwatch_health", "1 for the query's current health over the sliding window, "
                            "0 for the other states", [*q, "state"], registry=r)
        s = [*q, "source"]
        self.source_lag = Gauge("streamwatch_source_lag_seconds",
                                "Seconds since the oldest file landed that the file source has not read (0: none)",
                                s, registry=r)
        self.source_backlog = Gauge("streamwatch_source_backlog_files", "Files landed that the file source has not read",
                                    s, registry=r)
        self.source_records = Gauge("streamwatch_source_backlog_records",
                                    "Records behind on a Kafka source: broker end offset minus the committed offset, "
                                    "summed over partitions", s, registry=r)
        self.catching_up = Gauge("streamwatch_source_catching_up",
                                 "1 when the source's backlog drains (or is empty), 0 when it does not", s, registry=r)
        self.catchup = Gauge("streamwatch_source_catchup_seconds",
                             "Estimated seconds until the backlog is read (only while catching up)", s, registry=r)
        self._names: dict[str, str] = {}
        self._server, self._thread = start_http_server(port, addr=addr, registry=r)
        self.port = self._server.server_port

    def __call__(self, obj: Any) -> None:
        if isinstance(obj, QueryHealth):
            for state in Health:
                self.health.labels(obj.query, state.value).set(1 if state is obj.health else 0)
        elif isinstance(obj, SourceLag):
            self._lag(obj)
        elif isinstance(obj, Event):
            self._event(obj)

    def _lag(self, rec: SourceLag) -> None:
        set_source_lag(rec, (rec.query, rec.source), self.source_lag,
                       self.source_records if rec.source_kind == "kafka" else self.source_backlog,
                       self.catching_up, self.catchup)

    def _event(self, obj: Event) -> None:
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


def set_source_lag(rec: SourceLag, labels: tuple[str, ...], lag: Gauge, backlog: Gauge, catching_up: Gauge,
                   catchup: Gauge) -> None:
    """``rec``'s figures on the series ``labels`` of each gauge (``backlog``: the files or the
    Kafka records one); a figure unknown now removes its series, so no stale value is served."""
    for gauge, value in ((lag, rec.lag_s), (backlog, rec.backlog),
                         (catching_up, None if rec.catching_up is None else int(rec.catching_up)),
                         (catchup, rec.catchup_s)):
        if value is not None:
            gauge.labels(*labels).set(value)
        else:  # KeyError: none was set
            with contextlib.suppress(KeyError):
                gauge.remove(*labels)
