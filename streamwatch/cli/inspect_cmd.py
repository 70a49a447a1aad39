"""``streamwatch inspect PATH``: read-only checkpoint inspector with health findings, no JVM."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from streamwatch.errors import ExitCode, Unreadable, UsageError

if TYPE_CHECKING:  # the readers are imported when the command runs, not for --help
    from rich.console import Console
    from rich.table import Table

    from streamwatch.checkpoint.features import RestartAnswer
    from streamwatch.model.checkpoint import Checkpoint
    from streamwatch.model.kafka import KafkaLag

EPILOG = """\b
Examples:
  streamwatch inspect ./streamwatch-workspace/checkpoints/flights/gold
  streamwatch inspect CP --batches            offsets / commit / state / sink per batch
  streamwatch inspect CP --batch 12           one batch: offsets, files read, state, sink
  streamwatch inspect CP --sink ./out/table   also read the sink's _spark_metadata or _delta_log
  streamwatch inspect s3://bucket/cp --json   fsspec URLs work too (needs s3fs)
  streamwatch inspect CP --check || alert     exit status by worst finding
  streamwatch inspect CP --sizes              also measure state bytes (a stat per state file)
  streamwatch inspect --recursive ./streamwatch-workspace/checkpoints --check
                                              every checkpoint under a folder, worst first
  streamwatch inspect CP --kafka-bootstrap 127.0.0.1:9092
                                              consumer lag per topic-partition (broker latest
                                              − last committed batch), also while the query is
                                              down; kafka-data-lost when retention deleted
                                              records the query had not read

\b
Exit codes:
  0  PATH was read (with --check: and nothing worse than info found)
  1  --check: warnings
  2  bad option (also --kafka-bootstrap on a checkpoint without a Kafka source, --batch N not in it)
  3  --check: errors
  4  PATH unreadable; the Kafka broker does not answer

