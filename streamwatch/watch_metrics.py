"""Prometheus gauges for ``streamwatch watch --log --prometheus PORT`` (a checkpoint watch,
no listener). Same serving as :mod:`streamwatch.metrics`: its own registry, no process
collectors, ``prometheus_client``'s HTTP server thread. No pyspark, no textual.

Gauges (label ``query`` = the watched query's name, ``id`` = its query id):
``streamwatch_checkpoint_batch_id`` (latest committed batch), ``…_batch_duration_ms``
(planned → committed of that batch, ms), ``…_input_files`` (files its file sources read),
``…_in_flight_seconds`` (age of the planned-but-uncommitted batch, 0 when none),
``…_stuck`` (1 when stuck), ``…_health`` (one series per state of
:class:`~streamwatch.analysis.health_window.Health`, label ``state``: 1 for the current
verdict, 0 for the others); per file source, and per Kafka source with ``--bootstrap``
(labels ``query``, ``id``, ``source``) ``…_source_lag_seconds`` (age of the oldest landed,
unread file; Kafka: seconds since the broker timestamp of the first record after the committed
offset, the oldest over partitions; 0 with none), ``…_source_backlog_files`` (file sources) or
``…_source_backlog_records`` (Kafka: end offset − committed offset, summed over partitions),
``…_source_catching_up`` (1 draining or caught up, 0 not) and ``…_source_catchup_seconds``
(the estimate, only while catching up) — each absent while unknown; per pipeline edge (labels ``upstream``, ``downstream``) ``…_backlog_files`` and
``…_edge_lag_seconds`` (since the oldest unread output was committed upstream; absent while
unknown), set each time a batch commits.
"""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from streamwatch.analysis.health_window import Health
from streamwatch.analysis.records import CheckpointBatch, CheckpointStatus, PipelineEdge, QueryHealth, SourceLag
from streamwatch.metrics import set_source_lag


class WatchMetrics:
    """Serves ``/metrics`` on ``port`` (0 picks a free one: see ``self.port``) on ``addr``;
    call it with every watch record and with fresh statuses each poll. Raises ``OSError``
    when the port is taken."""

    def __init__(self, port: int, addr: str = "127.0.0.1") -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        q = ["query", "id"]
        self.batch_id = Gauge("streamwatch_checkpoint_batch_id", "Latest committed batch id (commits/N)", q, registry=r)
        self.duration = Gauge("streamwatch_checkpoint_batch_duration_ms",
                              "Latest batch: commit file time minus batchTimestampMs (ms)", q, registry=r)
        self.input_files = Gauge("streamwatch_checkpoint_input_files", "Files read by the latest batch (file sources)", q, registry=r)
        self.in_flight = Gauge("streamwatch_checkpoint_in_flight_seconds",
                               "Seconds the planned, uncommitted batch has been running (0: none)", q, registry=r)
        self.stuck = Gauge("streamwatch_checkpoint_stuck", "1 when offsets N has had no commit N for > 5x the cadence", q, registry=r)
        self.health = Gauge("streamwatch_checkpoint_health",
                            "1 for the query's current health over the watch window, 0 for the other states",
                            [*q, "state"], registry=r)
        self.backlog = Gauge("streamwatch_checkpoint_backlog_files", "Files written upstream, not yet read downstream",
                             ["upstream", "downstream"], registry=r)
        self.edge_lag = Gauge("streamwatch_checkpoint_edge_lag_seconds",
                              "Seconds since the oldest output not yet read downstream was committed upstream",
                              ["upstream", "downstream"], registry=r)
        s = ["query", "id", "source"]
        self.lag = Gauge("streamwatch_checkpoint_source_lag_seconds",
                         "Seconds since the oldest input the source has not read arrived (file: modification time; "
                         "Kafka: the record's broker timestamp) (0: none)", s, registry=r)
        self.source_backlog = Gauge("streamwatch_checkpoint_source_backlog_files",
                                    "Files landed that the file source has not read", s, registry=r)
        self.source_records = Gauge("streamwatch_checkpoint_source_backlog_records",
                                    "Records behind on a Kafka source: broker end offset minus the committed offset, "
                                    "summed over partitions", s, registry=r)
        self.catching_up = Gauge("streamwatch_checkpoint_source_catching_up",
                                 "1 when the source's backlog drains (or is empty), 0 when it does not", s, registry=r)
        self.catchup = Gauge("streamwatch_checkpoint_source_catchup_seconds",
                             "Estimated seconds until the backlog is read (only while catching up)", s, registry=r)
        self._server, self._thread = start_http_server(port, addr=addr, registry=r)
        self.port = self._server.server_port

    def __call__(self, rec: object) -> None:
        if isinstance(rec, CheckpointBatch):
            self.batch_id.labels(rec.query, rec.id).set(rec.batch_id)
            if rec.duration_ms is not None:
                self.duration.labels(rec.query, rec.id).set(rec.duration_ms)
            self.input_files.labels(rec.query, rec.id).set(rec.input_files or 0)
        elif isinstance(rec, CheckpointStatus):
            self.in_flight.labels(rec.query, rec.id).set(rec.in_flight_s or 0.0)
            self.stuck.labels(rec.query, rec.id).set(1 if rec.stuck else 0)
        elif isinstance(rec, QueryHealth):
            for state in Health:
                self.health.labels(rec.query, rec.id, state.value).set(1 if state is rec.health else 0)
        elif isinstance(rec, SourceLag):
            set_source_lag(rec, (rec.query, rec.id, rec.source), self.lag,
                           self.source_records if rec.source_kind == "kafka" else self.source_backlog,
                           self.catching_up, self.catchup)
        elif isinstance(rec, PipelineEdge):
            self.backlog.labels(rec.upstream, rec.downstream).set(rec.backlog_files)
            if rec.lag_s is not None:
                self.edge_lag.labels(rec.upstream, rec.downstream).set(rec.lag_s)
            else:
                with contextlib.suppress(KeyError):
                    self.edge_lag.remove(rec.upstream, rec.downstream)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
