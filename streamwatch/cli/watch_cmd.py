"""``streamwatch watch PATH…``: follow streaming queries from their checkpoints alone.

Without ``--log`` the dashboard opens on a checkpoint backend; with ``--log`` the derived
records are written as JSONL (no textual imported) and, with ``--prometheus PORT``, served as
gauges, and with ``--notify URL`` each health change is POSTed as JSON. Exit codes: 0 ok
(stopped by SIGINT/SIGTERM, or ``--once`` with nothing stuck), 1 ``--once`` found a stuck
query (with ``--check`` also a query STOPPED, FAILING or STALLED), 2 usage, 4 a PATH is unreadable or not a checkpoint / the
output cannot be written.
"""

from __future__ import annotations

import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import click

from streamwatch.analysis.records import QueryHealth, WatchRecord
from streamwatch.cli.stores_help import OBJECT_STORES
from streamwatch.errors import Unreadable, UsageError

if TYPE_CHECKING:  # the watch machinery is imported when a watch runs, not for --help
    from streamwatch.analysis.merge import MergedRecords
    from streamwatch.analysis.session import CheckpointWatch
    from streamwatch.analysis.watch_kafka import KafkaOffsets
    from streamwatch.watch_metrics import WatchMetrics

EPILOG = """\b
Examples:
  streamwatch watch ./streamwatch-workspace          the dashboard on every checkpoint in it
  streamwatch watch /mnt/jobs/cp/orders --log        JSONL of each committed batch on stdout
  streamwatch watch s3://bucket/checkpoints/ --log --out batches.jsonl --poll 5
  streamwatch watch ./cps --log --prometheus 9109    gauges at http://127.0.0.1:9109/metrics
  streamwatch watch ./cps --log --once               derive what is there now, then exit
  streamwatch watch ./ws --recording ./ws/events.jsonl   listener numbers merged in
  streamwatch watch ./cps --log --once --check       exit 1 when a query is stopped, failing or stalled
  streamwatch watch ./cps --log --notify http://alerts.local/hook   POST each health change
  streamwatch watch ./cps --log --bootstrap broker1:9092   Kafka sources' lag in seconds too

\b
Records (one JSON object per line, field "kind"):
  checkpoint-batch    id, query, batchId, plannedAtMs, committedAtMs, durationMs,
                      triggerIntervalMs, idleGapMs, watermarkMs, watermarkDeltaMs,
                      inputFiles, inputBytes, inputs[], output, state[], originMs, endToEndMs,
                      listener (with --recording: runId, inputRows, inputRowsPerSecond,
                      processedRowsPerSecond, outputRows, durationMs{}; else null)
  checkpoint-status   id, query, lastBatchId, lastCommittedBatchId, inFlightBatchId,
                      inFlightSeconds, cadenceMs, stuck, idle, idleSeconds
  checkpoint-finding  id, query, severity, code, message, path
  pipeline-edge       upstream, downstream, path, backlogFiles, backlogBytes,
                      layerLatencyMs, endToEndMs, slowest, slowestLayer
  source-lag          id, query, source, sourceKind (file; kafka with --bootstrap), backlog
                      (files; Kafka: records), oldestUnreadMs, lagSeconds, arrivalPerSecond,
                      processedPerSecond, catchupSeconds, catchingUp, reason
  query-health        id, query, health (ok, lagging, stalled, stopped, failing, idle,
                      unknown), previous, reason, sinceMs, batchId, backlog, lagSeconds,
                      commits, samples, failedRuns — written when the health changes

\b
Health (over the recent batches and lag samples; docs/health.md has the rules):
  stopped   no commit for longer than the query's cadence allows and work waits
  failing   the in-flight batch failed in two or more runs (needs --recording)
  stalled   batches commit reading nothing while files wait
  lagging   a source's lag rose at each of its last 3 samples while batches commit
  idle      nothing planned for longer than the cadence allows and nothing waits
  ok / unknown (the reason says which evidence is missing)

\b
Exit codes:
  0  the dashboard was quit; --log stopped by SIGINT/SIGTERM, or --once with nothing stuck
  1  --once found a stuck query (a batch in flight too long: health stopped); with --check
     also a query whose health is stopped, failing or stalled (ok, lagging, idle, unknown: 0)
  2  bad option (--out, --prometheus, --once, --check, --notify or --bootstrap without --log; --check without
     --once; --bootstrap without confluent-kafka installed)
  4  a PATH is unreadable or not a checkpoint, --recording is missing or unreadable, or the output cannot be written
     (a Kafka broker that does not answer is not an error: the lag is unknown, with the reason)
""" + OBJECT_STORES

