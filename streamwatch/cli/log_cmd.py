"""``streamwatch log``: run a bundled pipeline headless and write its listener events as
JSONL (never imports textual)."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from click.core import ParameterSource

from streamwatch.cli.kafka_opts import KAFKA_OPTION, kafka_for
from streamwatch.cli.log_sinks import Recording, Say, emitter, open_sink, serve_prometheus
from streamwatch.cli.options import (
    RunChoice,
    WorkspaceUnwritable,
    check_run_options,
    object_store_unavailable,
    run_options,
)
from streamwatch.errors import ExitCode, Unreadable, UsageError, one_line

if TYPE_CHECKING:  # Spark, the recorders and the metrics server are imported when a run starts
    from pyspark.sql import SparkSession

    from streamwatch.model.runtime import SessionInfo
    from streamwatch.spark.live import LiveBackend

EPILOG = """\b
Examples:
  streamwatch log --pipeline flights > events.jsonl        JSONL on stdout, until Ctrl-C
  streamwatch log --out events.jsonl --duration 120        two minutes, to a file
  streamwatch log --trigger availableNow --out run.jsonl   process what landed, layer by layer
                                                           (bronze, then silver …), then exit
  streamwatch log --output-mode gold=complete --out ev.jsonl
                                                           gold table rewritten whole each batch
  streamwatch log --out ev.jsonl --max-bytes 50000000 --prometheus 9108
  streamwatch log --master spark://10.0.0.5:7077 --out s3://bucket/job/events.jsonl
                                                           on a cluster, recorded as S3 segments
  streamwatch log --workspace s3a://my-bucket/ws --trigger availableNow --out run.jsonl
                                                           tables and checkpoints on S3 (streamwatch jars --set s3;
                                                           endpoint from AWS_ENDPOINT_URL), landing local
  streamwatch log --remote sc://127.0.0.1:15002 --workspace /shared/ws --out ev.jsonl
                                                           through a Spark Connect server (the
                                                           server must see --workspace's path)
  streamwatch log --pipeline clicks --out clicks.jsonl     Kafka source; starts its own broker
  streamwatch log --pipeline clicks --kafka-bootstrap 127.0.0.1:9092 --out c.jsonl
  streamwatch replay events.jsonl                          watch it in the dashboard
  streamwatch log --spec proj/spark-pipeline.yml --out sdp.jsonl
                                                           a Spark Declarative Pipeline, run by
                                                           pyspark's spark-pipelines (docs/sdp.md)
\b
Exit codes:
  0  stopped by --duration, Ctrl-C/SIGTERM, or every query finished
     (a query stopped by us is stopped, even when Spark reports the interrupted write)
  1  a query terminated with an exception (--spec: a flow FAILED or spark-pipelines failed)
  2  bad option or unknown pipeline (--spec with --pipeline)
  3  --spec: the spec has errors, or spark-pipelines is not installed; Spark could not start (or the --remote server is unreachable or refuses the session), or a query could not be started, or the pipeline reads Kafka and its jars are missing or its broker did not start
  4  the output cannot be written; --spec: the spec cannot be read
"""


@dataclass(frozen=True)
class LogOptions:
    """The checked options of one ``streamwatch log`` run of a bundled pipeline: the
    pipeline and workspace (``choice``), the ``trigger`` spec, ``duration`` (s, None: until
    stopped), ``land_every`` (s between landed files), ``max_files``, the ``recording``, the
    Prometheus port, the Spark UI on or off, and the Spark Connect URL (``remote``)."""

    choice: RunChoice
    trigger: str
    duration: float | None
    land_every: float
    max_files: int | None
    recording: Recording
    prometheus_port: int | None = None
    ui: bool = True
    remote: str | None = None


def _say(msg: str) -> None:
    click.echo(f"streamwatch log: {msg}", err=True)


@click.command("log", epilog=EPILOG)
@run_options
@click.option("--out", default="-", show_default=True,
              help="JSONL output file, - for stdout, or an fsspec URL (s3://bucket/key) written as "
                   "segment objects KEY.1, KEY.2 …")
@click.option("--duration", type=float, default=None,
              help="Stop the queries after SECONDS (default: until Ctrl-C or every query ends).")
@click.option("--flush-every", type=int, default=1, show_default=True,
              help="Events per write flush (1: each event at once, tail -f works).")
@click.option("--max-bytes", type=int, default=None, help="Rotate --out at this size (bytes): FILE.1, FILE.2 …")
@click.option("--segment-seconds", type=float, default=None,
              help="With a URL --out: store a segment at least every SECONDS while events arrive [default: 5].")
@click.option("--prometheus", "prometheus_port", type=int, default=None,
              help="Serve the latest per-query metrics, health (streamwatch_health{query,state}) and file-source "
                   "lag on http://127.0.0.1:PORT/metrics.")
@click.option("--remote", default=None, metavar="sc://HOST[:PORT]",
              help="Run the pipeline through this Spark Connect server instead of a Spark in this "
                   "process (not with --master); the server reads and writes WORKSPACE by its path.")
@KAFKA_OPTION
@click.option("--spec", default=None, metavar="SPEC",
              help="Run this Spark Declarative Pipelines spec (spark-pipeline.yml) with pyspark's spark-pipelines "
                   "instead of a bundled pipeline: its flow states, then its flows' progress (docs/sdp.md).")
def log(pipeline_name: str, workspace: str, trigger: str, output_mode_specs: tuple[str, ...], land_every: float,
        max_files: int | None, master: str | None, no_ui: bool, out: str, duration: float | None,
        flush_every: int, max_bytes: int | None, segment_seconds: float | None, prometheus_port: int | None,
        remote: str | None, kafka_bootstrap: str | None, spec: str | None) -> None:
    """Run PIPELINE's queries headless on Spark (local, the cluster at
    --master, or a Spark Connect server at --remote) and write every
    streaming listener event (started, progress, idle, terminated) as
    streamwatch JSONL to --out. Data goes to stdout (or the file), diagnostics
    to stderr, Spark's own logs to WORKSPACE/logs/spark.log. Ctrl-C stops the
    queries cleanly, writes the last events and exits 0.

    Each query's health (docs/health.md: ok, lagging, stalled, stopped,
    failing, idle, unknown; the verdict `watch --log` gives) is judged from
    its checkpoint about once a second and written as a query-health line
    when it changes.

    With --remote the queries run in the server's Spark; the listener runs here
    and receives their events over gRPC (Spark Connect's listener bus), so the
    recording has the same format. The landing files, tables and checkpoints
    are under WORKSPACE (made absolute): the server must see that path (a
    server on this machine, or a shared file system).
    """
    if spec is not None:
        _log_spec(spec, out, duration)
    try:
        choice = _checked_choice(pipeline_name, trigger, output_mode_specs, land_every, max_files, master,
                                 workspace, remote)
    except ValueError as e:
        raise UsageError(e.args[0]) from None
    recording = Recording(out, flush_every, max_bytes, segment_seconds)
    _check_numbers(recording, duration)
    from streamwatch.spark.tables import trigger_note

    note = trigger_note(trigger)
    if note:
        _say(note)
    _check_out_writable(out)
    opts = LogOptions(choice, trigger, duration, land_every, max_files, recording, prometheus_port,
                      ui=not no_ui, remote=remote)
    unavailable = object_store_unavailable(choice.workspace) if remote is None else None
    if unavailable:
        raise WorkspaceUnwritable(unavailable)
    sys.exit(_with_kafka(opts, kafka_bootstrap, _say))


def _log_spec(spec: str, out: str, duration: float | None) -> NoReturn:
    """``--spec``: the Spark Declarative Pipeline run by ``spark-pipelines``; exits with its
    status. Raises :class:`UsageError` with ``--pipeline`` or a ``--duration`` ≤ 0."""
    if click.get_current_context().get_parameter_source("pipeline_name") != ParameterSource.DEFAULT:
        raise UsageError("--spec and --pipeline exclude each other")
    if duration is not None and duration <= 0:
        raise UsageError("--duration must be > 0")
    from streamwatch.spark.sdp_run import log_spec

    sys.exit(log_spec(spec, out, duration, _say))


def _checked_choice(pipeline_name: str, trigger: str, output_mode_specs: tuple[str, ...], land_every: float,
                    max_files: int | None, master: str | None, workspace: str, remote: str | None) -> RunChoice:
    """The shared options checked, and ``--remote`` (a Spark Connect URL, not with
    ``--master``). Raises ``ValueError`` with a one-line message."""
    choice = check_run_options(pipeline_name, trigger, output_mode_specs, land_every, max_files, master, workspace)
    if remote is not None:
        from streamwatch.spark.connect import parse_remote

        if master is not None:
            raise ValueError("--remote and --master exclude each other (the Connect server has its own master)")
        parse_remote(remote)  # the workspace is absolute: the server resolves paths against its own folder
    return choice


def _check_numbers(recording: Recording, duration: float | None) -> None:
    """Raises :class:`UsageError` (exit 2) for the first number out of range."""
    for bad, msg in ((recording.flush_every < 1, "--flush-every must be >= 1"),
                     (duration is not None and duration <= 0, "--duration must be > 0"),
                     (recording.max_bytes is not None and recording.max_bytes < 1, "--max-bytes must be >= 1"),
                     (recording.segment_seconds is not None and recording.segment_seconds <= 0,
                      "--segment-seconds must be > 0")):
        if bad:
            raise UsageError(msg)


def _check_out_writable(out: str) -> None:
    """A local ``--out`` is created (with its folder) before the ~10 s Spark start-up; raises
    :class:`Unreadable` (exit 4) when it cannot be."""
    if out in ("-", "") or "://" in out:
        return
    try:
        if not Path(out).parent.exists():  # a file in the way: open() says "Not a directory"
            Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "ab"):
            pass
    except OSError as e:
        raise Unreadable(f"cannot write {out}: {e.strerror or e}") from None


def _with_kafka(opts: LogOptions, kafka_bootstrap: str | None, say: Say) -> int:
    """The run inside :func:`kafka_for` (the pipeline's broker, given or started); its exit code.
    Raises :class:`~streamwatch.cli.kafka_opts.KafkaUnavailable` (exit 3) without a broker."""
    code: int = ExitCode.OK
    try:
        with kafka_for(opts.choice.pipeline, opts.choice.workspace, kafka_bootstrap, say) as options:
            code = _run(opts, options, say)
    except KeyboardInterrupt:
        say("interrupted while the Kafka broker was starting")
    return code


def _start_spark(opts: LogOptions, say: Say) -> tuple[SparkSession, SessionInfo]:
    """A session in this process, or a Spark Connect session on ``opts.remote``, and its
    :class:`SessionInfo`; raises what they raise (``ConnectError`` for an unreachable server)."""
    if opts.remote is not None:
        from streamwatch.spark.connect import connect_session, connect_session_info, public_url

        say(f"connecting to Spark Connect at {public_url(opts.remote)}")
        spark = connect_session(opts.remote)
        return spark, connect_session_info(spark)
    from streamwatch.spark.session import SessionConfig, create_session, default_master
    from streamwatch.spark.tableformat import decide_table_format

    ws = opts.choice.workspace
    master = opts.choice.master or default_master().strip()
    say(f"starting Spark on {master} (logs: {ws.logs / 'spark.log'})")
    return create_session(SessionConfig(workspace=ws.local, master=master, ui=opts.ui,
                                        table_format=decide_table_format()))


def _run(opts: LogOptions, options: dict[str, Any], say: Say) -> int:
    """Start Spark, then record with SIGINT/SIGTERM stopping the queries gracefully; the
    exit code (3 when Spark cannot start)."""
    try:
        spark, info = _start_spark(opts, say)
    except KeyboardInterrupt:
        say("interrupted while Spark was starting")
        return ExitCode.OK
    except Exception as e:  # noqa: BLE001 - one line, never a traceback (TableFormatError too)
        say(f"Spark could not start: {one_line(e, 1000)}")
        return ExitCode.ERRORS
    # after the SparkContext exists: pyspark installs its own SIGINT handler (cancel jobs +
    # KeyboardInterrupt); ours stops the queries gracefully instead.
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _record(spark, info, opts, options, stop, say)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _remote_url(opts: LogOptions) -> str | None:
    """``--remote`` as shown and recorded (:func:`~streamwatch.spark.connect.public_url`), or None."""
    if opts.remote is None:
        return None
    from streamwatch.spark.connect import public_url

    return public_url(opts.remote)


def _record(spark: SparkSession, info: SessionInfo, opts: LogOptions, options: dict[str, Any],
            stop: threading.Event, say: Say) -> int:
    """Run the pipeline's queries on ``spark`` and record their events (and their health
    changes) until ``stop``, the duration, or every query's end; the exit code (0, 1 a query
    failed, 3 the queries could not start, 4 the recording could not be written)."""
    from streamwatch.cli.log_health import LogHealth, judged_queries, publisher
    from streamwatch.spark.live import LiveBackend

    facts = {"pipeline": opts.choice.pipeline.name, "trigger": opts.trigger}
    remote = _remote_url(opts)
    if remote is not None:
        facts["remote"] = remote
    sink = open_sink(spark, facts, opts.recording, say)
    if sink is None:
        spark.stop()
        return ExitCode.UNREADABLE
    failed: list[str] = []
    health = LogHealth(judged_queries(opts.choice.pipeline, opts.choice.workspace), say)
    sinks: list[Callable[[object], None]] = [sink, health.observe]
    metrics = serve_prometheus(opts.prometheus_port, say)
    if metrics is not None:
        sinks.append(metrics)
    where = f" via Spark Connect {remote}" if remote is not None else ""
    say(f"Spark {info.spark_version} on {info.master_description}{where}; tables: {info.table_format}; "
        f"UI: {info.ui_url or 'off'}")
    backend = LiveBackend(opts.choice.pipeline, opts.choice.workspace, trigger=opts.trigger, spark=spark,
                          table_format=info.table_format, land_every_s=opts.land_every, max_files=opts.max_files,
                          ui=opts.ui, output_modes=opts.choice.output_modes, options=options)
    judge = publisher(health, sink, metrics)
    code: int = ExitCode.OK
    try:
        code = _drive(backend, emitter(sinks, failed, say), judge, opts.duration, stop, say)
    finally:
        backend.stop()  # waits for Spark's (asynchronous) QueryTerminatedEvents
        judge(True)  # the verdicts as the stopped queries left their checkpoints
        stats = backend.bus.stats()
        if sink.close(stats):
            code = ExitCode.UNREADABLE if code == ExitCode.OK else code
        if metrics is not None:
            metrics.close()
        with contextlib.suppress(Exception):
            spark.stop()
        say(f"{sink.recorder.written} events written; {stats.dropped} dropped")
    if code == ExitCode.OK and failed:
        code = ExitCode.WARNINGS
    return code


def _drive(backend: LiveBackend, emit: Callable[[object], None], judge: Callable[[bool], None], duration: float | None,
           stop: threading.Event, say: Say) -> int:
    """Start the queries and wait for ``stop``, ``duration`` (s) or every query's end, calling
    ``judge`` (the health verdicts, at its own pace) while waiting; 3 when a query could not
    be started (each said on stderr), else 0."""
    code: int = ExitCode.OK
    try:
        backend.start(emit)
    except Exception as e:  # noqa: BLE001
        say(f"could not start the queries: {one_line(e, 1000)}")
        code = ExitCode.ERRORS
    deadline = None if duration is None else time.monotonic() + duration
    while code == ExitCode.OK and not stop.wait(0.2):
        judge(False)
        if deadline is not None and time.monotonic() >= deadline:
            say(f"--duration {duration:g} s reached")
            break
        if backend.all_finished():
            say("every query has finished")
            break
    if stop.is_set():
        say("interrupted: stopping the queries")
    if code == ExitCode.OK and backend.start_errors:
        code = ExitCode.ERRORS  # each was said on stderr (a RuntimeNotice) when it happened
    return code
