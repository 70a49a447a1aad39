"""A single-node Kafka broker (KRaft: broker and controller in one JVM) on 127.0.0.1, run from
the ``kafka-broker`` jar set that ``make jars`` resolved, for tests and demos.

The broker gets a temporary log folder, two free loopback ports (client and controller), and
its output goes to ``<log_dir>/broker.log``; :meth:`LocalKafka.stop` ends it (SIGTERM, then
SIGKILL after ``grace_s``) and removes the folder when streamwatch created it. No pyspark
import: the broker is its own process (``kafka.Kafka``, Kafka's own entry point).
"""

from __future__ import annotations

import base64
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.spark.tableformat import BROKER_SET, NO_JARS_HINT, jars_root, resolved_jars


class KafkaBrokerError(StreamwatchError, RuntimeError):
    """The broker cannot be started: jars not resolved, no ``java``, or it exited or did not
    accept connections within the timeout (the message quotes its log's last lines). Exit 3,
    like Spark that cannot start."""

    exit_code = ExitCode.ERRORS


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def broker_available() -> tuple[bool, str]:
    """(True, "") when the broker's jars are resolved and ``java`` is on PATH; else
    (False, why) in one line."""
    if not resolved_jars(BROKER_SET):
        return False, f"Kafka broker jars not in {jars_root() / BROKER_SET} ({NO_JARS_HINT})"
    if shutil.which("java") is None:
        return False, "java not found on PATH"
    return True, ""


def new_cluster_id() -> str:
    """A random KRaft cluster id as Kafka's ``Uuid.randomUuid().toString()`` makes one: 22
    URL-safe base64 characters of 16 random bytes, drawn again when it starts with ``-``
    (``kafka-storage format -t -…`` reads such an id as an option and fails)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


@contextmanager
def _interrupts_held() -> Iterator[None]:
    """SIGINT and SIGTERM held while a child process is created, their handlers run on leaving:
    an interrupt inside ``Popen()`` raises after the fork but before the caller holds the
    handle it needs to stop the child, which then outlives streamwatch (a Ctrl-C right after
    "starting a single-node Kafka broker" left the storage-format JVM running). Main thread
    only: Python runs signal handlers nowhere else."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: held.append(signum))
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        for signum in held:
            signal.raise_signal(signum)


