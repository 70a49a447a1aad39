"""``streamwatch log``: run a bundled pipeline headless and write its listener events as
JSONL (never imports textual)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path

import click
from click.core import ParameterSource

from streamwatch.cli.kafka_opts import KAFKA_OPTION, KafkaUnavailable, kafka_for
from streamwatch.cli.options import check_run_options, object_store_unavailable, run_options
from streamwatch.errors import ExitCode, UsageError, one_line

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
              help="Serve the latest per-query metrics on http://127.0.0.1:PORT/metrics.")
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

    With --remote the queries run in the server's Spark; the listener runs here
    and receives their events over gRPC (Spark Connect's listener bus), so the
    recording has the same format. The landing files, tables and checkpoints
    are under WORKSPACE (made absolute): the server must see that path (a
    server on this machine, or a shared file system).
    """

    def say(msg: str) -> None:
        click.echo(f"streamwatch log: {msg}", err=True)

    if spec is not None:
        if click.get_current_context().get_parameter_source("pipeline_name") != ParameterSource.DEFAULT:
            raise UsageError("--spec and --pipeline exclude each other")
        if duration is not None and duration <= 0:
            raise UsageError("--duration must be > 0")
        from streamwatch.spark.sdp_run import log_spec

        sys.exit(log_spec(spec, out, duration, say))
    try:
        choice = check_run_options(pipeline_name, trigger, output_mode_specs, land_every, max_files, master, workspace)
        if remote is not None:
            from streamwatch.spark.connect import parse_remote

            if master is not None:
                raise ValueError("--remote and --master exclude each other (the Connect server has its own master)")
            parse_remote(remote)  # the workspace is absolute: the server resolves paths against its own folder
    except ValueError as e:
        say(e.args[0])
        sys.exit(ExitCode.USAGE)
    for bad, msg in ((flush_every < 1, "--flush-every must be >= 1"),
                     (duration is not None and duration <= 0, "--duration must be > 0"),
                     (max_bytes is not None and max_bytes < 1, "--max-bytes must be >= 1"),
                     (segment_seconds is not None and segment_seconds <= 0, "--segment-seconds must be > 0")):
        if bad:
            say(msg)
            sys.exit(ExitCode.USAGE)
    from streamwatch.spark.tables import trigger_note

    if trigger_note(trigger):
        say(trigger_note(trigger))

    if out not in ("-", "") and "://" not in out:  # fail before the ~10 s Spark start-up
        try:
            if not Path(out).parent.exists():  # a file in the way: open() says "Not a directory"
                Path(out).parent.mkdir(parents=True, exist_ok=True)
            open(out, "ab").close()
        except OSError as e:
            say(f"cannot write {out}: {e.strerror or e}")
            sys.exit(ExitCode.UNREADABLE)
    recording = {"flush_every": flush_every, "max_bytes": max_bytes, "segment_seconds": segment_seconds}
    ws = choice.workspace
    if remote is None and object_store_unavailable(ws):
        say(object_store_unavailable(ws))
        sys.exit(ExitCode.ERRORS)
    code: int = ExitCode.OK
    try:
        with kafka_for(choice.pipeline, ws, kafka_bootstrap, say) as options:
            code = _run(choice, ws, out, trigger, duration, land_every, max_files,
                        recording, prometheus_port, not no_ui, say, options, remote)
    except KafkaUnavailable as e:
        say(str(e))
        code = e.exit_code
    except KeyboardInterrupt:
        say("interrupted while the Kafka broker was starting")
    sys.exit(code)


def _start_spark(choice, ws, ui, remote, say):
    """(spark, SessionInfo): a session in this process, or a Spark Connect session on
    ``remote``; raises what they raise (``ConnectError`` for an unreachable server)."""
    if remote is not None:
        from streamwatch.spark.connect import connect_session, connect_session_info, public_url

        say(f"connecting to Spark Connect at {public_url(remote)}")
        spark = connect_session(remote)
        return spark, connect_session_info(spark)
    from streamwatch.spark.session import SessionConfig, create_session, default_master
    from streamwatch.spark.tableformat import decide_table_format

    master = choice.master or default_master().strip()
    say(f"starting Spark on {master} (logs: {ws.logs / 'spark.log'})")
    return create_session(SessionConfig(workspace=ws.local, master=master, ui=ui, table_format=decide_table_format()))