OK, STUCK, USAGE, UNREADABLE = 0, 1, 2, 4


@click.command("watch", epilog=EPILOG)
@click.argument("paths", nargs=-1, required=True)
@click.option("--log", "headless", is_flag=True, help="Headless: write the derived records as JSONL instead of opening the dashboard.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="With --log: append the JSONL to this file [default: stdout].")
@click.option("--poll", "poll_s", type=click.FloatRange(min=0.05), default=1.0, show_default=True,
              help="Seconds between looks at each checkpoint.")
@click.option("--history", type=click.IntRange(min=0), default=100, show_default=True,
              help="Committed batches derived when a checkpoint is first read.")
@click.option("--prometheus", "prometheus_port", type=click.IntRange(min=0, max=65535), default=None,
              help="With --log: serve gauges on this port (0 picks a free one).")
@click.option("--once", is_flag=True, help="With --log: derive what is there now and exit (1 when a query is stuck).")
@click.option("--recording", default=None, metavar="FILE",
              help="A streamwatch recording or Spark event log of the same queries (local or URL, followed while "
                   "written): per query id + batchId the listener's numbers win (duration = triggerExecution, "
                   "planned time, watermark) and its rows/rates are added.")
@click.option("--check", is_flag=True,
              help="With --log --once: exit 1 also when a query's health is stopped, failing or stalled.")
@click.option("--bootstrap", "--kafka-bootstrap", "bootstrap", default=None, metavar="HOST:PORT",
              help="With --log: the Kafka broker list of every watched query's Kafka sources; each gets a "
                   "source-lag record (records behind, lag in seconds since the broker timestamp of the first "
                   "unread record). One end-offset lookup per poll for all partitions, a fetch only when a "
                   "committed offset moved.")
@click.option("--notify", "notify_url", default=None, metavar="URL",
              help="With --log: POST each health change as JSON (query, checkpoint, from, to, reason, atMs) to URL; "
                   "a failed POST is reported once on stderr, never fatal.")
def watch(paths: tuple[str, ...], headless: bool, out: Path | None, poll_s: float, history: int,
          prometheus_port: int | None, once: bool, recording: str | None, check: bool, notify_url: str | None,
          bootstrap: str | None) -> None:
    """Watch streaming queries from their checkpoints alone — no listener, no code change.

    PATH is a checkpoint, a folder of checkpoints (searched recursively for folders holding
    offsets/ and metadata) or a streamwatch workspace; local or any fsspec URL (s3://…, gs://…,
    abfss://CONTAINER@ACCOUNT.dfs.core.windows.net/…, az://…).
    Each poll looks only at what changed (the next offsets/N and commits/N, and the
    source/sink/state files of each newly committed batch). Derived per batch: planned and
    committed time, duration, trigger cadence, idle gaps, input (files/bytes, Kafka offsets,
    Delta versions), output (files/bytes, Delta versions), watermark, state; per query: the
    in-flight batch, stuck (offsets N without commit N for longer than its recent batches make
    plausible: 5 × the slowest, at least two trigger intervals and 10 s) and idle;
    for chained queries (a file source reading another query's file sink, a Delta source
    reading a Delta sink) the backlog per edge and the end-to-end latency. The dashboard draws
    that pipeline in tab 7 and opens a batch's state with v in tab 3.
    """
    if not headless and (out or prometheus_port is not None or once or check or notify_url or bootstrap):
        raise UsageError("--out, --prometheus, --once, --check, --notify and --bootstrap need --log")
    if check and not once:
        raise UsageError("--check needs --once")
    if recording is not None and "://" not in recording and not Path(recording).exists():
        raise Unreadable(f"--recording {recording}: no such file or directory")
    if not headless:
        from streamwatch.backends.checkpoints import CheckpointBackend

        # WatchError (no checkpoint under PATH), EventSourceError (--recording): exit 4
        backend = CheckpointBackend(list(paths), poll_s=poll_s, history=history, recording=recording)
        from streamwatch.tui.launch import run_dashboard

        run_dashboard(backend)
        return
    notifier = Notifier(notify_url) if notify_url else None
    kafka = _kafka(bootstrap) if bootstrap else None
    sys.exit(_headless(list(paths), out, poll_s, history, prometheus_port, once, recording, check, notifier, kafka))


def _kafka(bootstrap: str) -> KafkaOffsets:
    """The broker's offsets shared by every watcher; raises :class:`UsageError` (exit 2)
    without confluent-kafka."""
    from streamwatch.analysis.watch_kafka import KafkaOffsets

    try:
        from streamwatch.spark.kafka_lag import BrokerOffsets

        return KafkaOffsets(BrokerOffsets(bootstrap))
    except ImportError:
        raise UsageError("--bootstrap needs confluent-kafka (pip install 'streamwatch[kafka]')") from None


def _merger(recording: str | None, once: bool, poll_s: float) -> MergedRecords | None:
    """The recording's listener numbers (read now with --once, else followed), or None."""
    if recording is None:
        return None
    from streamwatch.analysis.merge import ListenerNumbers, MergedRecords
    from streamwatch.events.reader import EventSourceError

    try:
        numbers = ListenerNumbers(recording)
        numbers.load() if once else numbers.follow()
    except EventSourceError as e:
        raise Unreadable(f"--recording: {e}") from None
    return MergedRecords(numbers, grace_s=max(3.0, 2 * poll_s))


#: Health values ``--check`` turns into exit 1.
FAILED_HEALTH = frozenset({"stopped", "failing", "stalled"})


class Notifier:
    """POSTs each ``query-health`` change to ``url`` as JSON (``query``, ``checkpoint``,
    ``from``, ``to``, ``reason``, ``atMs``) with urllib, ``timeout_s`` per request. A failure
    is written once on stderr (then counted in :attr:`failures`), never raised."""

    def __init__(self, url: str, timeout_s: float = 3.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.sent = 0
        self.failures = 0

    def __call__(self, rec: QueryHealth) -> None:
        import urllib.error
        import urllib.request

        import orjson

        body = orjson.dumps({"query": rec.query, "checkpoint": rec.checkpoint, "from": rec.previous,
                             "to": rec.health, "reason": rec.verdict.reason, "atMs": rec.at_ms})
        req = urllib.request.Request(self.url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                resp.read()
            self.sent += 1
        except (urllib.error.URLError, OSError, ValueError) as e:
            if not self.failures:
                click.echo(f"streamwatch watch: --notify {self.url} failed: {e} (further failures not shown)", err=True)
            self.failures += 1


def _runs(merger: MergedRecords, watch: CheckpointWatch) -> list[WatchRecord]:
    """The recording's run events read since the last poll handed to every watcher (its
    health window's account of runs: FAILING); the health changes they make."""
    events = merger.numbers.take_run_events()
    if not events:
        return []
    out: list[WatchRecord] = []
    for w in watch.watchers:
        for e in events:
            w.observe_run(e)
        out.extend(w.health_change())
    return out


def _exit_code(watch: CheckpointWatch, check: bool) -> int:
    """``--once``'s exit code: 1 when a query is stuck, or (``check``) its health failed."""
    if any(s.stuck for s in watch.statuses()):
        return STUCK
    healths = [h for w in watch.watchers if (h := w.current_health()) is not None]
    return STUCK if check and any(h in FAILED_HEALTH for h in healths) else OK


def _headless(paths: list[str], out: Path | None, poll_s: float, history: int, port: int | None, once: bool,
              recording: str | None = None, check: bool = False, notifier: Notifier | None = None,
              kafka: KafkaOffsets | None = None) -> int:
    """``--log``: derive the checkpoints' records and write them (gauges, JSONL, health
    POSTs) every ``poll_s`` s until SIGINT/SIGTERM, or once; the exit code. ``kafka``: the
    broker Kafka sources are measured against (``--bootstrap``)."""
    from streamwatch.analysis.session import CheckpointWatch

    watch = CheckpointWatch(paths, poll_s=poll_s, history=history, kafka=kafka)
    records = watch.open()  # WatchError: exit 4
    merger = _merger(recording, once, poll_s)
    if merger is not None:
        records = merger.take(records) + (merger.flush() if once else []) + _runs(merger, watch)
    _announce(watch)
    outputs = _Outputs(_open_out(out), _serve_metrics(port), notifier)
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            if not outputs.publish(records, watch):
                return UNREADABLE
            if once:
                return _exit_code(watch, check)
            if stop.wait(poll_s):
                if merger is not None:  # batches still waiting for their progress update
                    outputs.write(merger.flush())
                return OK
            records = _poll(watch, merger)
    finally:
        if merger is not None:
            merger.numbers.close()
            click.echo(f"streamwatch watch: {merger.merged} batch(es) merged with the listener's numbers", err=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        outputs.close(owned=out is not None)
        if kafka is not None:
            kafka.close()


def _announce(watch: CheckpointWatch) -> None:
    """The checkpoints watched (and those superseded by a full refresh) on stderr."""
    names = ", ".join(w.name for w in watch.watchers)
    click.echo(f"streamwatch watch: {len(watch.watchers)} checkpoint(s): {names}", err=True)
    if watch.superseded:
        click.echo(f"streamwatch watch: not watched, superseded by a full refresh: {', '.join(watch.superseded)}",
                   err=True)


def _open_out(out: Path | None) -> IO[bytes]:
    """``--out`` opened to append (stdout without it); raises :class:`Unreadable` (exit 4)."""
    if out is None:
        return sys.stdout.buffer
    try:
        return out.open("ab")  # closed by _Outputs.close
    except OSError as e:
        raise Unreadable(f"cannot write {out}: {e.strerror or e}") from None


def _serve_metrics(port: int | None) -> WatchMetrics | None:
    """The ``--prometheus`` gauges on 127.0.0.1:``port`` (said on stderr); raises
    :class:`Unreadable` (exit 4) when the port cannot be served."""
    if port is None:
        return None
    from streamwatch.watch_metrics import WatchMetrics

    try:
        metrics = WatchMetrics(port)
    except OSError as e:
        raise Unreadable(f"cannot serve Prometheus metrics on port {port}: {e.strerror or e}") from None
    click.echo(f"streamwatch watch: metrics at http://127.0.0.1:{metrics.port}/metrics", err=True)
    return metrics


def _poll(watch: CheckpointWatch, merger: MergedRecords | None) -> list[WatchRecord]:
    """The records of one poll, merged with the recording's numbers; none when the poll
    failed (a storage hiccup: said on stderr, the next poll tries again)."""
    try:
        records = watch.poll()
    except Exception as e:  # noqa: BLE001 - a storage hiccup: say so, keep polling
        click.echo(f"streamwatch watch: poll failed: {e}", err=True)
        records = []
    if merger is not None:
        records = merger.take(records) + _runs(merger, watch)
    return records


@dataclass
class _Outputs:
    """Where ``--log``'s records go: the JSONL ``stream``, the Prometheus gauges, the
    ``--notify`` POSTs of health changes."""

    stream: IO[bytes]
    metrics: WatchMetrics | None
    notifier: Notifier | None

    def write(self, records: list[WatchRecord]) -> None:
        """The records as JSONL lines; raises ``OSError``."""
        import orjson

        self.stream.write(b"".join(orjson.dumps(r.to_dict()) + b"\n" for r in records))

    def publish(self, records: list[WatchRecord], watch: CheckpointWatch) -> bool:
        """Gauges first (a reader of the JSONL then finds them current), the JSONL, then each
        health change POSTed; False (said on stderr) when the JSONL cannot be written."""
        if self.metrics is not None:
            for r in [*records, *watch.statuses(), *watch.lags()]:
                self.metrics(r)
        try:
            self.write(records)
            self.stream.flush()
        except OSError as e:
            click.echo(f"streamwatch watch: cannot write: {e.strerror or e}", err=True)
            return False
        if self.notifier is not None:
            for r in records:
                if isinstance(r, QueryHealth):
                    self.notifier(r)
        return True

    def close(self, owned: bool) -> None:
        """Stop serving the gauges; close the stream when it is ``--out`` (``owned``)."""
        if self.metrics is not None:
            self.metrics.close()
        if owned:
            self.stream.close()