@dataclass
class LocalKafka:
    """A running single-node KRaft broker: ``bootstrap`` is ``127.0.0.1:<port>``."""

    bootstrap: str
    log_dir: Path
    process: subprocess.Popen[bytes]
    owns_dir: bool = True
    _log: IO[bytes] | None = field(default=None, repr=False)

    @classmethod
    def start(cls, log_dir: Path | None = None, timeout_s: float = 180.0, partitions: int = 3,
              die_with_parent: bool = False) -> LocalKafka:
        """Format a fresh KRaft storage in ``log_dir`` (a new temporary folder by default) and
        start the broker; returns once it accepts connections on its client port.
        ``partitions`` is the default partition count of auto-created topics.
        ``die_with_parent`` (Linux; call it before other threads start, e.g. from a command
        before Spark) has the kernel SIGTERM the broker when this process ends however it
        ends, even by SIGKILL. Raises :class:`KafkaBrokerError`."""
        ok, why = broker_available()
        if not ok:
            raise KafkaBrokerError(why)
        owns = log_dir is None
        root: Path | None = None
        try:
            with _interrupts_held():  # a Ctrl-C between mkdtemp and its name being kept would leave the folder
                root = Path(tempfile.mkdtemp(prefix="streamwatch-kafka-")) if log_dir is None else Path(log_dir)
            return cls._launch(root, owns, timeout_s, partitions, die_with_parent)
        except BaseException:  # failed or interrupted (Ctrl-C, SIGTERM): no folder left behind
            if owns and root is not None:
                shutil.rmtree(root, ignore_errors=True)
            raise

    @classmethod
    def _launch(cls, root: Path, owns: bool, timeout_s: float, partitions: int,
                die_with_parent: bool) -> LocalKafka:
        root.mkdir(parents=True, exist_ok=True)
        port, cport = _free_port(), _free_port()
        props = _write_config(root, port, cport, partitions)
        java = ["java", "-Xmx512m", "-XX:+UseSerialGC", f"-Dlog4j.configuration=file:{root / 'log4j.properties'}",
                "-cp", str(jars_root() / BROKER_SET / "*")]
        with ExitStack() as on_failure:
            log = on_failure.enter_context(open(root / "broker.log", "ab"))
            _format_storage(java, props, log, timeout_s)
            broker = cls._start_broker([*java, "kafka.Kafka", str(props)], log, root, port, owns, timeout_s,
                                       die_with_parent)
            on_failure.pop_all()  # the broker keeps its log open: LocalKafka.stop closes it
        return broker

    @classmethod
    def _start_broker(cls, argv: list[str], log: IO[bytes], root: Path, port: int, owns: bool, timeout_s: float,
                      die_with_parent: bool) -> LocalKafka:
        """Start the broker process (``argv``, output to ``log``) and wait up to ``timeout_s``
        s until it accepts connections on ``port``; a broker that exits or stays silent is
        stopped and :class:`KafkaBrokerError` raised."""
        broker: LocalKafka | None = None
        try:
            with _interrupts_held():
                proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=_parent_death_signal() if die_with_parent else None)
                broker = cls(f"127.0.0.1:{port}", root, proc, owns, log)
            deadline = time.monotonic() + timeout_s
            while not _accepts(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise KafkaBrokerError(
                        f"Kafka broker did not start on 127.0.0.1:{port}: {_tail(root / 'broker.log')}")
                time.sleep(0.1)
        except BaseException:  # also Ctrl-C / SIGTERM while waiting: never leave a broker behind
            if broker is not None:
                broker.stop()
            raise
        return broker

    def stop(self, grace_s: float = 20.0) -> None:
        """Stop the broker (SIGTERM, SIGKILL after ``grace_s`` s) and remove a temporary log
        folder. Idempotent; never raises."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.owns_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)

    def __enter__(self) -> LocalKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _write_config(root: Path, port: int, cport: int, partitions: int) -> Path:
    """Write the broker's ``server.properties`` (KRaft, broker and controller on loopback
    ``port``/``cport``, data under ``root/data``) and ``log4j.properties`` into ``root``;
    returns the ``server.properties`` path."""
    props = root / "server.properties"
    props.write_text("\n".join([
        "process.roles=broker,controller", "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{cport}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER", "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={root / 'data'}", f"num.partitions={partitions}",
        "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0",
        "log.retention.check.interval.ms=1000", "auto.create.topics.enable=true", "",
    ]))
    (root / "log4j.properties").write_text(
        "log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
        "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
        "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
        "log4j.logger.kafka.server.KafkaServer=INFO\nlog4j.logger.kafka.server.BrokerServer=INFO\n")
    return props


def _format_storage(java: list[str], props: Path, log: IO[bytes], timeout_s: float) -> None:
    """Format the KRaft storage ``props`` names with a new cluster id (Kafka's
    ``StorageTool format``, output to ``log``); raises :class:`KafkaBrokerError` when it fails
    (quoting the log's last lines)."""
    fmt: subprocess.Popen[bytes] | None = None
    try:
        with _interrupts_held():
            fmt = subprocess.Popen([*java, "kafka.tools.StorageTool", "format", "-t", new_cluster_id(), "-c", str(props)],
                                   stdout=log, stderr=subprocess.STDOUT)
        fmt.wait(timeout_s)
        if fmt.returncode != 0:
            raise KafkaBrokerError(f"kafka storage format failed: {_tail(props.parent / 'broker.log')}")
    except BaseException:  # timeout, Ctrl-C, SIGTERM: the formatting JVM never outlives us
        if fmt is not None and fmt.poll() is None:
            fmt.kill()
            fmt.wait()
        raise


def _parent_death_signal() -> Callable[[], object] | None:
    """A ``preexec_fn`` asking Linux to SIGTERM the child when its parent ends
    (``prctl(PR_SET_PDEATHSIG)``); None elsewhere. libc is loaded here, in the parent, so the
    child only makes the system call."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except OSError:
        return None
    return lambda: prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG


def _tail(path: Path, n: int = 5) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(lines[-n:]) or "(empty log)"


__all__ = ["KafkaBrokerError", "LocalKafka", "broker_available"]
