"""``streamwatch advise PATH``: tuning advice measured on a query's own checkpoint (and, with
``--recording``, its progress events), one finding per rule (no JVM)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from streamwatch.cli.stores_help import OBJECT_STORES
from streamwatch.errors import Unreadable

if TYPE_CHECKING:
    from streamwatch.model.events import QueryProgress

EPILOG = """\b
Examples:
  streamwatch advise ./streamwatch-workspace/checkpoints/events/windows
  streamwatch advise CP --recording events.jsonl     batch times from the listener's progress
  streamwatch advise CP --cores 16 --json            a cluster's cores, machine-readable
  streamwatch advise CP --bootstrap localhost:9092   a Kafka source's backlog on its broker
  streamwatch advise CP --trigger 5s --recording events.jsonl
                                                     judge the trigger interval the query runs with
\b
Confidence: measured (every number read off this job), likely (verdict holds, cost not
measured here, or a setting not in the checkpoint inferred from what the batches did),
unknown (evidence missing: the finding says what it needs).
\b
Exit codes:
  0  no rule advises a change (each keeps the setting or lacks evidence)
  1  a rule advises a change
  2  bad option (a --trigger outside the trigger grammar included)
  4  PATH is unreadable or not a checkpoint, or --recording is missing or unreadable
""" + OBJECT_STORES

OK, CHANGE = 0, 1


@click.command("advise", epilog=EPILOG)
@click.argument("path")
@click.option("--recording", default=None, metavar="FILE",
              help="A streamwatch recording or Spark event log of the same query: batch times "
                   "(durationMs.triggerExecution) and state operators from its progress events.")
@click.option("--cores", type=click.IntRange(min=1), default=None,
              help="Cores that run the query's tasks [default: os.cpu_count() of this machine].")
@click.option("--trigger", "trigger_spec", default=None, metavar="SPEC",
              help="The trigger the query runs with (neither the checkpoint nor the listener's events "
                   "record it): 5s, processingTime=500ms, default, availableNow … Without it the "
                   "trigger rule says unknown.")
@click.option("--bootstrap", default=None, metavar="HOST:PORT",
              help="The Kafka broker a Kafka source reads: its backlog (latest offsets) for "
                   "advise-max-offsets-per-trigger. Without it that rule's backlog verdict is unknown.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: the checkpoint and a list of findings.")
def advise(path: str, recording: str | None, cores: int | None, trigger_spec: str | None, bootstrap: str | None,
           as_json: bool) -> None:
    """Tuning advice for the streaming query whose checkpoint is PATH (local or an fsspec
    URL), measured on the query itself: per rule the setting, the evidence (numbers with
    units and where each was read), what to change and its expected effect, and how sure
    the finding is. Batch times come from the checkpoint (commits/N modification time minus
    offsets/N batchTimestampMs) or, with --recording, from Spark's progress events.
    Rules: advise-shuffle-partitions (state partitions vs cores), advise-max-files-per-trigger
    (a file source's files per batch from its log, and its backlog: the source's folder is
    listed), advise-file-source-cleanup (read files left in a file source's folder: cleanSource),
    advise-trigger-interval (batches longer than the --trigger interval, or a tiny interval
    polling an idle source), advise-state-store (RocksDB changelog checkpointing; the HDFS-backed
    store's memory), advise-watermark-delay (the withWatermark delay vs the lateness the
    recording's batches show; needs --recording), advise-max-offsets-per-trigger (a Kafka
    source's records per batch from the offsets log, and with --bootstrap its backlog on the
    broker), advise-real-time-mode (a stateless Kafka query in micro-batches: real-time mode),
    advise-min-batches-to-retain (batches and bytes the checkpoint keeps).
    Reads only (the broker only with --bootstrap); no Spark.
    """
    from streamwatch.analysis.advice import Cores
    from streamwatch.analysis.advise_run import advise_checkpoint
    from streamwatch.analysis.triggers import TriggerError, parse_trigger
    from streamwatch.checkpoint import CheckpointError, read_checkpoint

    try:
        trigger = parse_trigger(trigger_spec) if trigger_spec is not None else None
    except TriggerError as e:
        raise TriggerError(f"--trigger: {e}") from None
    try:
        cp = read_checkpoint(path, sizes=False)
    except CheckpointError as e:
        raise Unreadable(str(e)) from None
    progress, idle = _progress(recording, cp.query_id) if recording is not None else ((), None)
    have = Cores(cores, "--cores") if cores is not None else Cores(os.cpu_count(), "os.cpu_count() on this machine")
    backlogs = None
    if bootstrap is not None:
        from streamwatch.analysis.advice_offsets import read_kafka_batches
        from streamwatch.spark.kafka_backlog import kafka_backlogs

        backlogs = kafka_backlogs(bootstrap, read_kafka_batches(path, cp))
    found = advise_checkpoint(path, cp, trigger, have, progress, idle, kafka_backlogs=backlogs)
    if as_json:
        import orjson

        doc = {"checkpoint": path, "queryId": cp.query_id, "findings": [a.to_dict() for a in found]}
        click.echo(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    else:
        for a in found:
            click.echo(f"{a.code}  [{a.verdict.value}, {a.confidence.value}]  {a.setting}")
            click.echo(f"  {a.summary}")
            for ev in a.evidence:
                click.echo(f"  evidence: {ev.text}")
            for label, text in (("do", a.action), ("effect", a.effect), ("needs", a.needs)):
                if text:
                    click.echo(f"  {label}: {text}")
    sys.exit(CHANGE if any(a.verdict.value == "change" for a in found) else OK)


def _progress(recording: str, query_id: str | None) -> tuple[tuple[QueryProgress, ...], int]:
    """The progress events of ``query_id`` in ``recording`` (every query's when the
    checkpoint has no id), in file order, and how many ``QueryIdleEvent``s it has (triggers
    that found no data). Raises :class:`Unreadable` for a missing or unreadable recording."""
    from streamwatch.events.reader import EventSourceError, ReadReport, read_events
    from streamwatch.model.events import QueryIdle, QueryProgress

    report = ReadReport()
    try:
        read = [e for e in read_events(recording, report) if isinstance(e, QueryProgress | QueryIdle)]
    except EventSourceError as e:
        raise Unreadable(f"--recording: {e}") from None
    if report.bad_lines:
        click.echo(f"streamwatch advise: --recording: skipped {report.bad_lines} unreadable lines "
                   f"(first: {report.problems[0]})", err=True)
    events = [e for e in read if isinstance(e, QueryProgress)]
    mine = tuple(e for e in events if query_id is None or e.id == query_id)
    if events and not mine:
        click.echo(f"streamwatch advise: --recording holds no progress of query {query_id}: not used", err=True)
    idle = sum(1 for e in read if isinstance(e, QueryIdle) and (query_id is None or e.id == query_id))
    return mine, idle
