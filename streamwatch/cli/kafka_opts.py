"""The Kafka broker of ``streamwatch run``/``log`` for a pipeline that reads Kafka (clicks):
``--kafka-bootstrap HOST:PORT``, or a single-node broker of its own (temporary log folder,
stopped however the command ends: normal exit, Ctrl-C, SIGTERM; the kernel ends it too if
streamwatch is killed). No pyspark, no textual."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import click

from streamwatch.errors import ExitCode, StreamwatchError
from streamwatch.pipeline import KAFKA_BOOTSTRAP_FILE, Pipeline, Workspace

KAFKA_OPTION = click.option(
    "--kafka-bootstrap", default=None, metavar="HOST:PORT", envvar="STREAMWATCH_KAFKA_BOOTSTRAP", show_envvar=True,
    help="Kafka broker of a pipeline that reads Kafka (clicks). Default: start a single-node broker "
         "on 127.0.0.1 for the run (from `streamwatch jars --set kafka-broker`), stopped on exit.")


class KafkaUnavailable(StreamwatchError):
    """The pipeline reads Kafka but Spark's Kafka connector jars are not resolved, or no
    broker was given and none can be started (broker jars, java, or the start failed)."""

    exit_code = ExitCode.ERRORS


def kafka_connector_missing() -> str | None:
    """Why Spark's Kafka source cannot load (one line), or None when its jars are resolved."""
    from streamwatch.spark.tableformat import NO_JARS_HINT, SPARK_SET, jars_root, resolved_jars

    if any(j.artifact.startswith("spark-sql-kafka") for j in resolved_jars(SPARK_SET)):
        return None
    return f"Spark's Kafka connector jars are not in {jars_root() / SPARK_SET} ({NO_JARS_HINT})"


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _record(pipeline: Pipeline, ws: Workspace, bootstrap: str) -> list[Path]:
    """Writes ``bootstrap`` to ``.kafka-bootstrap`` in each landing folder of ``pipeline``; the files."""
    written = []
    for source in pipeline.sources:
        folder = ws.landing(pipeline.name, source.name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / KAFKA_BOOTSTRAP_FILE).write_text(bootstrap + "\n")
        written.append(folder / KAFKA_BOOTSTRAP_FILE)
    return written


def _unrecord(files: list[Path], bootstrap: str) -> None:
    """Removes the files :func:`_record` wrote that still name ``bootstrap``."""
    for f in files:
        with suppress(OSError):
            if f.read_text().strip() == bootstrap:  # not replaced by a later run
                f.unlink()


@contextmanager
def kafka_for(pipeline: Pipeline, ws: Workspace, bootstrap: str | None,
              say: Callable[[str], None]) -> Iterator[dict[str, Any]]:
    """Yields the pipeline options that name its broker (``{"kafka_bootstrap": HOST:PORT}``;
    ``{}`` for a pipeline that does not read Kafka). Without ``bootstrap`` starts a
    :class:`~streamwatch.spark.kafka_broker.LocalKafka` and stops it on leaving, also on
    ``KeyboardInterrupt`` — SIGTERM is turned into one while the broker runs, unless the
    process already handles SIGTERM. While running, the address is written to
    ``.kafka-bootstrap`` in the pipeline's landing folders (``streamwatch land`` reads it).
    Raises :class:`KafkaUnavailable` (one line)."""
    if not pipeline.reads_kafka:
        yield {}
        return
    missing = kafka_connector_missing()
    if missing:
        raise KafkaUnavailable(f"pipeline {pipeline.name!r} reads Kafka: {missing}")
    if bootstrap:
        files = _record(pipeline, ws, bootstrap)
        try:
            yield {"kafka_bootstrap": bootstrap}
        finally:
            _unrecord(files, bootstrap)
        return
    from streamwatch.spark.kafka_broker import KafkaBrokerError, LocalKafka, broker_available

    ok, why = broker_available()
    if not ok:
        raise KafkaUnavailable(f"pipeline {pipeline.name!r} needs a Kafka broker: {why}; "
                               "or pass --kafka-bootstrap HOST:PORT")
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    if main and previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _interrupt)
    try:
        say("starting a single-node Kafka broker (KRaft) on 127.0.0.1 …")
        try:
            broker = LocalKafka.start(die_with_parent=main)
        except KafkaBrokerError as e:
            raise KafkaUnavailable(f"the Kafka broker did not start: {e}") from None
        try:
            files = _record(pipeline, ws, broker.bootstrap)
            say(f"Kafka broker on {broker.bootstrap} (log dir {broker.log_dir}, removed on exit)")
            try:
                yield {"kafka_bootstrap": broker.bootstrap}
            finally:
                _unrecord(files, broker.bootstrap)
        finally:
            broker.stop()
            say(f"Kafka broker on {broker.bootstrap} stopped")
    finally:
        if main and previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, previous or signal.SIG_DFL)