def _run(choice, ws, out, trigger, duration, land_every, max_files, recording,
         prometheus_port, ui, say, options, remote=None) -> int:
    from streamwatch.spark.tableformat import TableFormatError

    try:
        spark, info = _start_spark(choice, ws, ui, remote, say)
    except KeyboardInterrupt:
        say("interrupted while Spark was starting")
        return ExitCode.OK
    except (TableFormatError, Exception) as e:  # noqa: BLE001 - one line, never a traceback
        say(f"Spark could not start: {one_line(e, 1000)}")
        return ExitCode.ERRORS
    # after the SparkContext exists: pyspark installs its own SIGINT handler (cancel jobs +
    # KeyboardInterrupt); ours stops the queries gracefully instead.
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _record(spark, info, choice, ws, out, trigger, duration, land_every, max_files, recording,
                       prometheus_port, ui, stop, say, options, remote)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _record(spark, info, choice, ws, out, trigger, duration, land_every, max_files, recording,
            prometheus_port, ui, stop: threading.Event, say, options, remote=None) -> int:
    from streamwatch.events.segments import open_recorder
    from streamwatch.model.events import Event, ListenerStats, QueryTerminated
    from streamwatch.model.runtime import QueryNotRun, QueryQueued, RuntimeNotice, SessionInfo
    from streamwatch.spark.live import LiveBackend
    from streamwatch.spark.record import session_header

    pipeline = choice.pipeline
    facts = {"pipeline": pipeline.name, "trigger": trigger}
    if remote is not None:
        from streamwatch.spark.connect import public_url

        facts["remote"] = public_url(remote)
    try:
        recorder = open_recorder(out, header=session_header(spark, facts), **recording)
    except OSError as e:
        say(f"cannot write {out}: {e.strerror}" if e.strerror else str(e))
        spark.stop()
        return ExitCode.UNREADABLE
    failed: list[str] = []
    lost = {"events": 0, "error": None}

    def record(obj: object) -> None:
        """The recorder as a sink: a write failure (disk full, file too large) is said once
        on stderr and counted; the queries keep running."""
        if lost["error"] is not None:
            lost["events"] += 1
            return
        try:
            recorder.write(obj)
        except OSError as e:
            lost["error"] = e.strerror or str(e)
            lost["events"] += 1
            say(f"cannot write {out}: {lost['error']} — recording stopped, the queries keep running")

    sinks = [record]
    metrics = None
    if prometheus_port is not None:
        try:
            from streamwatch.metrics import PrometheusSink

            metrics = PrometheusSink(prometheus_port)
            sinks.append(metrics)
            say(f"Prometheus metrics on http://127.0.0.1:{metrics.port}/metrics")
        except OSError as e:
            say(f"cannot serve Prometheus metrics on port {prometheus_port}: {e.strerror or e}")

    def emit(obj: object) -> None:
        if isinstance(obj, Event):
            for sink in sinks:
                sink(obj)
            if isinstance(obj, QueryTerminated) and obj.failed:
                failed.append(one_line(obj.exception, 1000))
                say(f"query {obj.id} failed: {failed[-1][:300]}")
            elif isinstance(obj, QueryTerminated) and obj.exception:
                say(f"query {obj.id} stopped (Spark reported, caused by the stop: "
                    f"{obj.exception.splitlines()[0][:200]})")
        elif isinstance(obj, QueryQueued):
            say(f"{obj.query_name} queued: waits for {', '.join(obj.waiting_for)} to finish ({obj.trigger})")
        elif isinstance(obj, QueryNotRun):
            say(f"{obj.query_name} not run: {obj.reason}")
        elif isinstance(obj, RuntimeNotice):
            say(obj.message)
        elif isinstance(obj, SessionInfo):
            pass  # the backend's view of our session; ours (with the executor count) is said below

    where = f" via Spark Connect {facts['remote']}" if remote is not None else ""
    say(f"Spark {info.spark_version} on {info.master_description}{where}; tables: {info.table_format}; "
        f"UI: {info.ui_url or 'off'}")
    backend = LiveBackend(pipeline, ws, trigger=trigger, spark=spark, table_format=info.table_format,
                          land_every_s=land_every, max_files=max_files, ui=ui, output_modes=choice.output_modes,
                          options=options)
    code = ExitCode.OK
    try:
        try:
            backend.start(emit)
        except Exception as e:  # noqa: BLE001
            say(f"could not start the queries: {one_line(e, 1000)}")
            code = ExitCode.ERRORS
        deadline = None if duration is None else time.monotonic() + duration
        while code == ExitCode.OK and not stop.wait(0.2):
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
    finally:
        backend.stop()  # waits for Spark's (asynchronous) QueryTerminatedEvents
        s = backend.bus.stats()
        try:
            if lost["error"] is None:
                recorder.write(ListenerStats(published=s.published, delivered=s.delivered, dropped=s.dropped,
                                             sink_errors=s.sink_errors))
            recorder.close()
        except OSError as e:
            if lost["error"] is None:
                say(f"cannot write {out}: {e.strerror}" if e.strerror else str(e))
            lost["error"] = lost["error"] or e.strerror or str(e)
        if lost["error"] is not None:
            say(f"{lost['events']} events not recorded ({out}: {lost['error']})")
            code = ExitCode.UNREADABLE if code == ExitCode.OK else code
        if metrics is not None:
            metrics.close()
        try:
            spark.stop()
        except Exception:  # noqa: BLE001
            pass
        say(f"{recorder.written} events written; {s.dropped} dropped")
    if code == ExitCode.OK and failed:
        code = ExitCode.WARNINGS
    return code
