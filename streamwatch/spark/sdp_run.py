"""``streamwatch log --spec``: a user's Spark Declarative Pipeline run headless by the pyspark
wheel's own ``spark-pipelines run`` (a subprocess: its JVM hosts a local Spark Connect server),
recorded as streamwatch JSONL.

While it runs, each flow-state line the CLI prints (``<UTC time>: Flow <name> is RUNNING.``,
from ``pyspark/pipelines/spark_connect_pipeline.py``'s ``handle_pipeline_events``) becomes a
``flow-state`` record; when it ends, the server's Spark event log (``spark.eventLog.*`` given
with ``--conf``) is read with :mod:`streamwatch.events.eventlog` and its streaming listener
events (started, progress, terminated: every flow's micro-batches) are appended, so
``streamwatch replay`` shows each flow's progress. Readers that do not know ``flow-state``
skip it (:func:`streamwatch.events.jsonl.decode` returns None for unknown kinds).
"""

from __future__ import annotations

import calendar
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

import orjson

from streamwatch.checkpoint.sdp_spec import CATALOG_CONF, CATALOG_FOR_RERUNS, Severity, check_spec, read_spec
from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.events.eventlog import read_event_log
from streamwatch.events.jsonl import SCHEMA_VERSION, RecordingHeader, encode
from streamwatch.events.source import EventSourceError, ReadReport
from streamwatch.model.events import Event

#: ``handle_pipeline_events``' line: ``%Y-%m-%d %H:%M:%S`` (UTC) + ``: `` + the event's message;
#: flow messages are ``Flow <name> is <STATE>.`` or ``Flow <name> has <STATE>.`` (COMPLETED,
#: FAILED). Spark's console progress bar may precede it on the same line (``\r``).
FLOW_LINE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): Flow '?([\w.`-]+?)'? (?:is|has) ([A-Z_]+)\b")
#: Seconds a stopped ``spark-pipelines`` gets to end after SIGINT, then after SIGTERM.
STOP_GRACE_S = 60.0


class SdpRunError(StreamwatchError):
    """``spark-pipelines`` is not installed beside this Python, or the spec has errors SDP
    would refuse (each said on stderr first). Exit 3."""

    exit_code = ExitCode.ERRORS


@dataclass(frozen=True, slots=True)
class FlowState:
    """One flow-state line of ``spark-pipelines``: the flow (``catalog.database.table`` or an
    append flow's name), its state (QUEUED, PLANNING, STARTING, RUNNING, COMPLETED, FAILED,
    SKIPPED, EXCLUDED …) and the server's event time, epoch ms (second precision, as printed)."""

    kind: ClassVar[str] = "flow-state"
    flow: str
    state: str
    at_ms: int

    def to_line(self) -> bytes:
        """The JSONL line: ``{"v":1,"kind":"flow-state","t":atMs,"event":{flow,state,atMs}}``."""
        return orjson.dumps({"v": SCHEMA_VERSION, "kind": self.kind, "t": self.at_ms,
                             "event": {"flow": self.flow, "state": self.state, "atMs": self.at_ms}}) + b"\n"


def flow_states(line: str) -> Iterator[FlowState]:
    """The :class:`FlowState`\\ s printed on one output line of ``spark-pipelines``."""
    for m in FLOW_LINE.finditer(line):
        at = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")) * 1000
        yield FlowState(m.group(2), m.group(3), at)


@dataclass(frozen=True)
class SdpRunResult:
    """What one ``spark-pipelines run`` gave: its exit status (None: stopped by us), the flow
    states in print order, the listener events written, and the event-log problem (or None)."""

    returncode: int | None
    states: tuple[FlowState, ...]
    events: int
    eventlog_problem: str | None

    @property
    def failed(self) -> bool:
        return any(s.state == "FAILED" for s in self.states) or self.returncode not in (0, None)


def cli_path() -> Path:
    """The ``spark-pipelines`` script of the pyspark installed beside this Python. Raises
    :class:`SdpRunError` when absent."""
    path = Path(sys.executable).parent / "spark-pipelines"
    if not path.is_file():
        raise SdpRunError(f"{path}: not found; spark-pipelines comes with pyspark 4.1 or newer "
                          "(pip install 'pyspark>=4.1' pyyaml)")
    return path


def command(spec: Path, eventlog_dir: Path) -> list[str]:
    """``spark-pipelines --conf … run --spec SPEC`` with the confs streamwatch supplies: the
    catalog reruns need and an event log in ``eventlog_dir`` (Spark 4's default: rolling, zstd).

    Three confs and no more: spark-submit hands the server's start-up confs to pyspark in groups
    of 10 (``PythonRunner``: ``PYSPARK_REMOTE_INIT_CONF_<i>``) and pyspark 4.2's
    ``_start_connect_server`` keeps only the last group, so past 10 entries (6 are
    spark-submit's own) some are silently dropped. Given after ``run --spec SPEC`` they never
    reach spark-submit at all."""
    confs = {CATALOG_CONF: CATALOG_FOR_RERUNS, "spark.eventLog.enabled": "true",
             "spark.eventLog.dir": eventlog_dir.resolve().as_uri()}
    args = [str(cli_path())]
    for k, v in confs.items():
        args += ["--conf", f"{k}={v}"]
    return [*args, "run", "--spec", str(spec)]