With --recursive, --check exits with the worst status of all checkpoints found
(4 when one could not be read). Nothing under PATH is ever written.
"""


def _is_folder(path: str) -> bool:
    """Whether ``path`` (local or an fsspec URL) is an existing folder; False when unreadable."""
    from streamwatch.checkpoint.fs import open_storage

    try:
        storage, inner = open_storage(path)
        return storage.kind(inner) == "dir"
    except Exception:  # noqa: BLE001 - no table to show, the checkpoint is still read
        return False


def read_as_inspect(path: str, *, sink: str | None = None, full: bool = False, sizes: bool = False,
                    measure: bool = False, storage_options: dict[str, Any] | None = None) -> Checkpoint:
    """The checkpoint at ``path`` with every finding ``streamwatch inspect PATH`` shows: the
    sink from the workspace's pipeline definition when ``sink`` is None, the reader's findings,
    the state audit's (growth, skew, restart cost). The one reading both ``inspect PATH`` and
    ``inspect --recursive`` judge by. ``sizes`` is ``--sizes`` (state bytes measured, and the
    audit budgeted by bytes: 256 MiB); ``measure`` measures bytes for display only, judging as
    ``inspect`` without ``--sizes`` does (on a local disk: no bytes, the audit budgeted by
    file count: 5,000). Raises :class:`~streamwatch.checkpoint.CheckpointError`."""
    from dataclasses import replace

    from streamwatch.checkpoint import read_checkpoint
    from streamwatch.checkpoint.fs import LocalStorage, open_storage
    from streamwatch.state.audit_findings import with_audit_findings

    if sink is None:  # a workspace checkpoint: its table from the pipeline definition
        from streamwatch.pipeline import table_of_checkpoint

        table = table_of_checkpoint(path)
        sink = str(table) if table is not None and _is_folder(str(table)) else None
    cp = read_checkpoint(path, sink=sink, full=full, sizes=sizes or measure, storage_options=storage_options)
    judged = cp
    if measure and not sizes and any(op.bytes is not None for op in cp.state) \
            and isinstance(open_storage(path, storage_options)[0], LocalStorage):
        # bytes read for display only: without --sizes inspect has none on a local disk, so
        # its audit budgets by file count; the audit sees what inspect's would
        judged = replace(cp, state=tuple(replace(op, bytes=None) for op in cp.state))
    audited = with_audit_findings(judged, path, storage_options)  # state growth / skew / restart-cost findings
    return cp if audited is judged else replace(cp, findings=audited.findings)


def _fleet(root: str, as_json: bool, check: bool) -> None:
    """``--recursive``: every checkpoint under ROOT, one row each, worst first."""
    from streamwatch.checkpoint.fleet import read_fleet

    if not as_json and sys.stderr.isatty():
        click.echo(f"streamwatch inspect: searching {root} for checkpoints…", err=True)
    # each checkpoint judged by inspect's own reading (state bytes measured for the column);
    # CheckpointError: exit 4
    rows = read_fleet(root, read=lambda url: read_as_inspect(url, measure=True))
    if as_json:
        import orjson

        from streamwatch.checkpoint.jsonout import fleet_doc

        sys.stdout.buffer.write(orjson.dumps(fleet_doc(root, rows), option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.flush()
    else:
        from rich.console import Console

        from streamwatch.checkpoint.report import fleet_table

        Console(soft_wrap=False).print(fleet_table(root, rows))
    if check:
        worst = max((r.rank for r in rows), default=-1)
        sys.exit({3: ExitCode.UNREADABLE, 2: ExitCode.ERRORS, 1: ExitCode.WARNINGS}.get(worst, ExitCode.OK))


@click.command(epilog=EPILOG)
@click.argument("path", type=str)
@click.option("--batch", "batch_id", type=int, default=None, metavar="N", help="Show batch N in detail.")
@click.option("--batches", is_flag=True, help="Timeline: offsets N / commit N / state version N+1 / sink entry N.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (schema streamwatch.inspect/1, see docs/inspect.md).")
@click.option("--check", is_flag=True, help="Exit status by worst finding: 0 ok, 1 warnings, 3 errors, 4 unreadable.")
@click.option("--sink", type=str, default=None, metavar="DIR", help="The sink's output folder (file sink or Delta table); discovered in a streamwatch workspace.")
@click.option("--recursive", "-r", is_flag=True, help="PATH is a ROOT: one row per checkpoint found under it, worst first.")
@click.option("--sizes", is_flag=True, help="Measure state store bytes on a local disk (one stat per file; object storage listings give them anyway).")
@click.option("--kafka-bootstrap", default=None, metavar="HOST:PORT",
              help="Ask this Kafka broker for its offsets: consumer lag per topic-partition of the checkpoint's Kafka source.")
@click.option("--spark", "spark_version", default=None, metavar="X.Y",
              help="What moving the query to Spark X.Y means for this checkpoint: can it restart, and what stops it.")
def inspect(path: str, batch_id: int | None, batches: bool, as_json: bool, check: bool, sink: str | None, recursive: bool,
            sizes: bool, kafka_bootstrap: str | None, spark_version: str | None) -> None:
    """Summarise the checkpoint at PATH without starting Spark (read-only).

    Shows the query id, batches (first, latest, last committed, in flight), the
    watermark, each source's latest offset and file log, the sink, the state
    operators and health findings (in-flight batch, gaps between offsets and
    commits, conf drift, missing or orphan state versions, unknown log versions,
    truncated files, stray files…). PATH may be a local folder or an fsspec URL.
    """
    if batches and batch_id is not None:
        raise UsageError("use --batch N or --batches, not both")
    target = _target(spark_version)
    if recursive:
        if batches or batch_id is not None or sink or kafka_bootstrap or spark_version:
            raise UsageError("--recursive shows one row per checkpoint; --batch/--batches/--sink/--kafka-bootstrap/--spark need one PATH")
        _fleet(path, as_json, check)
        return
    cp = _read_one(path, sink, full=batches or batch_id is not None, sizes=sizes)
    lags = None
    if kafka_bootstrap:
        cp, lags = _with_kafka_lag(cp, path, kafka_bootstrap)
    if batch_id is not None and batch_id not in set(cp.offset_batch_ids) | set(cp.commit_batch_ids):
        known = f"{cp.offset_batch_ids[0]}–{cp.latest_batch_id}" if cp.offset_batch_ids else "none"
        raise UsageError(f"batch {batch_id} is not in this checkpoint (offsets hold {known})")
    view = _View(batches, batch_id, target, lags)
    if as_json:
        _print_json(cp, view)
    else:
        _print_text(cp, view)
    if check:
        from streamwatch.model.findings import worst_severity

        worst = worst_severity(cp.findings)
        sys.exit(ExitCode.ERRORS if worst == "error" else ExitCode.WARNINGS if worst == "warning" else ExitCode.OK)


def _target(spark_version: str | None) -> tuple[int, int] | None:
    """``--spark X.Y`` as a Spark line (major, minor); raises :class:`UsageError` when malformed."""
    if spark_version is None:
        return None
    from streamwatch.checkpoint import features

    try:
        return features.parse_line(spark_version)
    except ValueError as e:
        raise UsageError(f"--spark {e}") from None


def _read_one(path: str, sink: str | None, full: bool, sizes: bool) -> Checkpoint:
    """:func:`read_as_inspect` of one PATH: a :class:`~streamwatch.checkpoint.CheckpointError`
    as it is, any other failure as :class:`Unreadable` (exit 4, one line)."""
    from streamwatch.checkpoint import CheckpointError

    try:
        return read_as_inspect(path, sink=sink, full=full, sizes=sizes)
    except CheckpointError:
        raise  # its own one line, exit 4
    except Exception as e:  # noqa: BLE001 - never a traceback for a user's path
        raise Unreadable(f"{path}: unreadable ({type(e).__name__}: {e})") from None


@dataclass(frozen=True)
class _View:
    """What one checkpoint's report shows: the ``batches`` timeline, one ``batch_id`` in
    detail, else the summary with the restart answer for the ``target`` Spark line; the
    Kafka ``lags`` when the broker was asked."""

    batches: bool
    batch_id: int | None
    target: tuple[int, int] | None
    lags: KafkaLag | None


def _print_json(cp: Checkpoint, view: _View) -> None:
    """The ``streamwatch.inspect/1`` document of ``view`` on stdout."""
    import orjson

    from streamwatch.checkpoint import batch_timeline, features, jsonout

    if view.batches:
        doc = jsonout.timeline_doc(cp, batch_timeline(cp))
    elif view.batch_id is not None:
        doc = jsonout.batch_doc(cp, view.batch_id)
    else:
        doc = jsonout.summary_doc(cp)
        doc["formats"] = _formats_doc(features.answer(cp), view.target)
    if view.lags is not None:
        doc["kafkaLag"] = _lag_doc(view.lags)
    sys.stdout.buffer.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
    sys.stdout.flush()


def _print_text(cp: Checkpoint, view: _View) -> None:
    """The tables of ``view`` on stdout."""
    from rich.console import Console

    from streamwatch.checkpoint import batch_timeline, features, jsonout, report

    out = Console(soft_wrap=False)
    if view.batches:
        out.print(report.timeline(batch_timeline(cp)))
        out.print(report.findings_table(cp))
    elif view.batch_id is not None:
        out.print(report.batch(jsonout.batch_doc(cp, view.batch_id)))
    else:
        out.print(report.summary(cp))
        _print_formats(out, features.answer(cp), view.target)
    if view.lags is not None:
        out.print(_lag_table(view.lags))


def _formats_doc(a: RestartAnswer, target: tuple[int, int] | None) -> dict[str, Any]:
    """``formats`` of inspect --json: the features, the Spark lines that can restart, and with
    ``--spark`` the answer for that line."""
    from streamwatch.checkpoint.features import line_text

    doc: dict[str, Any] = {
        "features": [{"name": f.name, "value": f.value, "needsSpark": line_text(f.needs), "evidence": f.evidence}
                     for f in a.features],
        "needsSpark": line_text(a.needs),
        "restartableBy": [line_text(x) for x in a.can],
        "notRestartableBy": {line_text(x): [f.name for f in fs] for x, fs in a.cannot},
    }
    if target is not None:
        doc["target"] = {"spark": line_text(target), "canRestart": target in a.can}
    if a.blocked_by is not None:
        doc["blockedBy"] = a.blocked_by
    return doc


def _print_formats(out: Console, a: RestartAnswer, target: tuple[int, int] | None) -> None:
    from rich.text import Text

    from streamwatch.checkpoint.features import formats_text, move_text, restart_text

    out.print(Text.assemble(("formats            ", "bold"), formats_text(a)))
    out.print(Text.assemble(("restartable by     ", "bold"), restart_text(a)))
    if target is not None:
        for line in move_text(a, target):
            out.print(Text(line))


def _with_kafka_lag(cp: Checkpoint, path: str, bootstrap: str) -> tuple[Checkpoint, KafkaLag]:
    """``cp`` with ``kafka-data-lost`` findings, and the lag per partition
    (:class:`~streamwatch.model.kafka.KafkaLag`, with each behind partition's oldest unread
    record's broker timestamp). Raises :class:`UsageError` (exit 2) when the checkpoint has no
    committed batch of a Kafka source, :class:`Unreadable` (exit 4) when the broker does not
    answer."""
    import time
    from dataclasses import replace

    from streamwatch.errors import one_line
    from streamwatch.model.kafka import KafkaLag
    from streamwatch.spark.kafka_lag import broker_lag, checkpoint_kafka_offsets, data_lost_findings

    committed = checkpoint_kafka_offsets(path, cp)
    if not committed:
        raise UsageError(f"{path}: no committed batch of a Kafka source (--kafka-bootstrap)")
    try:
        lags = broker_lag(committed, bootstrap, timeout_s=15.0)
    except Exception as e:  # noqa: BLE001 - KafkaException: one line, never a traceback
        raise Unreadable(f"Kafka broker {bootstrap} did not answer: {one_line(e)}") from None
    lag = KafkaLag(cp.query_id or "", bootstrap, tuple(lags), int(time.time() * 1000))
    return replace(cp, findings=(*cp.findings, *data_lost_findings(lags, path))), lag


def _seconds_behind(at_ms: int, oldest_ms: int | None) -> float | None:
    return None if oldest_ms is None else max(0.0, (at_ms - oldest_ms) / 1000)


def _lag_doc(lag: KafkaLag) -> dict[str, Any]:
    return {"bootstrap": lag.bootstrap, "total": lag.total, "atMs": lag.at_ms, "lagSeconds": lag.lag_s,
            "partitions": [{"topic": x.topic, "partition": x.partition, "committed": x.committed,
                            "earliest": x.earliest, "latest": x.latest, "lag": x.lag, "dataLost": x.data_lost,
                            "oldestUnreadMs": x.oldest_unread_ms,
                            "lagSeconds": 0.0 if x.lag == 0 else _seconds_behind(lag.at_ms, x.oldest_unread_ms)}
                           for x in lag.partitions]}


def _lag_table(lag: KafkaLag) -> Table:
    from rich.table import Table

    from streamwatch.analysis import fmt

    behind = "unknown" if lag.lag_s is None else fmt.duration(int(lag.lag_s * 1000))
    t = Table(title=f"Kafka consumer lag (broker {lag.bootstrap}: latest − last committed batch; {behind} behind)",
              title_justify="left")
    for col in ("topic", "partition", "committed", "earliest", "latest", "lag", "behind"):
        t.add_column(col, justify="left" if col == "topic" else "right")
    for x in lag.partitions:
        secs = 0.0 if x.lag == 0 else _seconds_behind(lag.at_ms, x.oldest_unread_ms)
        t.add_row(x.topic, str(x.partition), fmt.count(x.committed), f"{x.earliest:,}", f"{x.latest:,}",
                  fmt.count(x.lag) + (" DATA LOST" if x.data_lost else ""),
                  "unknown" if secs is None else fmt.duration(int(secs * 1000)))
    return t