def refuse_bad_spec(spec: Path, say: Callable[[str], None]) -> None:
    """Say each problem of ``spec`` on stderr; raise :class:`SdpRunError` when one is an error
    (SDP would refuse the spec or fail every flow). The rerun catalog is supplied here, so it is
    not a problem."""
    problems = check_spec(read_spec(spec), {CATALOG_CONF: CATALOG_FOR_RERUNS})
    for p in problems:
        say(f"{spec}: {p.line()}")
    if any(p.severity is Severity.ERROR for p in problems):
        raise SdpRunError(f"{spec}: not run, the spec has errors (streamwatch pipelines --check-spec {spec})")


def run_spec(spec: str | Path, out: IO[bytes], header: RecordingHeader, *, duration: float | None,
             stop: threading.Event, say: Callable[[str], None]) -> SdpRunResult:
    """Run the pipeline of ``spec`` (cwd: the spec's folder, where ``spark-warehouse`` lands),
    writing ``header``, its flow states as they are printed, then its listener events to
    ``out`` (JSONL). Ends when the run ends, ``duration`` seconds passed, or ``stop`` is set
    (then SIGINT to the run's process group and a wait). Raises :class:`SdpRunError`,
    ``OSError`` when ``out`` cannot be written."""
    spec = Path(spec).resolve()
    refuse_bad_spec(spec, say)
    eventlog_dir = Path(tempfile.mkdtemp(prefix="sw-sdp-eventlog-"))
    try:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        out.write(encode(header))
        out.flush()
        proc = subprocess.Popen(command(spec, eventlog_dir), cwd=spec.parent, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        states: list[FlowState] = []
        reader = threading.Thread(target=_read_states, args=(proc, out, states, say), daemon=True)
        reader.start()
        stopped = _wait(proc, duration, stop, say)
        reader.join()
        events, problem = _append_events(eventlog_dir, out)
        return SdpRunResult(None if stopped else proc.returncode, tuple(states), events, problem)
    finally:
        shutil.rmtree(eventlog_dir, ignore_errors=True)


def _read_states(proc: subprocess.Popen[bytes], out: IO[bytes], states: list[FlowState],
                 say: Callable[[str], None]) -> None:
    """Each output line of ``spark-pipelines`` is said as it is (its own account: flow states,
    registration errors with file:line); its flow states are recorded to ``out``."""
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        for state in flow_states(line):
            states.append(state)
            out.write(state.to_line())
            out.flush()
        if line.strip():
            say(f"spark-pipelines: {line.split(chr(13))[-1]}")  # a progress bar's \r redraws: the last


def _wait(proc: subprocess.Popen[bytes], duration: float | None, stop: threading.Event,
          say: Callable[[str], None]) -> bool:
    """Wait for ``proc``; True when we stopped it (``duration`` or ``stop``)."""
    deadline = None if duration is None else time.monotonic() + duration
    while proc.poll() is None:
        if stop.wait(0.2) or (deadline is not None and time.monotonic() >= deadline):
            say("interrupted: stopping spark-pipelines" if stop.is_set() else f"--duration {duration:g} s reached")
            _stop(proc)
            return True
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to the run's process group (the JVM and its Python client), then SIGTERM."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(STOP_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            continue


def _append_events(eventlog_dir: Path, out: IO[bytes]) -> tuple[int, str | None]:
    """Append the listener events of the one event log in ``eventlog_dir`` to ``out``, each
    recorded at its own event time; (events written, the problem reading it or None)."""
    report = ReadReport()
    n = 0
    try:
        for obj in read_event_log(eventlog_dir, report):
            if isinstance(obj, Event):
                out.write(encode(obj, recorded_ms=obj.timestamp_ms))
                n += 1
    except EventSourceError as e:
        return n, str(e)
    out.flush()
    return n, (report.problems[0] if report.problems else None)


@contextlib.contextmanager
def _output(out: str) -> Iterator[IO[bytes]]:
    """``out`` opened for appending bytes, closed on leaving (``-`` or empty: stdout, left
    open). Raises ``OSError`` when it cannot be opened."""
    if out in ("-", ""):
        yield sys.stdout.buffer
        return
    with open(out, "ab") as fh:
        yield fh


def log_spec(spec: str, out: str, duration: float | None, say: Callable[[str], None]) -> int:
    """``streamwatch log --spec SPEC --out OUT``: :func:`run_spec` into OUT (``-``: stdout),
    SIGINT/SIGTERM stopping the run cleanly. The exit code: 0 the run completed or was stopped
    by us, 1 a flow FAILED or ``spark-pipelines`` exited non-zero, 4 OUT cannot be written.
    Raises :class:`SdpRunError` (3) and the spec's ``SpecUnreadable`` (4)."""
    header = RecordingHeader(time_ms=int(time.time() * 1000), source="spark-pipelines",
                             app={"pipeline": str(spec), "spec": str(Path(spec).resolve())})
    stop = threading.Event()
    try:
        with _output(out) as fh:
            previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                result = run_spec(spec, fh, header, duration=duration, stop=stop, say=say)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
    except OSError as e:  # OUT cannot be opened or written
        say(f"cannot write {out}: {e.strerror or e}")
        return ExitCode.UNREADABLE
    if result.eventlog_problem:
        say(f"the server's event log: {result.eventlog_problem}")
    say(f"{len(result.states)} flow states and {result.events} listener events written"
        + ("" if result.returncode is None else f"; spark-pipelines exited {result.returncode}"))
    return ExitCode.WARNINGS if result.failed else ExitCode.OK
